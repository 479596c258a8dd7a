"""The memories a reader and a replay keep to go faster forget what has been idle for an hour
of the log's time, so that they follow the traffic still going on, not the whole log
(``python -m bench.memory`` measures the peak on a log ten times longer), and the reorder
window holds a session's prompts as their new tokens. Checked by hand
on tiny inputs.
"""

from __future__ import annotations

import dataclasses
from array import array

from cachecast.simulator.blocks import REMEMBERED_IDLE_SECONDS, BlockKeyer
from cachecast.simulator.ordering import PromptPacker
from cachecast.tokenizers.encode import SegmentCache
from cachecast.tokenizers.types import TokenizedRequest


def test_segment_cache_forgets_parts_idle_for_an_hour_of_log_time() -> None:
    cache = SegmentCache(idle_seconds=3600)
    ids = array("I", [1, 2, 3])
    key_a, key_b, key_c = (("ns", None, (text,)) for text in "abc")
    cache.now = 0.0
    cache.put(key_a, ids)
    cache.now = 100.0
    cache.put(key_b, ids)
    cache.now = 200.0
    assert cache.get(key_a) is ids  # used at 200: idle from then on
    cache.now = 3750.0  # b was last used 3,650 s ago, a 3,550 s ago
    cache.put(key_c, ids)
    assert cache.get(key_b) is None
    assert cache.get(key_a) is ids and cache.get(key_c) is ids


def request(session: str, timestamp: float, tokens: list[int]) -> TokenizedRequest:
    return TokenizedRequest(
        source="t",
        line=1,
        request_id=session,
        timestamp=timestamp,
        scope="s",
        provider=None,
        model="m",
        input_tokens=len(tokens),
        output_tokens=0,
        tokens=tokens,
        session=session,
    )


def test_block_keyer_forgets_sessions_idle_for_an_hour_of_log_time() -> None:
    keyer = BlockKeyer(4)
    keyer.keys(request("one", 0.0, [1, 2, 3, 4]))
    keyer.keys(request("two", 1000.0, [5, 6, 7, 8]))
    keyer.keys(request("three", REMEMBERED_IDLE_SECONDS + 500.0, [9, 10, 11, 12]))
    # "one" was last seen 4,100 s before the latest request, "two" 3,100 s before.
    remembered = {key[1] for key in keyer._recent}
    assert remembered == {"two", "three"}


def ids(*values: int) -> array[int]:
    return array("I", values)


def test_the_reorder_window_holds_a_session_prompt_as_its_new_tokens() -> None:
    packer = PromptPacker()
    first = dataclasses.replace(request("a", 1.0, []), tokens=ids(1, 2, 3))
    second = dataclasses.replace(request("a", 2.0, []), tokens=ids(1, 2, 3, 4, 5))
    third = dataclasses.replace(request("a", 3.0, []), tokens=ids(1, 2, 3, 4, 5, 6))
    edited = dataclasses.replace(request("a", 4.0, []), tokens=ids(1, 9, 3, 4, 5, 6, 7))
    other = dataclasses.replace(request("b", 5.0, []), tokens=ids(1, 2, 3, 4))
    packed = [packer.pack(item) for item in (first, second, third, edited, other)]
    # The first prompt of a session, a prompt that does not extend the previous one and
    # another session's first prompt are held whole; the two extensions without their ids.
    assert [item.tokens is None for item in packed] == [False, True, True, False, False]
    # Let go in another order (a window sorts), each has its own ids again, exactly.
    originals = (first, second, third, edited, other)
    for original, held in reversed(list(zip(originals, packed, strict=True))):
        back = packer.unpack(held)
        assert back.tokens == original.tokens and back.request_id == original.request_id
    assert packer._held == {}


def test_the_packer_forgets_sessions_idle_for_an_hour_of_log_time() -> None:
    packer = PromptPacker()
    packer.pack(dataclasses.replace(request("a", 0.0, []), tokens=ids(1, 2)))
    packer.pack(dataclasses.replace(request("b", 1000.0, []), tokens=ids(1, 2)))
    late = REMEMBERED_IDLE_SECONDS + 500.0
    packer.pack(dataclasses.replace(request("c", late, []), tokens=ids(1, 2)))
    assert {session for _, (_, _, session) in packer._latest} == {"b", "c"}
    # "a" forgotten: its next prompt is held whole, never rebuilt from what is gone.
    again = packer.pack(dataclasses.replace(request("a", late + 1, []), tokens=ids(1, 2, 3)))
    assert again.tokens == ids(1, 2, 3)
