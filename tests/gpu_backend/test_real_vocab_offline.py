"""A real in-process vLLM (CPU build) serving a model with the REAL Qwen2.5 vocabulary and
chat template: its prompt ids for chats and text equal cachecast's tokenization, and a log
of chat requests replayed after a cache reset hits exactly as the simulator predicts, with
cached requests starting faster. One engine serves the whole module."""

from __future__ import annotations

import copy
import statistics
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from cachecast.gpu_backend.chat_replay import measure_chat_records
from cachecast.gpu_backend.offline import OfflineBackend
from cachecast.gpu_backend.report import MeasurementReport
from cachecast.gpu_backend.types import ReplayOptions
from cachecast.tokenizers import read_records
from cachecast.usecases.measure import MeasureReport
from tests.gpu_backend.real_vocab import (
    AGREEMENT_CHATS,
    QWEN_BLOCK_BYTES,
    QWEN_BLOCK_SIZE,
    QWEN_MAX_MODEL_LEN,
    QWEN_MODEL,
    QWEN_NUM_BLOCKS,
    TEXT_PROMPTS,
    shared_prefix_log,
    vllm_hit_rule,
)

pytestmark = [pytest.mark.vllm, pytest.mark.slow]  # building the model and engine: ~50 s


@pytest.fixture(scope="module")
def backend(vllm_environment: Path, qwen_model_dir: Path) -> Iterator[OfflineBackend]:
    engine = OfflineBackend.create(
        str(qwen_model_dir),
        block_size=QWEN_BLOCK_SIZE,
        kv_cache_bytes=QWEN_NUM_BLOCKS * QWEN_BLOCK_BYTES,
        max_model_len=QWEN_MAX_MODEL_LEN,
        dtype="bfloat16",
        enforce_eager=True,
        skip_tokenizer_init=False,  # the engine tokenizes chats and text itself here
    )
    yield engine
    del engine


def ours(body: dict[str, Any]) -> list[int]:
    (request,) = read_records([{"model": QWEN_MODEL, "request": body}], "agreement", strict=True)
    assert request.tokens is not None and request.exact
    return list(request.tokens)


@pytest.mark.parametrize(("name", "body"), AGREEMENT_CHATS, ids=[n for n, _ in AGREEMENT_CHATS])
def test_engine_chat_prompt_equals_cachecast_tokenization(
    backend: OfflineBackend, name: str, body: dict[str, Any]
) -> None:
    from vllm import SamplingParams

    params = SamplingParams(max_tokens=1, temperature=0.0)
    # A deep copy: vLLM parses tool-call arguments in the messages it is given, in place.
    messages, tools = copy.deepcopy(body["messages"]), copy.deepcopy(body.get("tools"))
    (output,) = backend.llm.chat(messages, params, tools=tools, use_tqdm=False)
    assert list(output.prompt_token_ids) == ours(body)


@pytest.mark.parametrize("text", TEXT_PROMPTS)
def test_engine_text_prompt_equals_cachecast_tokenization(
    backend: OfflineBackend, text: str
) -> None:
    from vllm import SamplingParams

    (output,) = backend.llm.generate(
        [text], SamplingParams(max_tokens=1, temperature=0.0), use_tqdm=False
    )
    assert list(output.prompt_token_ids) == ours({"prompt": text})


@pytest.fixture(scope="module")
def chat_report(backend: OfflineBackend) -> MeasurementReport:
    return measure_chat_records(
        shared_prefix_log(),
        backend,
        model=QWEN_MODEL,
        options=ReplayOptions(warmup_requests=2),
        source="shared-prefix-log",
    )


def test_chat_log_replay_hits_equal_prediction(chat_report: MeasurementReport) -> None:
    report = chat_report
    assert report.cache_isolation == "reset"
    prompts = [
        list(r.tokens or ())
        for r in read_records(shared_prefix_log(), "log", model=QWEN_MODEL, strict=True)
    ]
    expected = vllm_hit_rule(prompts, QWEN_BLOCK_SIZE)
    measured = [r.measured_cached_tokens for r in report.requests]
    assert measured == expected
    assert [r.predicted_cached_tokens for r in report.requests] == expected
    # Shape of the log: the first coding call and the three one-off calls are cold, every
    # later coding call reads at least the shared system prompt and tools.
    cold = [0, 2, 5, 8]
    assert [i for i, hit in enumerate(measured) if hit == 0] == cold
    assert min(hit for i, hit in enumerate(measured) if i not in cold) >= 1000
    assert report.counters_agree


