"""Hand-built recordings modelled on what a fourth set of held-out public recordings (the
Python ecosystem's test suites) sent us: Ollama's native API recorded by vcrpy
(docs/log-formats.md, "Recorded HTTP": ``/api/chat`` and ``/api/generate``, counts in the
final ``done`` object), and a request/response pair kept as one pretty-printed JSON document
(docs/log-formats.md, "Formats": the ``cachecast`` wrapper record). Each expected figure is a
count written into the recording, with the arithmetic beside it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import yaml

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.logs.helpers import read, totals


def _interaction(uri: str, request: dict[str, Any], body: str, content_type: str) -> Any:
    """One vcrpy interaction (request body and response body stored as strings)."""
    return {
        "request": {
            "body": json.dumps(request),
            "headers": {"Content-Type": ["application/json"]},
            "method": "POST",
            "uri": uri,
        },
        "response": {
            "body": {"string": body},
            "headers": {
                "Content-Type": [content_type],
                "Date": ["Sun, 17 Nov 2024 08:41:58 GMT"],
            },
            "status": {"code": 200, "message": "OK"},
        },
    }


def _cassette(path: Path, *interactions: Any) -> Path:
    path.write_text(yaml.safe_dump({"interactions": list(interactions), "version": 1}))
    return path


CHAT = {"model": "llama3.1", "messages": [{"role": "user", "content": "Say hello!"}]}


def _final(**counts: int) -> dict[str, Any]:
    """Ollama's last object of a chat: ``done`` true and its counts (Ollama's API reference,
    "Generate a chat completion")."""
    return {
        "model": "llama3.1",
        "created_at": "2024-11-17T08:41:59.964165Z",
        "message": {"role": "assistant", "content": ""},
        "done_reason": "stop",
        "done": True,
        "total_duration": 2544046375,
        **counts,
    }


def test_ollama_chat_stream_counts_come_from_the_done_object(tmp_path: Path) -> None:
    # NDJSON: two partial objects (done false, no counts), then the final one.
    lines = [
        {"model": "llama3.1", "message": {"role": "assistant", "content": "Hello"}, "done": False},
        {"model": "llama3.1", "message": {"role": "assistant", "content": "!"}, "done": False},
        _final(prompt_eval_count=13, eval_count=23),
    ]
    stream = "\n".join(json.dumps(line) for line in lines) + "\n"
    path = _cassette(
        tmp_path / "ollama.yaml",
        _interaction(
            "http://localhost:11434/api/chat",
            {**CHAT, "stream": True},
            stream,
            "application/x-ndjson",
        ),
    )
    got = read(path)
    assert got.format == "vcr"
    assert got.errors == []
    [request] = got.requests
    assert request.provider == "ollama"
    assert request.logged_model == "llama3.1"
    # input = prompt_eval_count 13, output = eval_count 23, no cache field reported
    assert totals(got.requests) == {"input": 13, "read": 0, "write": 0, "output": 23}


def test_ollama_generate_with_a_kv_cache_count(tmp_path: Path) -> None:
    # A newer server reports the prompt tokens its KV cache held apart from the evaluated
    # ones: 40 evaluated + 1000 cached = 1040 prompt tokens, 1000 of them read.
    final = _final(prompt_eval_count=40, prompt_eval_cached_count=1000, eval_count=5)
    path = _cassette(
        tmp_path / "generate.yaml",
        _interaction(
            "https://ollama.com/api/generate",
            {"model": "llama3.1", "system": "Be brief.", "prompt": "Hi", "stream": False},
            json.dumps(final),
            "application/json",
        ),
    )
    got = read(path)
    assert got.errors == []
    [request] = got.requests
    assert request.provider == "ollama"
    assert totals(got.requests) == {"input": 1040, "read": 1000, "write": 0, "output": 5}


def test_ollama_without_a_prompt_count_is_a_bad_record_naming_the_field(tmp_path: Path) -> None:
    # The whole prompt came from the KV cache on an older server: no prompt_eval_count.
    path = _cassette(
        tmp_path / "cached.yaml",
        _interaction(
            "http://localhost:11434/api/chat",
            {**CHAT, "stream": False},
            json.dumps(_final(eval_count=9)),
            "application/json",
        ),
    )
    got = read(path)
    assert got.requests == []
    [error] = got.errors
    assert error.field.endswith("response.body.prompt_eval_count")
    assert "KV cache" in error.reason


def test_a_web_apps_own_api_chat_route_is_no_model_call(tmp_path: Path) -> None:
    # A browser session's POST /api/chat to the app itself answers in the app's own shape.
    path = _cassette(
        tmp_path / "webapp.yaml",
        _interaction(
            "http://localhost:3000/api/chat",
            CHAT,
            json.dumps({"reply": "Hello!"}),
            "application/json",
        ),
        _interaction(
            "http://localhost:11434/api/chat",
            {**CHAT, "stream": False},
            json.dumps(_final(prompt_eval_count=13, eval_count=2)),
            "application/json",
        ),
    )
    got = read(path)
    assert got.errors == []
    assert len(got.requests) == 1
    assert got.skipped == {"recorded call that is not a model endpoint": 1}
    assert totals(got.requests) == {"input": 13, "read": 0, "write": 0, "output": 2}


# --- a {request, response} pair kept as one pretty-printed JSON document ----------------------

# A Magistral turn sent back with its reasoning as Mistral's ThinkChunk (Mistral's API
# reference: ``{"type": "thinking", "thinking": [text chunks], "closed": true}``).
PAIR = {
    "request": {
        "messages": [
            {"role": "user", "content": "What is 17 times 19?"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": [{"type": "text", "text": "17 x 20 - 17 = 323."}],
                        "closed": True,
                    },
                    {"type": "text", "text": "323"},
                ],
            },
            {"role": "user", "content": "Plus one?"},
        ]
    },
    "response": {
        "id": "r1",
        "object": "chat.completion",
        "model": "magistral-small-latest",
        "created": 1791298649,
        "usage": {"prompt_tokens": 294, "completion_tokens": 4, "total_tokens": 298},
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "324"}}],
    },
}


def test_a_pretty_printed_pair_is_read_as_one_wrapper_record(tmp_path: Path) -> None:
    path = tmp_path / "replay.json"
    path.write_text(json.dumps(PAIR, indent=2))
    got = read(path)
    assert got.format == "cachecast"
    assert got.errors == []
    [request] = got.requests
    # No model in the wrapper or the body: the response's model is the one that served it.
    assert request.logged_model == "magistral-small-latest"
    # The ThinkChunk's text is part of the prompt (17 x 20 - 17 = 323.): not a refusal.
    assert request.exact is False
    # input = usage.prompt_tokens 294, output = completion_tokens 4
    assert totals(got.requests) == {"input": 294, "read": 0, "write": 0, "output": 4}


def test_a_json_list_of_records_is_read_record_by_record(tmp_path: Path) -> None:
    second = {
        "model": "gpt-4o-mini",
        "provider": "openai",
        "request": {"messages": [{"role": "user", "content": "Hi"}]},
        "response": {"usage": {"prompt_tokens": 8, "completion_tokens": 2}},
    }
    path = tmp_path / "pairs.json"
    # (A list whose first object opens with "request" is php-vcr's: the wrapper comes first.)
    path.write_text(json.dumps([second, PAIR, "not a record"], indent=2))
    got = read(path)
    assert got.format == "cachecast"
    assert [request.line for request in got.requests] == [1, 2]  # positions in the list
    [error] = got.errors
    assert error.line == 3
    assert "expected a JSON object" in error.reason
    # 8 + 294 input, 2 + 4 output
    assert totals(got.requests) == {"input": 302, "read": 0, "write": 0, "output": 6}


def test_a_plain_log_without_provider_is_priced_by_its_model_family(
    tmp_path: Path, migrated_db_url: str
) -> None:
    # docs/log-formats.md, "Provider names": a model of a known family names its provider.
    path = tmp_path / "replay.json"
    path.write_text(json.dumps(PAIR, indent=2))
    # The response's ``created`` dates the pair 2026-10-06 (docs/log-formats.md, "Canonical
    # records"); the day named here is within Magistral Small 1.2's own version (to 2026-07-31).
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path]), at=dt.date(2026, 7, 1)),
        ContractStore(migrated_db_url),
    )
    assert report.unpriced == {}
    assert [(t.provider, t.model) for t in report.targets] == [
        ("mistral", "magistral-small-latest")
    ]
    # Without the day, the pair is priced on its own day, 2026-10-06: after 1.2's retirement
    # the alias still answered, and contracts-v22 prices it from 2026-07-31 on
    # (docs/contracts.md, "contracts-v22").
    own_day = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    assert own_day.unpriced == {}
    [target] = own_day.targets
    assert target.contract.effective_from == dt.date(2026, 7, 31)
