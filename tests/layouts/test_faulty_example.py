"""The bundled faulty example log: exactly what its generator writes, with the two layout
faults it is meant to show (a timestamp on top of the system prompt, a shuffled tool order),
for a model cachecast tokenizes exactly, and small enough to replay on a CPU engine."""

from __future__ import annotations

import importlib.util
import json

import pytest

from cachecast.tokenizers import read_log
from tests.conftest import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"
LOG = EXAMPLES / "faulty-agent-log.jsonl"


def test_generator_reproduces_the_committed_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))  # it builds on make_agent_log beside it
    path = EXAMPLES / "make_faulty_agent_log.py"
    spec = importlib.util.spec_from_file_location("make_faulty_agent_log", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = LOG.read_text(encoding="utf-8").splitlines()
    assert [json.dumps(call, separators=(",", ":")) for call in module.generate()] == committed


def test_the_log_has_both_faults() -> None:
    records = [json.loads(line) for line in LOG.read_text(encoding="utf-8").splitlines()]
    systems = [r["request"]["messages"][0]["content"] for r in records]
    # Each system prompt opens with the call's own time, the rest of it is the same.
    for system, record in zip(systems, records, strict=True):
        assert system.startswith(f"Current time: {record['timestamp']}\n\n")
    assert len({s.split("\n\n", 1)[1] for s in systems}) == 1
    assert len({r["timestamp"] for r in records}) == len(records)
    # The same five tools every time, in (nearly) a different order each time.
    orders = [tuple(t["function"]["name"] for t in r["request"]["tools"]) for r in records]
    assert len({frozenset(order) for order in orders}) == 1 and len(orders[0]) == 5
    assert len(set(orders)) >= len(records) - 2
    assert {r["model"] for r in records} == {"qwen2.5-7b-instruct"}


def test_the_log_is_exactly_tokenized_and_small() -> None:
    requests = list(read_log(LOG, strict=True))
    assert all(r.exact and r.tokenizer.startswith("hf:qwen2.5") for r in requests)
    assert 10 <= len(requests) <= 20
    assert max(r.input_tokens for r in requests) < 4096  # well inside a small engine's limit
