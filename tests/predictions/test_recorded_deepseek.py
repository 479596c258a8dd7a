"""DeepSeek's cache of generated replies (docs/predictions.md, "Replies DeepSeek caches").

DeepSeek's guide: each request leaves a cache prefix unit at the end of the model's output; a
next request carrying the reply back as generated reads the prompt and the reply. Observed
figures are the recordings' usage fields (``prompt_cache_hit_tokens``); the steps of the V4
rules are 128 tokens (docs/predictions.md, "DeepSeek's 128-token steps")."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import yaml

from cachecast.contracts import ContractStore
from cachecast.contracts.mechanics import caches_replies
from cachecast.logs.http.state import ApiState, carried_reply, streamed_message
from tests.conftest import shared_data
from tests.logs.helpers import read
from tests.predictions.test_served_recordings import rows, run

VCR = "recordings/vcr_cassettes"
PYDANTIC = f"{VCR}/pydantic-ai-parsed-body/test_deepseek_deferred_capability_with_thinking.yaml"
RUBY = (
    f"{VCR}/ruby-vcr/chat_function_calling_deepseek_deepseek-chat_can_use_parallel_tool_calls.yml"
)


def test_a_request_carrying_the_previous_reply_verbatim_is_marked() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    reply = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [call]}
    final = {"choices": [{"index": 0, "message": {**reply, "tool_calls": [{**call, "index": 0}]}}]}
    state = ApiState()
    assert carried_reply(body, final, state) is None  # nothing before it
    carried = {"role": "assistant", "tool_calls": [call]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "2"}
    follow = {**body, "messages": [*body["messages"], carried, result]}
    assert carried_reply(follow, {}, state) == 1
    # The same, with the arguments re-serialized (no space): not the reply as generated.
    state = ApiState()
    carried_reply(body, final, state)
    changed = {**call, "function": {"name": "f", "arguments": '{"a":1}'}}
    other = {**body, "messages": [*body["messages"], {**carried, "tool_calls": [changed]}]}
    assert carried_reply(other, {}, state) is None
    # Another body around the same messages (a tool added): not the previous request.
    state = ApiState()
    carried_reply(body, final, state)
    tools = {**follow, "tools": [{"type": "function", "function": {"name": "g"}}]}
    assert carried_reply(tools, {}, state) is None


def test_recorded_deepseek_requests_carrying_their_reply() -> None:
    # pydantic-ai: request 2 adds two tools (another body): not request 1 continued; request
    # 3 is request 2 with its reply (message 7) and the two tool results.
    pydantic = read(shared_data(PYDANTIC)).requests
    assert [r.controls.carries_reply for r in pydantic] == [None, None, "messages[7]"]
    # RubyLLM sends the tool-call arguments back re-serialized: not verbatim.
    ruby = read(shared_data(RUBY)).requests
    assert [r.controls.carries_reply for r in ruby] == [None, None]


def test_deepseek_reads_the_previous_prompt_and_its_reply(store: ContractStore) -> None:
    # pydantic-ai, deepseek-reasoner on 2026-06-10: request 2 has prompt_tokens 875 and
    # completion_tokens 79; request 3 (976 tokens) carries that reply and reads
    # prompt_cache_hit_tokens 896 = 128 x floor((875 + 79) / 128) = 128 x 7. Without the
    # reply cached the prediction would be 768 = 128 x floor(875 / 128), 128 off.
    report = run(shared_data(PYDANTIC), store)
    third = rows(report)[2]
    assert (third[1], third[2]) == (896, 896)
    # RubyLLM, deepseek-chat on 2026-06-08: request 1 has prompt_tokens 407; request 2 carries
    # the reply re-serialized and reads 384 = 128 x floor(407 / 128): its previous prompt only.
    report = run(shared_data(RUBY), store)
    second = rows(report)[1]
    assert (second[1], second[2]) == (384, 384)


def test_only_deepseek_from_its_version_of_2025_02_26_caches_replies(
    migrated_db_url: str,
) -> None:
    store = ContractStore(migrated_db_url)
    assert caches_replies(store.as_of("deepseek", "deepseek-reasoner", dt.date(2026, 6, 10)))
    # V3.2 (deepseek-chat's version from 2025-09-29): observed on recordings of 2026-04-02.
    assert caches_replies(store.as_of("deepseek", "deepseek-chat", dt.date(2026, 1, 10)))
    # V3 under the version of 2025-02-26: observed on KaibanJS's recording of 2025-05-21.
    assert caches_replies(store.as_of("deepseek", "deepseek-chat", dt.date(2025, 5, 21)))
    # V3.1 (the version of 2025-09-05), between the two: taken to keep it.
    assert caches_replies(store.as_of("deepseek", "deepseek-chat", dt.date(2025, 9, 10)))
    # The version of 2025-02-08: the guide of its time, prompts only.
    assert not caches_replies(store.as_of("deepseek", "deepseek-chat", dt.date(2025, 2, 20)))
    assert not caches_replies(store.as_of("openai", "gpt-4o", dt.date(2026, 6, 10)))


def test_deepseek_v3_reads_the_reply_sent_back(tmp_path: Path, store: ContractStore) -> None:
    # A hand-built moscaFetch recording (docs/log-formats.md) of deepseek-chat on 2025-05-21,
    # as KaibanJS's of that day: request 1 has prompt_tokens 1,424 and completion_tokens 85;
    # request 2 carries that reply verbatim and reads 64 x floor((1,424 + 85) / 64) = 1,472,
    # the figure the real recording shows (without the reply cached: 64 x 22 = 1,408).
    system = "You are Scout. " + " ".join(
        f"Rule {i}: answer in plain words and cite the page you read." for i in range(120)
    )
    reply = '{"thought": "I should search.", "action": "search"}'
    first = [{"role": "system", "content": system}, {"role": "user", "content": "Who won?"}]
    second = [
        *first,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": "The search says Argentina, 1-0."},
    ]

    def call(messages: list[dict[str, Any]], created: int, content: str, usage: Any) -> Any:
        return {
            "url": "https://api.deepseek.com/chat/completions",
            "method": "POST",
            "body": {"model": "deepseek-chat", "stream": False, "messages": messages},
            "response": {
                "id": f"r{created}",
                "object": "chat.completion",
                "created": created,
                "model": "deepseek-chat",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
            },
        }

    def usage(prompt: int, completion: int, hit: int) -> dict[str, int]:
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_cache_hit_tokens": hit,
            "prompt_cache_miss_tokens": prompt - hit,
        }

    path = tmp_path / "sport_news.requests.json"
    records = [
        call(first, 1_747_845_091, reply, usage(1_424, 85, 0)),
        call(second, 1_747_845_103, "ok", usage(1_530, 5, 1_472)),
    ]
    path.write_text(json.dumps(records, indent=2), encoding="utf-8")
    assert [row[1:3] for row in rows(run(path, store))] == [(0, 0), (1_472, 1_472)]


def test_deepseek_reads_in_128_token_steps_from_v4(migrated_db_url: str) -> None:
    # From the V4 launch (2026-04-24) on, contracts-v23 stores 128-token steps and minimum
    # (contracts-v5 stored 64 for deepseek-chat, contracts-v3 none for deepseek-v4-flash of
    # 2026-10-02).
    store = ContractStore(migrated_db_url)
    for model, day in (
        ("deepseek-chat", dt.date(2026, 6, 8)),
        ("deepseek-reasoner", dt.date(2026, 6, 10)),
        ("deepseek-v4-flash", dt.date(2026, 12, 5)),
    ):
        terms = store.as_of("deepseek", model, day)
        assert (terms.increment_tokens, terms.min_cacheable_tokens) == (128, 128)
    # V3.2 (deepseek-chat from 2025-09-29): the 64-token units of V3's guide stand.
    terms = store.as_of("deepseek", "deepseek-chat", dt.date(2026, 1, 10))
    assert (terms.increment_tokens, terms.min_cacheable_tokens) == (64, 64)


# --- Streamed replies (hand-written vcrpy cassettes; DeepSeek's Chat Completions stream) --

STREAM_DATE = "Mon, 08 Jun 2026 10:00:00 GMT"  # under the V4 rules (replies cached)
SYSTEM = "You answer weather questions for a travel desk and always call the tool. " * 8
TEXT = "Let me look up the current weather in Paris for you before answering. " * 12
ARGUMENTS = ('{"city": ', '"Paris"}')  # the arguments as the model streamed them


def _chunk(delta: dict[str, Any], usage: dict[str, Any] | None = None) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": None}
    payload = {
        "id": "c",
        "object": "chat.completion.chunk",
        "model": "deepseek-chat",
        "choices": [choice],
        "usage": usage,
    }
    return f"data: {json.dumps(payload)}\n\n"


def _usage(prompt: int, hit: int, completion: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_cache_hit_tokens": hit,
        "prompt_cache_miss_tokens": prompt - hit,
    }


def _reply_message(arguments: str) -> dict[str, Any]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "weather", "arguments": arguments},
    }
    return {"role": "assistant", "content": TEXT, "tool_calls": [call]}


def _stream_one() -> str:
    # The reply in pieces: the role, the text in two halves, the call opened (id, type,
    # name, empty arguments), its arguments in two pieces, then the usage chunk.
    half = len(TEXT) // 2
    opened = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "weather", "arguments": ""},
    }
    pieces = [{"index": 0, "function": {"arguments": piece}} for piece in ARGUMENTS]
    return (
        _chunk({"role": "assistant", "content": ""})
        + _chunk({"content": TEXT[:half]})
        + _chunk({"content": TEXT[half:]})
        + _chunk({"tool_calls": [opened]})
        + "".join(_chunk({"tool_calls": [piece]}) for piece in pieces)
        + _chunk({"content": ""}, _usage(200, 0, 150))
        + "data: [DONE]\n\n"
    )


def _cassette(tmp_path: Path, carried_arguments: str, streamed: bool) -> Path:
    tools = [{"type": "function", "function": {"name": "weather", "parameters": {}}}]
    first = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Paris?"}]
    second = [
        *first,
        _reply_message(carried_arguments),
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C, light wind"},
    ]
    if streamed:
        reply, kind = _stream_one(), "text/event-stream"
    else:
        reply = json.dumps(
            {
                "id": "c",
                "model": "deepseek-chat",
                "choices": [{"index": 0, "message": _reply_message("".join(ARGUMENTS))}],
                "usage": _usage(200, 0, 150),
            }
        )
        kind = "application/json"
    final = json.dumps(
        {
            "id": "d",
            "model": "deepseek-chat",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "18 C in Paris."}}
            ],
            "usage": _usage(380, 320, 8),
        }
    )

    def interaction(messages: list[Any], body: str, content_type: str) -> dict[str, Any]:
        request = {
            "model": "deepseek-chat",
            "messages": messages,
            "tools": tools,
            "stream": streamed,
        }
        return {
            "request": {
                "body": json.dumps(request),
                "method": "POST",
                "uri": "https://api.deepseek.com/chat/completions",
                "headers": {},
            },
            "response": {
                "body": {"string": body},
                "status": {"code": 200, "message": "OK"},
                "headers": {"Content-Type": [content_type], "Date": [STREAM_DATE]},
            },
        }

    cassette = {
        "version": 1,
        "interactions": [
            interaction(first, reply, kind),
            interaction(second, final, "application/json"),
        ],
    }
    path = tmp_path / f"deepseek-{streamed}-{len(carried_arguments)}.yaml"
    path.write_text(yaml.safe_dump(cassette))
    return path


def test_a_streamed_reply_carried_back_verbatim_is_marked(tmp_path: Path) -> None:
    # Request 2 opens with request 1's messages, then the reply exactly as the stream's
    # chunks put it together (the text's two halves, the call's id/type/name, the argument
    # pieces '{"city": ' + '"Paris"}'): message 2 carries it.
    verbatim = read(_cassette(tmp_path, "".join(ARGUMENTS), streamed=True)).requests
    assert [r.controls.carries_reply for r in verbatim] == [None, "messages[2]"]
    # The arguments sent back re-serialized ('{"city":"Paris"}', no space): not verbatim.
    changed = read(_cassette(tmp_path, '{"city":"Paris"}', streamed=True)).requests
    assert [r.controls.carries_reply for r in changed] == [None, None]


def test_a_stream_of_several_choices_assembles_no_reply() -> None:
    two = {"choices": [{"index": 1, "delta": {"content": "other"}}]}
    assert streamed_message([{"choices": [{"index": 0, "delta": {"content": "a"}}]}, two]) is None
    # A call whose chunks name no type (Mistral's streams) is a function call.
    piece = {"index": 0, "id": "x", "function": {"name": "f", "arguments": "{}"}}
    events = [{"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [piece]}}]}]
    assert streamed_message(events) == {
        "role": "assistant",
        "tool_calls": [
            {"type": "function", "id": "x", "function": {"name": "f", "arguments": "{}"}}
        ],
    }


def test_a_streamed_reply_is_predicted_as_its_unstreamed_twin(
    tmp_path: Path, store: ContractStore
) -> None:
    # DeepSeek's guide (V4 rules): a cache prefix unit ends where the model's output ends,
    # whether the reply was streamed or not. The same exchange recorded both ways is
    # predicted alike; request 1 writes only its prompt's whole 128-token blocks, so a
    # predicted read of request 2 beyond that write comes from the reply held.
    streamed = rows(run(_cassette(tmp_path, "".join(ARGUMENTS), streamed=True), store))
    whole = rows(run(_cassette(tmp_path, "".join(ARGUMENTS), streamed=False), store))
    assert [row[1:] for row in streamed] == [row[1:] for row in whole]
    first_write, second_read = streamed[0][3], streamed[1][1]
    assert first_write is not None and second_read > first_write
