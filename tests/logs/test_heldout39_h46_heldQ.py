"""Variants met in the h46 held-out set (Python frameworks' cassettes), each on a hand-built
recording that follows the provider's documented format; expected values worked by hand
from the usage fields the recording carries."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

from cachecast.contracts import ContractStore
from cachecast.logs.http.endpoints import Endpoint, model_endpoint
from cachecast.logs.inspect_ai import fits_text
from cachecast.passes.log_input import LogInput
from cachecast.simulator.pricing import below_minimum_flagged
from cachecast.tokenizers.types import CacheControls, ObservedUsage, TokenizedRequest
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.contracts.builders import terms
from tests.logs.helpers import read, totals
from tests.logs.test_http import entry

# --- Gemini: a small explicit cache read by name, deleted in the same second ----------------
# A framework's test creates a cachedContents object smaller than the contract's stored
# minimum (the API accepted it), reads it by name, and deletes it, the last two answered
# within one Date second. The read is the object's (not an implicit prefix the minimum
# governs), and the object was still there when the request named it.

GEMINI = "https://generativelanguage.googleapis.com/v1beta"
CACHED, OWN = 1_500, 11  # the provider's counts: the object, the request's own part
AT = dt.date(2026, 11, 1)


def _small_cache_recording(tmp_path: Path) -> Path:
    entries = [
        entry(
            f"{GEMINI}/cachedContents",
            {
                "model": "models/gemini-2.5-flash",
                "contents": [{"role": "user", "parts": [{"text": "The sky is blue. " * 300}]}],
                "ttl": "300s",
            },
            {
                "name": "cachedContents/small",
                "model": "models/gemini-2.5-flash",
                "usageMetadata": {"totalTokenCount": CACHED},
            },
            started="2026-11-01T10:00:00.000Z",
        ),
        entry(
            f"{GEMINI}/models/gemini-2.5-flash:generateContent",
            {
                "cachedContent": "cachedContents/small",
                "contents": [{"role": "user", "parts": [{"text": "Why is the sky blue?"}]}],
            },
            {
                "candidates": [{"content": {"role": "model", "parts": [{"text": "Scatter."}]}}],
                "usageMetadata": {
                    "promptTokenCount": CACHED + OWN,
                    "cachedContentTokenCount": CACHED,
                    "candidatesTokenCount": 3,
                },
            },
            started="2026-11-01T10:00:01.000Z",
        ),
        entry(
            f"{GEMINI}/cachedContents/small",
            None,
            {},
            method="DELETE",
            started="2026-11-01T10:00:01.000Z",
        ),
    ]
    path = tmp_path / "gemini.har"
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}))
    return path


def test_a_small_cache_read_by_name_is_reconciled_not_contradicted(
    tmp_path: Path, migrated_db_url: str
) -> None:
    store = ContractStore(migrated_db_url)
    # The stored minimum on that date is above the object's 1,500 tokens.
    assert store.as_of("google", "gemini-2.5-flash", AT).min_cacheable_tokens > CACHED
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([_small_cache_recording(tmp_path)]), at=AT),
        store,
    )
    assert report.contradictory_observations == []
    rows = sorted(report.requests, key=lambda row: row.line)
    # The creation writes the object's 1,500; the use reads all 1,500 of it, as reported.
    assert [(r.observed_cache_read_tokens, r.observed_cache_write_tokens) for r in rows] == [
        (0, CACHED),
        (CACHED, None),
    ]
    assert [r.predicted_cache_read_tokens for r in rows] == [0, CACHED]
    assert all(r.within_tolerance for r in rows)
    (target,) = report.targets
    assert not any("expired or deleted" in note for note in target.notes)


def test_a_read_of_a_named_cache_object_is_not_held_to_the_implicit_minimum() -> None:
    # 890 read of a 900-token prompt; the builder's contract documents a 1,024 minimum.
    observed = ObservedUsage(input_tokens=900, cache_read_tokens=890, cache_write_tokens=0)
    request = TokenizedRequest(
        source="log.har",
        line=2,
        request_id="r2",
        timestamp=0.0,
        scope="org",
        provider="acme",
        model="acme-1",
        input_tokens=900,
        output_tokens=1,
        observed=observed,
        controls=CacheControls(cached_content="cachedContents/small"),
    )
    assert below_minimum_flagged(request, terms()) is request
    # The same usage without the named object is a contradiction of the 1,024 minimum.
    bare = dataclasses.replace(request, controls=CacheControls())
    flagged = below_minimum_flagged(bare, terms())
    assert flagged.observed is not None and flagged.observed.contradiction is not None


# --- Mistral's Conversations API: a start, an append to it, an append to one not recorded ---
# (Mistral API reference, "beta.conversations": ``inputs`` / ``instructions`` / ``model`` in,
# ``conversation_id`` / ``outputs`` / ``usage`` out; an append sends only its new entries.)


def _vcr(interactions: list[tuple[str, dict[str, object], dict[str, object]]]) -> str:
    parts = ["interactions:\n"]
    for url, body, reply in interactions:
        parts.append(
            "- request:\n"
            f"    body: {json.dumps(json.dumps(body))}\n"
            "    headers:\n      Content-Type:\n      - application/json\n"
            f"    method: POST\n    uri: {url}\n"
            "  response:\n"
            f"    body:\n      string: {json.dumps(json.dumps(reply))}\n"
            "    headers:\n      Content-Type:\n      - application/json\n"
            "      date:\n      - Tue, 21 Jul 2026 00:18:55 GMT\n"
            "    status:\n      code: 200\n      message: OK\n"
        )
    parts.append("version: 1\n")
    return "".join(parts)


def _reply(conversation: str, text: str, prompt: int, completion: int) -> dict[str, object]:
    return {
        "object": "conversation.response",
        "conversation_id": conversation,
        "outputs": [
            {
                "object": "entry",
                "type": "message.output",
                "model": "mistral-small-latest",
                "role": "assistant",
                "content": text,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


MISTRAL = "https://api.mistral.ai/v1/conversations"


def test_mistral_conversation_turns_are_read_with_the_conversation_so_far(
    tmp_path: Path,
) -> None:
    path = tmp_path / "conversations.yaml"
    path.write_text(
        _vcr(
            [
                (
                    MISTRAL,
                    {
                        "model": "mistral-small-latest",
                        "instructions": "Answer with a number only.",
                        "inputs": "What is 1+1?",
                        "stream": False,
                    },
                    _reply("conv_a", "2", 20, 2),
                ),
                (
                    f"{MISTRAL}/conv_a",
                    {"inputs": [{"role": "user", "content": "And 2+3?"}], "store": True},
                    _reply("conv_a", "5", 33, 2),
                ),
                (f"{MISTRAL}/conv_b", {"inputs": "And 3+4?"}, _reply("conv_b", "7", 40, 2)),
            ]
        ),
        encoding="utf-8",
    )
    found = read(path)
    assert (found.format, found.errors) == ("vcr", [])
    start, append, elsewhere = found.requests
    assert {r.provider for r in found.requests} == {"mistral"}
    # The append names no model: the conversation's is used.
    assert [r.model for r in (start, append)] == ["mistral-small-latest"] * 2
    # The append's prompt is the start's prompt, its answer, then the new input: the
    # start's tokens open it.
    assert start.tokens is not None and append.tokens is not None
    assert list(append.tokens[: len(start.tokens)]) == list(start.tokens)
    assert len(append.tokens) > len(start.tokens)
    assert (start.prompt_complete, append.prompt_complete) == (True, True)
    # An append to a conversation the recording does not hold: its earlier turns are the
    # server's, so the prompt read is not the whole prompt.
    assert elsewhere.prompt_complete is False
    # Usage as reported: 20 + 33 + 40 input, 2 + 2 + 2 output, nothing cached reported.
    assert totals(found.requests) == {"input": 93, "read": 0, "write": 0, "output": 6}


def test_mistral_conversation_paths_are_model_endpoints() -> None:
    assert model_endpoint("POST", MISTRAL) == Endpoint("mistral-conversations", "mistral", None)
    for url in (f"{MISTRAL}/conv_a", f"{MISTRAL}/conv_a/restart"):
        found = model_endpoint("POST", url)
        assert found is not None and found.api == "mistral-conversations"
    assert model_endpoint("GET", f"{MISTRAL}/conv_a/history") is None
    assert model_endpoint("POST", f"{MISTRAL}/conv_a/history") is None


# --- Inspect AI evaluation logs: the provider calls of a sample's model events --------------
# (Inspect's EvalLog / ModelEvent: ``call.request`` the body the SDK sent, NOT_GIVEN logged
# as null; ``call.response`` the provider's reply; texts under ``attachments``.)

LONG = "Answer the question in the voice of a pirate, briefly. " * 3


def _openai_call(content: str, prompt: int, cached: int) -> dict[str, object]:
    return {
        "request": {
            "messages": [{"role": "user", "content": content}],
            "tools": None,
            "tool_choice": None,
            "model": "gpt-4o-mini",
        },
        "response": {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Arr."}}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": 2,
                "total_tokens": prompt + 2,
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        },
    }


def _anthropic_call() -> dict[str, object]:
    return {
        "request": {
            "model": "claude-haiku-4-5-20251001",
            "max_tokens": 32,
            "system": [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": "Where is the treasure?"}],
            "extra_headers": None,
        },
        "response": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-haiku-4-5-20251001",
            "content": [{"type": "text", "text": "Buried."}],
            "usage": {
                "input_tokens": 9,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 3,
            },
        },
    }


def _inspect_log(content: str, attachments: dict[str, str]) -> dict[str, object]:
    def event(model: str, at: str, call: object, cache: str | None = None) -> dict[str, object]:
        return {"timestamp": at, "event": "model", "model": model, "cache": cache, "call": call}

    return {
        "version": 2,
        "status": "success",
        "eval": {
            "run_id": "run1",
            "task": "pirate",
            "task_id": "t1",
            "model": "openai/gpt-4o-mini",
        },
        "samples": [
            {
                "id": 1,
                "epoch": 1,
                "events": [
                    {"timestamp": "2026-03-01T10:00:00+00:00", "event": "sample_init"},
                    event(
                        "openai/gpt-4o-mini",
                        "2026-03-01T10:00:01+00:00",
                        _openai_call(content, 40, 0),
                    ),
                    # answered from Inspect's own cache: no provider call was made
                    event(
                        "openai/gpt-4o-mini",
                        "2026-03-01T10:00:02+00:00",
                        _openai_call(content, 40, 0),
                        "read",
                    ),
                    event(
                        "anthropic/claude-haiku-4-5-20251001",
                        "2026-03-01T10:00:03+00:00",
                        _anthropic_call(),
                    ),
                    {
                        "timestamp": "2026-03-01T10:00:04+00:00",
                        "event": "model",
                        "model": "openai/gpt-4o-mini",
                        "error": "rate limited",
                    },
                ],
                "attachments": attachments,
            }
        ],
    }


def test_an_inspect_log_is_read_as_its_provider_calls(tmp_path: Path) -> None:
    kept = tmp_path / "2026-03-01T10-00-00_pirate_t1.json"
    kept.write_text(
        json.dumps(_inspect_log("attachment://a1", {"a1": LONG}), indent=2), encoding="utf-8"
    )
    inline = tmp_path / "inline.json"
    inline.write_text(json.dumps(_inspect_log(LONG, {}), indent=2), encoding="utf-8")
    found, plain = read(kept), read(inline)
    assert (found.format, found.errors) == ("inspect-ai", [])
    chat, messages = found.requests
    assert (chat.provider, chat.model) == ("openai", "gpt-4o-mini")
    assert (messages.provider, messages.model) == ("anthropic", "claude-haiku-4-5-20251001")
    # The attachment is put back: the prompt is the text, as where it was written inline.
    assert chat.tokens is not None and chat.tokens == plain.requests[0].tokens
    # The Anthropic system block carries its breakpoint through.
    assert messages.breakpoints
    # Usage as the calls report it: 40 + 9 input, 2 + 3 output; the cached answer and the
    # failed generation are skipped with their reasons.
    assert totals(found.requests) == {"input": 49, "read": 0, "write": 0, "output": 5}
    assert found.skipped == {
        "a generation Inspect answered from its own cache (no provider call)": 1,
        "a generation with no provider call recorded (an error)": 1,
    }


# --- A request body stored re-serialized with json.dumps' default separators ---------------
# The Content-Length is the compact body's (what the client sent); the stored text has ", "
# and ": ". Same body: not a rewritten one, so the prompt is whole.


def _anthropic_cassette(stored: str, declared: int) -> str:
    reply = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": [{"type": "text", "text": "Hi."}],
        "usage": {"input_tokens": 12, "output_tokens": 2},
    }
    return (
        "interactions:\n- request:\n"
        f"    body: {json.dumps(stored)}\n"
        "    headers:\n      content-type:\n      - application/json\n"
        f"      content-length:\n      - '{declared}'\n"
        "    method: POST\n    uri: https://api.anthropic.com/v1/messages\n"
        "  response:\n"
        f"    body:\n      string: {json.dumps(json.dumps(reply))}\n"
        "    headers:\n      content-type:\n      - application/json\n"
        "    status:\n      code: 200\n      message: OK\nversion: 1\n"
    )


def test_a_body_stored_with_spaces_is_not_a_rewritten_body(tmp_path: Path) -> None:
    body = {
        "model": "claude-haiku-4-5-20251001",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "Say hi — briefly."}],
    }
    spaced = json.dumps(body)  # what the cassette stores
    compact = json.dumps(body, separators=(",", ":"), ensure_ascii=False)  # what was sent
    assert len(spaced) > len(compact.encode())
    same = tmp_path / "same.yaml"
    same.write_text(_anthropic_cassette(spaced, len(compact.encode())), encoding="utf-8")
    (request,) = read(same).requests
    assert request.prompt_complete is True
    # A stored body whose content changed (a scrubbed prompt) still is a rewritten one.
    scrubbed = json.dumps({**body, "messages": [{"role": "user", "content": "<REDACTED>"}]})
    other = tmp_path / "other.yaml"
    other.write_text(_anthropic_cassette(scrubbed, len(compact.encode())), encoding="utf-8")
    (request,) = read(other).requests
    assert request.prompt_complete is False


# --- Mistral Agents completions: Chat Completions naming an agent the recording created ----


def _vcr_calls(calls: list[tuple[str, str, object, dict[str, object]]]) -> str:
    parts = ["interactions:\n"]
    for method, url, body, reply in calls:
        parts.append(
            "- request:\n"
            f"    body: {json.dumps(json.dumps(body) if body is not None else '')}\n"
            "    headers:\n      Content-Type:\n      - application/json\n"
            f"    method: {method}\n    uri: {url}\n"
            "  response:\n"
            f"    body:\n      string: {json.dumps(json.dumps(reply))}\n"
            "    headers:\n      Content-Type:\n      - application/json\n"
            "    status:\n      code: 200\n      message: OK\n"
        )
    parts.append("version: 1\n")
    return "".join(parts)


INSTRUCTIONS = "You are concise. Keep responses under five words."
QUESTION = [{"role": "user", "content": "What is 8+1? Reply with just the number."}]


def _chat_reply(prompt: int) -> dict[str, object]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "model": "mistral-small-latest",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "9"}}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 2, "total_tokens": prompt + 2},
    }


def test_a_mistral_agent_completion_is_read_with_the_agent_s_instructions(
    tmp_path: Path,
) -> None:
    agent = {
        "object": "agent",
        "id": "ag_1",
        "model": "mistral-small-latest",
        "instructions": INSTRUCTIONS,
        "tools": [],
    }
    path = tmp_path / "agents.yaml"
    path.write_text(
        _vcr_calls(
            [
                (
                    "POST",
                    "https://api.mistral.ai/v1/agents",
                    {"model": "mistral-small-latest", "name": "a", "instructions": INSTRUCTIONS},
                    agent,
                ),
                (
                    "POST",
                    "https://api.mistral.ai/v1/agents/completions",
                    {"messages": QUESTION, "agent_id": "ag_1"},
                    _chat_reply(40),
                ),
                (
                    "POST",
                    "https://api.mistral.ai/v1/agents/completions",
                    {"messages": QUESTION, "agent_id": "ag_unknown"},
                    _chat_reply(40),
                ),
            ]
        ),
        encoding="utf-8",
    )
    # The same prompt sent to Chat Completions with the instructions as a system message.
    plain = tmp_path / "chat.yaml"
    system = [{"role": "system", "content": INSTRUCTIONS}, *QUESTION]
    plain.write_text(
        _vcr_calls(
            [
                (
                    "POST",
                    "https://api.mistral.ai/v1/chat/completions",
                    {"model": "mistral-small-latest", "messages": system},
                    _chat_reply(40),
                ),
            ]
        ),
        encoding="utf-8",
    )
    found = read(path)
    assert found.errors == []
    named, unknown = found.requests
    (reference,) = read(plain).requests
    assert (named.provider, named.model) == ("mistral", "mistral-small-latest")
    assert named.prompt_complete is True
    assert named.tokens == reference.tokens
    # An agent the recording did not create: its instructions are the server's.
    assert unknown.prompt_complete is False
    assert found.skipped == {"recorded call that is not a model endpoint": 1}
    assert totals(found.requests) == {"input": 80, "read": 0, "write": 0, "output": 4}


def test_mistral_agent_completions_are_a_chat_endpoint_not_legacy_completions() -> None:
    found = model_endpoint("POST", "https://api.mistral.ai/v1/agents/completions")
    assert found == Endpoint("mistral-agents", "mistral", None)
    assert model_endpoint("POST", "https://api.mistral.ai/v1/agents") is None


def test_an_inspect_log_head_may_open_eval_with_other_fields() -> None:
    head = '{\n  "version": 2,\n  "status": "success",\n  "eval": {\n    "eval_set_id": "s1",\n'
    assert fits_text(head + '    "eval_id": "e1",\n    "run_id": "r1",\n')
    assert not fits_text(head + '    "eval_id": "e1"\n  }\n}\n')  # no run: no Inspect log
    assert not fits_text('{"status": "success", "eval": {"run_id": "r1"}}')
