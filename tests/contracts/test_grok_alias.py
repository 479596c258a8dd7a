"""xAI's bare model names: a request for ``grok-4-fast`` runs ``grok-4-fast-reasoning`` (xAI's
model pages list the bare name among the reasoning model's aliases; the response names the
model served), so it is priced as that model, and the ``-fast`` in the model's own name is
not Anthropic's fast mode (docs/contracts.md, "Keys and aliases")."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

from cachecast.contracts import ContractStore
from cachecast.contracts.rules import fallback_names
from cachecast.contracts.served import served_contract
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileRequest, reconcile

DAY = dt.date(2025, 9, 26)


def test_a_bare_grok_name_falls_back_to_its_reasoning_model() -> None:
    assert fallback_names("grok-4-fast") == ("grok-4-fast-reasoning",)
    assert fallback_names("grok-4-fast-reasoning") == ()
    assert fallback_names("grok-4-fast-non-reasoning") == ()
    assert fallback_names("grok-4-fast-reasoning-latest") == ()


def test_a_gateway_dotted_grok_version_falls_back_to_xais_dashed_id(migrated_db_url: str) -> None:
    # OpenRouter writes x-ai/grok-4.1-fast; xAI's id is grok-4-1-fast-reasoning (with dashes),
    # while xAI's own grok-4.20 keeps its dot (stored as written).
    assert fallback_names("grok-4.1-fast") == (
        "grok-4.1-fast-reasoning",
        "grok-4-1-fast",
        "grok-4-1-fast-reasoning",
    )
    store = ContractStore(migrated_db_url)
    day = dt.date(2026, 4, 27)
    assert store.as_of("xai", "grok-4.1-fast", day).model == "grok-4-1-fast-reasoning"
    assert store.as_of("xai", "grok-4.20", dt.date(2026, 12, 4)).model == "grok-4.20"


def test_grok_4_fast_is_not_fast_mode(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    served = served_contract(store, "xai", "grok-4-fast", DAY, dt.date(2026, 12, 4))
    assert served.terms.model == "grok-4-fast-reasoning"
    # genai-prices' grok-4-fast-reasoning: $0.20 input, $0.50 output, reads $0.05 (0.25x).
    assert (served.terms.input_per_mtok, served.terms.output_per_mtok) == (
        Decimal("0.2"),
        Decimal("0.5"),
    )
    assert served.terms.read_multiplier == Decimal("0.25")


def chunk(created: int, extra: str) -> str:
    head = '{"id":"x1","object":"chat.completion.chunk","created":'
    return f'      data: {head}{created},"model":"grok-4-fast-reasoning",{extra}}}\n\n'


def test_a_go_vcr_xai_stream_for_grok_4_fast_is_priced(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # go-vcr v2, as fantasy records xAI: the body asks for grok-4-fast, the stream's chunks
    # name grok-4-fast-reasoning and the last one carries the usage (2025-09-26).
    body = {
        "messages": [{"role": "user", "content": "Add 2 and 3"}],
        "model": "grok-4-fast",
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    usage = {
        "prompt_tokens": 394,
        "completion_tokens": 68,
        "total_tokens": 594,
        "prompt_tokens_details": {"text_tokens": 394, "cached_tokens": 364},
        "completion_tokens_details": {"reasoning_tokens": 132},
    }
    stream = (
        chunk(1758884714, '"choices":[{"index":0,"delta":{"role":"assistant"}}]')
        + chunk(1758884715, '"choices":[],"usage":' + json.dumps(usage, separators=(",", ":")))
        + "      data: [DONE]\n\n"
    )
    cassette = tmp_path / "multi_tool_streaming.yaml"
    cassette.write_text(
        "---\nversion: 2\ninteractions:\n- id: 0\n  request:\n"
        "    proto: HTTP/1.1\n    body: '" + json.dumps(body, separators=(",", ":")) + "'\n"
        "    headers:\n      Content-Type:\n      - application/json\n"
        "    url: https://api.x.ai/v1/chat/completions\n    method: POST\n"
        "  response:\n    proto: HTTP/2.0\n    body: |+\n" + stream + "    headers:\n"
        "      Content-Type:\n      - text/event-stream\n    status: 200 OK\n    code: 200\n"
        "    duration: 443.5ms\n"
    )
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([cassette])), ContractStore(migrated_db_url)
    )
    assert report.unpriced == {}
    [request] = report.requests
    assert request.target == "xai:grok-4-fast-reasoning"
    assert request.observed_cache_read_tokens == 364
    # xAI chat: total 594 = 394 prompt + 68 completion + 132 reasoning, so output is 200.
    # (394 - 364) x 0.20 + 364 x 0.05 + 200 x 0.50 = 6 + 18.2 + 100 = 124.2 $/M -> 0.0001242
    assert request.observed_cost == Decimal("0.0001242")
