"""Ids shipped to a replayer as a session's new ids only come back exactly, channel by channel.

A sender (``PromptPacker.extension``) packs each request against its session's previous
prompt *in the same channel* (a shuffle bucket); a receiver fed one channel's requests in
the sender's order rebuilds every prompt's ids. Checked by hand on tiny prompts.
"""

from __future__ import annotations

import dataclasses
import pickle
from array import array

import pytest

from cachecast.simulator.ordering import Extension, ExtensionReceiver, PromptPacker, RebuiltIds
from cachecast.tokenizers.types import TokenizedRequest
from tests.distributed.conftest import shipped_request


def request(session: str | None, line: int, *ids: int) -> TokenizedRequest:
    return shipped_request(session, line, ids=ids)


def shipped(
    request: TokenizedRequest, packer: PromptPacker, channel: int
) -> tuple[TokenizedRequest, int]:
    node = packer.extension(request, channel)
    if node is None or node.parent is None:
        return request, 0
    return dataclasses.replace(request, tokens=node.tail), node.parent.length


def test_a_session_travels_as_its_new_ids_and_comes_back_whole() -> None:
    sent = [
        (request("a", 1, 1, 2, 3), 0),
        (request("a", 2, 1, 2, 3, 4, 5), 0),  # extends line 1: ships 4, 5
        (request("b", 3, 1, 2, 3), 0),  # another session's first prompt: whole
        (request("a", 4, 1, 2, 3, 4, 5, 6), 1),  # another channel: whole there
        (request("a", 5, 1, 2, 3, 4, 5, 7), 0),  # extends line 2 (channel 0's latest)
        (request("a", 6, 1, 9), 0),  # does not extend line 5: whole
        (request(None, 7, 1, 2), 0),  # no session: as it is
    ]
    packer = PromptPacker()
    wire = [(shipped(item, packer, channel), channel) for item, channel in sent]
    tails = [list(item.tokens or ()) for (item, _), _ in wire]
    assert tails == [[1, 2, 3], [4, 5], [1, 2, 3], [1, 2, 3, 4, 5, 6], [7], [1, 9], [1, 2]]
    assert [extends for (_, extends), _ in wire] == [0, 3, 0, 0, 5, 0, 0]
    receivers = {0: ExtensionReceiver(), 1: ExtensionReceiver()}
    for ((item, extends), channel), (original, _) in zip(wire, sent, strict=True):
        # Through pickle, as the object store carries it.
        arrived = pickle.loads(pickle.dumps(item))
        chain = receivers[channel].receive(arrived, extends, stream="part-0")
        back = original.tokens if chain is None else chain.ids()
        assert list(back or ()) == list(original.tokens or ())


def test_an_extension_whose_prompt_did_not_arrive_is_refused() -> None:
    packer = PromptPacker()
    shipped(request("a", 1, 1, 2, 3), packer, 0)
    item, extends = shipped(request("a", 2, 1, 2, 3, 4), packer, 0)
    assert extends == 3
    with pytest.raises(ValueError, match=r"log\.jsonl:2: packed as an extension of 3 ids"):
        ExtensionReceiver().receive(item, extends, stream="part-0")
    # Another sender's (part's) chain is not this one's.
    receiver = ExtensionReceiver()
    receiver.receive(request("a", 1, 1, 2, 3), 0, stream="part-1")
    with pytest.raises(ValueError, match="not received before it"):
        receiver.receive(item, extends, stream="part-0")


def test_ids_rebuilt_in_replay_order_equal_the_chains_walked() -> None:
    # Chains by hand: a session a of three prompts, b of two, interleaved as a replay
    # meets them; the rebuilder keeps at most two chains' latest ids.
    a1 = Extension(None, array("I", [1, 2]), 0, 2)
    a2 = a1.extend(array("I", [3]))
    b1 = Extension(None, array("I", [7]), 0, 1)
    b2 = b1.extend(array("I", [8, 9]))
    a3 = a2.extend(array("I", [4, 5]))
    rebuilt = RebuiltIds(chains=2)
    expected = [[1, 2], [1, 2, 3], [7], [7, 8, 9], [1, 2, 3, 4, 5]]
    got = [list(rebuilt.ids(node)) for node in (a1, a2, b1, b2, a3)]
    assert got == expected
    # Room for one chain: b1 pushes a1's ids out, so a2 is its chain walked, a3 built on it.
    fresh = RebuiltIds(chains=1)
    assert [list(fresh.ids(node)) for node in (a1, b1, a2, a3)] == [
        [1, 2],
        [7],
        [1, 2, 3],
        [1, 2, 3, 4, 5],
    ]
