"""An explicit cache and a prompt the log does not hold (the 2026 pseudo-held-out set h44:
an OTLP/JSON fixture whose spans keep usage without content). docs/predictions.md: under an
explicit contract, caching without a breakpoint disputes it; a log without the prompt cannot
show that no breakpoint was marked."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import CONTRACT_DISPUTED, ReconcileRequest, reconcile

USER_HI = {"role": "user", "parts": [{"type": "text", "content": "Hi"}]}


def attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def otlp(*spans: dict[str, Any]) -> dict[str, Any]:
    scope = {"spans": list(spans)}
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [scope]}]}


def test_no_breakpoint_dispute_without_the_prompt(tmp_path: Path, store: ContractStore) -> None:
    # Anthropic caches only at the breakpoints the prompt marks (contract mode explicit). A
    # span recorded with content capture off keeps the usage but not the prompt: it cannot
    # show that no breakpoint was marked, so its read disputes no contract. The same span
    # with its prompt recorded (no cache_control anywhere) does.
    def anthropic_span(span_id: str, start: int, content: bool) -> dict[str, Any]:
        attributes = [
            attr("gen_ai.operation.name", "chat"),
            attr("gen_ai.provider.name", "anthropic"),
            attr("gen_ai.request.model", "claude-sonnet-4-5"),
            # 93,200 in all (the conventions count cached input in input_tokens): 90,000 read.
            attr("gen_ai.usage.input_tokens", 93_200),
            attr("gen_ai.usage.cache_read.input_tokens", 90_000),
            attr("gen_ai.usage.cache_creation.input_tokens", 0),
            attr("gen_ai.usage.output_tokens", 800),
        ]
        if content:
            attributes.append(attr("gen_ai.input.messages", json.dumps([USER_HI])))
        return {
            "traceId": span_id,
            "spanId": span_id,
            "name": "chat claude-sonnet-4-5",
            "startTimeUnixNano": str(start),
            "attributes": attributes,
        }

    classes = {}
    for content in (False, True):
        path = tmp_path / f"content-{content}.json"
        path.write_text(json.dumps(otlp(anthropic_span("s1", 1_760_000_000_000_000_000, content))))
        request = ReconcileRequest(log=LogInput.of_paths([path]), at=date(2025, 10, 9))
        (row,) = reconcile(request, store).requests
        assert row.observed_cache_read_tokens == 90_000
        classes[content] = (row.classification, row.explanation)
    assert classes[False][0] != CONTRACT_DISPUTED, classes[False]
    assert classes[True][0] == CONTRACT_DISPUTED
    assert "marks no breakpoint" in classes[True][1]
