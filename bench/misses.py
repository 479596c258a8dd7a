"""Cost of explaining misses in the priced replay: hosted policies with and without it.

The same agent-shaped stream as ``bench.simulate`` (a few shared system prompts, growing
sessions; one request per second) is replayed through the priced replay of
``simulator.pricing`` under an automatic contract (OpenAI-style: 1,024 minimum, 128-token
steps) and an explicit one (Anthropic-style: a breakpoint at the end of every prompt), once
with ``explain=False`` (bills only) and once with ``explain=True`` (every request's unread
tokens attributed to causes: the prompt history plus each policy's ``explain``), in the same
run, alternating, best of ``--repeat``. Prints requests/s of each and the ratio.

    .venv/bin/python -m bench.misses [--requests 5000] [--repeat 3]
"""

from __future__ import annotations

import sys

if sys.path and sys.path[0].endswith("bench"):  # bench/tokenize.py shadows the stdlib one
    sys.path.pop(0)

import argparse
import dataclasses
import datetime as dt
import time
from array import array
from decimal import Decimal

from bench.simulate import agent_stream, as_request
from cachecast.contracts.model import CacheMode, ContractTerms, TtlOption
from cachecast.simulator.pricing import ObservedModelMatcher, Target, TargetTotals, replay_targets
from cachecast.tokenizers.types import Breakpoint, Segment, TokenizedRequest


def contract(mode: CacheMode) -> ContractTerms:
    explicit = mode is CacheMode.EXPLICIT
    return ContractTerms(
        provider="bench",
        model=mode.value,
        effective_from=dt.date(2026, 1, 1),
        verified_on=dt.date(2026, 1, 1),
        source="bench",
        mode=mode,
        min_cacheable_tokens=1024,
        increment_tokens=None if explicit else 128,
        lookback_blocks=20 if explicit else None,
        max_breakpoints=4 if explicit else None,
        ttl_options=(
            TtlOption(
                name="5m",
                ttl_seconds=300,
                refresh_on_hit=True,
                write_multiplier=Decimal("1.25") if explicit else Decimal(1),
            ),
        ),
        read_multiplier=Decimal("0.1"),
        input_per_mtok=Decimal(3),
        output_per_mtok=Decimal(15),
    )


def stream(requests: int, seed: int) -> list[TokenizedRequest]:
    found = []
    for index, (session, tokens) in enumerate(agent_stream(requests, seed)):
        ids = array("I", tokens)
        request = as_request(index, session, ids)
        found.append(
            dataclasses.replace(
                request,
                segments=(Segment("message", "prompt", 0, len(ids)),),
                breakpoints=(Breakpoint(len(ids)),),
            )
        )
    return found


class _Anyone(ObservedModelMatcher):
    def __init__(self) -> None:
        pass


def timed(requests: list[TokenizedRequest], mode: CacheMode, explain: bool) -> float:
    terms = contract(mode)
    totals = [TargetTotals(Target("bench", mode.value), terms, "bench")]
    started = time.process_time()
    replay_targets(iter(requests), totals, _Anyone(), None, None, False, explain=explain)
    return time.process_time() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args()
    requests = stream(args.requests, args.seed)
    tokens = sum(request.input_tokens for request in requests)
    print(f"stream: {len(requests):,} requests, {tokens:,} prompt tokens")
    for mode in (CacheMode.AUTOMATIC, CacheMode.EXPLICIT):
        best = {False: float("inf"), True: float("inf")}
        for _ in range(args.repeat):
            for explain in (False, True):
                best[explain] = min(best[explain], timed(requests, mode, explain))
        plain, explained = best[False], best[True]
        print(
            f"{mode.value:9s} bills only {len(requests) / plain:10,.0f} requests/s;"
            f" with miss causes {len(requests) / explained:10,.0f} requests/s;"
            f" ratio {plain / explained:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
