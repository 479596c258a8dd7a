"""DeepSeek's cache of generated replies (docs/predictions.md, "Replies DeepSeek caches").

DeepSeek's guide: each request leaves a cache prefix unit at the end of the model's output; a
next request carrying the reply back as generated reads the prompt and the reply. Observed
figures are the recordings' usage fields (``prompt_cache_hit_tokens``); the 64-token unit is
contracts-v5's (docs/contracts.md)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from cachecast.contracts import ContractStore
from cachecast.contracts.mechanics import caches_replies
from cachecast.logs.http.state import ApiState, carried_reply
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
    # prompt_cache_hit_tokens 896 = 64 x floor((875 + 79) / 64) = 64 x 14. Without the reply
    # cached the prediction was 832 = 64 x floor(875 / 64), 64 off.
    report = run(shared_data(PYDANTIC), store)
    third = rows(report)[2]
    assert (third[1], third[2]) == (896, 896)
    # RubyLLM, deepseek-chat on 2026-06-08: request 1 has prompt_tokens 407; request 2 carries
    # the reply re-serialized and reads 384 = 64 x floor(407 / 64): its previous prompt only.
    report = run(shared_data(RUBY), store)
    second = rows(report)[1]
    assert (second[1], second[2]) == (384, 384)


def test_only_deepseek_from_v4_caches_replies(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    assert caches_replies(store.as_of("deepseek", "deepseek-reasoner", dt.date(2026, 6, 10)))
    assert not caches_replies(store.as_of("deepseek", "deepseek-chat", dt.date(2026, 1, 10)))
    assert not caches_replies(store.as_of("openai", "gpt-4o", dt.date(2026, 6, 10)))