def test_chat_log_replay_warm_requests_start_faster(chat_report: MeasurementReport) -> None:
    report = chat_report
    cold = [r.ttft_s for r in report.requests if r.warm is False]
    warm = [r.ttft_s for r in report.requests if r.warm is True]
    assert (len(cold), len(warm)) == (4, 8)
    assert statistics.median(warm) < statistics.median(cold)
    summary = MeasureReport.of(report).model_dump(mode="json")
    assert summary["ttft"]["count"] == 12
    assert summary["ttft_warm"]["p50_s"] < summary["ttft_cold"]["p50_s"]
    assert summary["ttft"]["p50_s"] <= summary["ttft"]["p95_s"]


EXAMPLE_LOG = Path(__file__).resolve().parents[2] / "examples" / "faulty-agent-log.jsonl"


def test_faulty_example_and_its_top_suggestion_measure_as_simulated(
    backend: OfflineBackend, tmp_path: Path
) -> None:
    """The example log's faults (timestamp on top, shuffled tools) and suggest's top change,
    each replayed after a reset, twice in alternation: the engine's cached tokens equal the
    simulated ones request by request and in total, and the change lowers the median TTFT
    (pooled over both rounds, so that a burst of load on the host hits both sides)."""
    import json
    from decimal import Decimal

    from cachecast.layouts.changes import candidate_changes
    from cachecast.layouts.volatile import analyze
    from cachecast.passes.prompt_sets import PromptSource, load_prompt_set
    from cachecast.usecases.suggest import SuggestRequest, suggest

    source = PromptSource(path=EXAMPLE_LOG)
    report = suggest(SuggestRequest(source=source, targets=["vllm:32"], at=date(2026, 12, 2)), None)
    (top, *_) = report.suggestions
    simulated = top.targets[0]
    # The top suggestion's records: its changes applied to the log in order, as suggest
    # applies them (the top one combines two).
    prompt_set = load_prompt_set(source, "input", model=None)
    changes = {
        c.kind: c for c in candidate_changes(analyze(prompt_set.records), explicit_targets=[])
    }
    fixed = list(prompt_set.records)
    for kind in top.components:
        fixed = changes[kind].transform(fixed)
    logs = {
        "faulty": json.loads(json.dumps(list(prompt_set.records))),
        "fixed": json.loads(json.dumps(fixed)),
    }
    expected = {
        name: vllm_hit_rule(
            [list(r.tokens or ()) for r in read_records(records, name, model=QWEN_MODEL)],
            QWEN_BLOCK_SIZE,
        )
        for name, records in logs.items()
    }
    ttft: dict[str, list[float]] = {"faulty": [], "fixed": []}
    for _ in range(2):
        for name, records in logs.items():
            report = measure_chat_records(
                records, backend, model=QWEN_MODEL, options=ReplayOptions(warmup_requests=1)
            )
            measured = [r.measured_cached_tokens for r in report.requests]
            assert measured == expected[name]
            assert measured == [r.predicted_cached_tokens for r in report.requests]
            rate = simulated.hit_rate_before if name == "faulty" else simulated.hit_rate_after
            measured_rate = Decimal(report.measured_cached_tokens) / report.prompt_tokens
            assert measured_rate.quantize(Decimal("0.000001")) == rate
            ttft[name].extend(r.ttft_s for r in report.requests)
    # The timestamp leaves no block shared (every request differs within its first 32
    # tokens); the top change makes the stable system prompt a shared prefix.
    assert simulated.hit_rate_before == 0 < simulated.hit_rate_after
    assert statistics.median(ttft["fixed"]) < statistics.median(ttft["faulty"])
