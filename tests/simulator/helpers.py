"""Small builders for hand-written request streams."""

from __future__ import annotations

from collections.abc import Sequence

from cachecast.tokenizers.types import Breakpoint, Segment, TokenizedRequest


def make_request(
    tokens: Sequence[int],
    *,
    at: float = 0.0,
    scope: str = "org",
    model: str | None = "m",
    request_id: str = "r",
    line: int = 1,
    segments: Sequence[Segment] = (),
    breakpoints: Sequence[Breakpoint] = (),
    session: str | None = None,
) -> TokenizedRequest:
    return TokenizedRequest(
        source="test.jsonl",
        line=line,
        request_id=request_id,
        timestamp=at,
        scope=scope,
        provider=None,
        model=model,
        input_tokens=len(tokens),
        output_tokens=1,
        tokens=list(tokens),
        segments=tuple(segments),
        breakpoints=tuple(breakpoints),
        session=session,
    )


def make_trace_request(
    block_ids: Sequence[int],
    input_tokens: int,
    *,
    block_size: int = 512,
    at: float = 0.0,
    scope: str = "org",
    line: int = 1,
) -> TokenizedRequest:
    return TokenizedRequest(
        source="trace.jsonl",
        line=line,
        request_id=f"line{line}",
        timestamp=at,
        scope=scope,
        provider=None,
        model=None,
        input_tokens=input_tokens,
        output_tokens=1,
        block_keys=list(block_ids),
        block_size=block_size,
    )


def run(tokens: int, first: int) -> list[int]:
    """``tokens`` distinct token ids starting at ``first`` (distinct runs never match)."""
    return list(range(first, first + tokens))
