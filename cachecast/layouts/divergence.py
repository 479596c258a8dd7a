"""Where a candidate's prompts first stop sharing a prefix with the baseline's.

Requests correspond by request id where both sides carry the same ids (a layout expands into
the same ids on both sides), otherwise by arrival order. Over every corresponding pair the
earliest first-differing token position is the divergence: every block from there on is a
different KV chain, whatever follows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cachecast.layouts.textview import Part, prompt_parts
from cachecast.tokenizers.types import Segment, TokenizedRequest

EXCERPT_BEFORE = 40
EXCERPT_AFTER = 80


@dataclass(frozen=True, slots=True)
class Divergence:
    request_id: str  # the candidate request where the earliest divergence is
    token_position: int | None  # None where a side has no token ids (block-key traces)
    segment_kind: str | None
    segment_label: str | None
    baseline_excerpt: str
    candidate_excerpt: str
    differing_requests: int
    compared_requests: int


def first_difference(left: Sequence[int], right: Sequence[int]) -> int | None:
    """Index of the first differing token; the shorter length when one is a prefix of the
    other; None when equal."""
    for index, (a, b) in enumerate(zip(left, right, strict=False)):
        if a != b:
            return index
    if len(left) != len(right):
        return min(len(left), len(right))
    return None


def segment_at(segments: Sequence[Segment], position: int) -> Segment | None:
    for segment in segments:
        if segment.start <= position < segment.end:
            return segment
    # Past the last segment (template tokens closing the prompt): the last one that started.
    started = [segment for segment in segments if segment.start <= position]
    return started[-1] if started else None


def _excerpt(text: str, at: int) -> str:
    start = max(0, at - EXCERPT_BEFORE)
    end = min(len(text), at + EXCERPT_AFTER)
    return ("…" if start > 0 else "") + text[start:end] + ("…" if end < len(text) else "")


def _first_text_difference(
    baseline: list[Part], candidate: list[Part]
) -> tuple[int, Part | None, Part | None, int] | None:
    """(part index, baseline part, candidate part, character offset) of the first textual
    difference in prompt order, or None when the prompts read the same."""
    for index in range(max(len(baseline), len(candidate))):
        left = baseline[index] if index < len(baseline) else None
        right = candidate[index] if index < len(candidate) else None
        if (
            left is not None
            and right is not None
            and left.label == right.label
            and left.text == right.text
        ):
            continue
        left_text = left.text if left else ""
        right_text = right.text if right else ""
        offset = first_difference([ord(c) for c in left_text], [ord(c) for c in right_text]) or 0
        return index, left, right, offset
    return None


def _comparable(left: TokenizedRequest, right: TokenizedRequest) -> bool:
    both_tokens = left.tokens is not None and right.tokens is not None
    both_blocks = left.block_keys is not None and right.block_keys is not None
    return both_tokens or (both_blocks and left.block_size == right.block_size)


def _token_divergence(left: TokenizedRequest, right: TokenizedRequest) -> int | None:
    """First differing token; for block-key traces (Mooncake) the first token of the first
    differing block, or the shorter prompt's length when one chain extends the other."""
    if left.tokens is not None and right.tokens is not None:
        return first_difference(left.tokens, right.tokens)
    if _comparable(left, right):
        assert left.block_keys is not None and right.block_keys is not None
        block = first_difference(left.block_keys, right.block_keys)
        if block is not None:
            return min(block * (left.block_size or 1), left.input_tokens, right.input_tokens)
        if left.input_tokens != right.input_tokens:
            return min(left.input_tokens, right.input_tokens)
    return None


def pair_requests(
    baseline: Sequence[dict[str, Any]], candidate: Sequence[dict[str, Any]]
) -> list[tuple[int, int]]:
    """Index pairs of corresponding records: by request id when both sides share ids."""

    def ids(records: Sequence[dict[str, Any]]) -> list[str | None]:
        return [str(r["request_id"]) if "request_id" in r else None for r in records]

    left_ids, right_ids = ids(baseline), ids(candidate)
    if None not in left_ids and None not in right_ids and set(left_ids) & set(right_ids):
        where = {request_id: index for index, request_id in enumerate(left_ids)}
        return [(where[rid], j) for j, rid in enumerate(right_ids) if rid in where]
    return [(i, i) for i in range(min(len(baseline), len(candidate)))]


def find_divergence(
    baseline_records: Sequence[dict[str, Any]],
    candidate_records: Sequence[dict[str, Any]],
    baseline_tokens: Sequence[TokenizedRequest] | None = None,
    candidate_tokens: Sequence[TokenizedRequest] | None = None,
) -> Divergence | None:
    """The earliest divergence over corresponding requests, or None when they are identical.

    ``*_tokens`` are the same records tokenized (same order as the records); without them
    (or without token ids) the divergence is located in text only.
    """
    pairs = pair_requests(baseline_records, candidate_records)
    with_tokens = (
        baseline_tokens is not None
        and candidate_tokens is not None
        and len(baseline_tokens) == len(baseline_records)
        and len(candidate_tokens) == len(candidate_records)
    )
    best: tuple[tuple[int, int], int, int | None] | None = None  # (sort key, pair index, token pos)
    differing = 0
    for pair_index, (i, j) in enumerate(pairs):
        token_position: int | None = None
        if with_tokens:
            assert baseline_tokens is not None and candidate_tokens is not None
            if _comparable(baseline_tokens[i], candidate_tokens[j]):
                token_position = _token_divergence(baseline_tokens[i], candidate_tokens[j])
                if token_position is None:
                    continue
                differing += 1
                key = (token_position, pair_index)
                if best is None or key < best[0]:
                    best = (key, pair_index, token_position)
                continue
        text = _first_text_difference(
            prompt_parts(baseline_records[i]), prompt_parts(candidate_records[j])
        )
        if text is None:
            continue
        differing += 1
        # Without token ids, order by (part index, character offset) as a stand-in.
        key = (text[0] * 1_000_000 + text[3], pair_index)
        if best is None or key < best[0]:
            best = (key, pair_index, None)
    if best is None:
        return None

    _, pair_index, token_position = best
    i, j = pairs[pair_index]
    segment: Segment | None = None
    if token_position is not None and candidate_tokens is not None:
        segment = segment_at(candidate_tokens[j].segments, token_position)
    text = _first_text_difference(
        prompt_parts(baseline_records[i]), prompt_parts(candidate_records[j])
    )
    baseline_excerpt = candidate_excerpt = ""
    label = segment.label if segment else None
    kind = segment.kind if segment else None
    if text is not None:
        _, left, right, offset = text
        baseline_excerpt = _excerpt(left.text, offset) if left else "(absent)"
        candidate_excerpt = _excerpt(right.text, offset) if right else "(absent)"
        if label is None:
            part = right or left
            assert part is not None
            label, kind = part.label, part.kind
    elif token_position is not None and candidate_tokens is not None:
        block_size = candidate_tokens[j].block_size
        if candidate_tokens[j].block_keys is not None and block_size:
            note = f"(block-key trace, no text: block {token_position // block_size} differs)"
            baseline_excerpt = candidate_excerpt = note
    request_id = str(candidate_records[j].get("request_id", f"#{j + 1}"))
    return Divergence(
        request_id=request_id,
        token_position=token_position,
        segment_kind=kind,
        segment_label=label,
        baseline_excerpt=baseline_excerpt,
        candidate_excerpt=candidate_excerpt,
        differing_requests=differing,
        compared_requests=len(pairs),
    )
