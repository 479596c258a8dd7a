"""Compact requests (keys instead of token ids) replay exactly as the full requests do.

The claim is equality: every policy gives every request the same usage whether it reads the
token ids or the keys a tokenizing worker computed from them. The example agent log has
growing sessions (hits to lose); breakpoints are added at segment ends so that the explicit
and cached-content policies have entries to look up, with both of a contract's TTLs.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import pickle
from collections.abc import Callable

import pytest

from cachecast.contracts import ContractStore
from cachecast.simulator.compact import Compactor, key_needs
from cachecast.simulator.policies import CachePolicy, build_policy, policy_for_contract
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers import read_log
from cachecast.tokenizers.types import Breakpoint, TokenizedRequest
from tests.conftest import REPO_ROOT

AT = dt.date(2026, 11, 1)
EXAMPLE = REPO_ROOT / "examples" / "agent-log.jsonl"


def with_breakpoints(
    requests: list[TokenizedRequest], ttl: str, latest: bool
) -> list[TokenizedRequest]:
    """A breakpoint after the system segment (the contract's last TTL) on every request,
    and (``latest``) one at the end of the latest message (default TTL). Cached content
    is the prefix up to the last breakpoint: it can be shared only without ``latest``."""
    marked = []
    for request in requests:
        system_end = next(s.end for s in request.segments if s.kind == "system")
        points = [Breakpoint(system_end, ttl)]
        if latest:
            points.append(
                Breakpoint(max(s.end for s in request.segments if s.kind in ("message", "content")))
            )
        marked.append(dataclasses.replace(request, breakpoints=tuple(points)))
    return marked


def replays(
    policy: Callable[[], CachePolicy], requests: list[TokenizedRequest]
) -> list[RequestUsage]:
    made = policy()
    return [made.process(request) for request in requests]


@pytest.fixture(scope="module")
def example_requests() -> list[TokenizedRequest]:
    return list(read_log(EXAMPLE, model="gpt-4o"))


@pytest.mark.parametrize(
    ("provider", "model", "latest"),
    [
        ("openai", "gpt-4o", True),  # automatic, 128-token blocks
        ("anthropic", "claude-sonnet-4-5", True),  # explicit breakpoints, 5m and 1h
        ("azure", "gpt-5.6", False),  # explicit plus the implicit one at the latest message
        ("google", "gemini-2.5-flash", False),  # implicit plus storage-billed cached content
    ],
)
def test_compact_requests_replay_as_the_full_ones(
    migrated_db_url: str,
    example_requests: list[TokenizedRequest],
    provider: str,
    model: str,
    latest: bool,
) -> None:
    contract = ContractStore(migrated_db_url).as_of(provider, model, AT)
    requests = with_breakpoints(example_requests, contract.ttl_options[-1].name, latest)
    needs = key_needs([policy_for_contract(contract)])
    compactor = Compactor(needs)
    compact = [compactor.compact(request) for request in requests]
    assert all(request.tokens is None and request.prompt_keys for request in compact)

    full_usages = replays(lambda: policy_for_contract(contract), requests)
    compact_usages = replays(lambda: policy_for_contract(contract), compact)
    assert compact_usages == full_usages
    assert sum(usage.cache_read_tokens for usage in full_usages) > 0  # hits to lose
    # What travels: a small fraction of the ids' pickled size.
    assert len(pickle.dumps(compact)) * 4 < len(pickle.dumps(requests))


def test_vllm_reads_block_keys_and_radix_gets_the_full_requests(
    example_requests: list[TokenizedRequest],
) -> None:
    vllm = lambda: build_policy("vllm", None, block_size=16)  # noqa: E731
    compactor = Compactor(key_needs([vllm()]))
    compact = [compactor.compact(request) for request in example_requests]
    assert replays(vllm, compact) == replays(vllm, example_requests)

    radix = build_policy("radix", None)
    needs = key_needs([radix])
    assert needs.tokens  # radix matches token by token: nothing to compact
    kept = Compactor(needs).compact(example_requests[0])
    assert kept is example_requests[0]


def test_a_policy_asking_for_keys_the_request_does_not_carry_is_refused(
    example_requests: list[TokenizedRequest],
) -> None:
    compact = Compactor(key_needs([build_policy("vllm", None, block_size=16)])).compact(
        example_requests[0]
    )
    with pytest.raises(ValueError, match="carries no 32-token block keys"):
        build_policy("vllm", None, block_size=32).process(compact)
