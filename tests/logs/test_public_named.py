"""Hand-written minimal recordings of variants met in public projects' cassettes beside the
shared ones (docs/log-formats.md): pydantic-ai's later serializer, whose bodies are
``{type: json, content: <mapping>}`` or ``{type: text, content: <text>}``, with ``status:
200`` and an ISO 8601 ``recorded_at`` that YAML reads as a timestamp.

Each expected figure is the usage field written into the recording, summed by the provider's
documented rule (docs/log-formats.md, "Usage conventions"), with the arithmetic beside it.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from tests.logs.helpers import read, totals

STREAM = """event: message_start
data: {"type":"message_start","message":{"model":"claude-sonnet-4-6","id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":13,"cache_creation_input_tokens":3913,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":3913},"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Django"}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":13,"cache_creation_input_tokens":3913,"cache_read_input_tokens":0,"output_tokens":4}}

event: message_stop
data: {"type":"message_stop"}
"""  # noqa: E501


def typed_cassette(response_body: str) -> str:
    """One interaction as pydantic-ai's later serializer writes it (block scalars kept)."""
    request = {
        "max_tokens": 1024,
        "model": "claude-sonnet-4-6",
        "stream": True,
        "system": [
            {
                "type": "text",
                "text": "Answer questions about Python concisely. " * 600,
                "cache_control": {"type": "ephemeral", "ttl": "1h"},
            }
        ],
        "messages": [{"role": "user", "content": "Name one Python web framework."}],
    }
    indented = "\n".join("        " + line for line in STREAM.splitlines())
    return (
        "version: 1\ninteractions:\n- request:\n    method: POST\n"
        "    uri: https://api.anthropic.com/v1/messages?beta=true\n"
        "    headers:\n      content-type:\n      - application/json\n"
        f"    body:\n      type: json\n      content: {json.dumps(request)}\n"
        "  response:\n    status: 200\n    headers:\n      content-type:\n"
        "      - text/event-stream; charset=utf-8\n"
        f"    body:\n      type: {response_body}\n      content: |+\n{indented}\n\n"
        "  recorded_at: 2026-10-09T17:17:10.054639+00:00\n"
    )


def test_pydantic_ai_typed_bodies(tmp_path: Path) -> None:
    path = tmp_path / "test_cache_ttl.yaml"
    path.write_text(typed_cassette("text"))
    result = read(path)
    assert (result.format, result.errors) == ("vcr", [])
    [request] = result.requests
    # message_delta's usage replaces message_start's: input 13 + write 3,913 + read 0 =
    # 3,926 prompt tokens; output 4 (not 1 + 4)
    assert totals(result.requests) == {"input": 3_926, "read": 0, "write": 3_913, "output": 4}
    # the unquoted ISO recorded_at (a YAML timestamp) dates the request
    recorded = dt.datetime(2026, 10, 9, 17, 17, 10, 54_639, tzinfo=dt.UTC)
    assert request.timestamp == recorded.timestamp()


def test_pydantic_ai_typed_body_of_unknown_type_is_named(tmp_path: Path) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text(typed_cassette("pickle"))
    result = read(path)
    assert [error.field for error in result.errors] == ["interactions[0].response.body.type"]
