"""The bundled example log is exactly what its committed generator writes."""

from __future__ import annotations

import importlib.util
import json

from tests.conftest import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"


def test_generator_reproduces_the_committed_log() -> None:
    spec = importlib.util.spec_from_file_location("make_agent_log", EXAMPLES / "make_agent_log.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    calls = module.generate()
    committed = (EXAMPLES / "agent-log.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.dumps(call, separators=(",", ":")) for call in calls] == committed
    # The shape the README promises: a few hundred calls, several sessions and two scopes,
    # in timestamp order.
    assert 200 <= len(calls) <= 400
    assert len({call["session"] for call in calls}) >= 20
    assert {call["scope"] for call in calls} == {"org-acme", "org-globex"}
    assert [call["timestamp"] for call in calls] == sorted(call["timestamp"] for call in calls)
