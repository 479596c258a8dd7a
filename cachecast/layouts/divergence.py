"""Where a candidate's prompts first stop sharing a prefix with the baseline's.

Requests correspond by request id where both sides carry the same ids (a layout expands into
the same ids on both sides), otherwise by arrival order. Over every corresponding pair the
earliest first-differing token position is the divergence: every block from there on is a
different KV chain, whatever follows.

Both sides are streamed side by side: a request waits only until its counterpart comes (by
id, a window as wide as the two orders are apart; by order, none), and only pairs whose
records differ are tokenized, a batch at a time. Identical records have identical tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from cachecast.layouts.textview import Part, prompt_parts
from cachecast.tokenizers.types import Segment, TokenizedRequest

EXCERPT_BEFORE = 40
EXCERPT_AFTER = 80


@dataclass(frozen=True, slots=True)
class SegmentName:
    """Which segment of a prompt: its kind (``system``) and label (``messages[0]``)."""

    kind: str | None
    label: str | None


@dataclass(frozen=True, slots=True)
class Divergence:
    request_id: str  # the candidate request where the earliest divergence is
    token_position: int | None  # None where a side has no token ids (block-key traces)
    segment: SegmentName
    baseline_text: str  # excerpts of both sides around the first differing character
    candidate_text: str
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


# Records tokenized one per record, in order (None where one cannot be).
Tokenize = Callable[[Sequence[dict[str, Any]]], list[TokenizedRequest | None]]
TOKENIZE_BATCH = 64  # differing pairs tokenized together (tiktoken encodes a batch at once)


def _request_id(record: dict[str, Any]) -> str | None:
    return str(record["request_id"]) if "request_id" in record else None


def _all_have_ids(records: Iterable[dict[str, Any]]) -> bool:
    return all("request_id" in record for record in records)


def _pairs_by_id(
    baseline: Iterable[dict[str, Any]], candidate: Iterable[dict[str, Any]]
) -> Iterator[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(candidate index, baseline record, candidate record) for every candidate request
    whose id the baseline has, read side by side; a request waits until its counterpart
    comes (a repeated id pairs with the first unpaired request of that id)."""
    waiting_left: dict[str, list[dict[str, Any]]] = {}
    waiting_right: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    done: list[tuple[int, dict[str, Any], dict[str, Any]]] = []
    left, right = iter(baseline), enumerate(candidate)
    left_open = right_open = True
    while left_open or right_open:
        if left_open:
            record = next(left, None)
            if record is None:
                left_open = False
            else:
                key = str(record["request_id"])
                queue = waiting_right.get(key)
                if queue:
                    index, other = queue.pop(0)
                    done.append((index, record, other))
                else:
                    waiting_left.setdefault(key, []).append(record)
        if right_open:
            item = next(right, None)
            if item is None:
                right_open = False
            else:
                index, record = item
                key = str(record["request_id"])
                found = waiting_left.get(key)
                if found:
                    done.append((index, found.pop(0), record))
                else:
                    waiting_right.setdefault(key, []).append((index, record))
        yield from done
        done.clear()


def _pairs_in_order(
    baseline: Iterable[dict[str, Any]], candidate: Iterable[dict[str, Any]]
) -> Iterator[tuple[int, dict[str, Any], dict[str, Any]]]:
    for index, (left, right) in enumerate(zip(baseline, candidate, strict=False)):
        yield index, left, right


@dataclass(slots=True)
class _Best:
    """The earliest divergence so far: (position key, candidate index), the pair, tokens."""

    key: tuple[int, int]
    index: int
    baseline: dict[str, Any]
    candidate: dict[str, Any]
    token_position: int | None
    candidate_tokens: TokenizedRequest | None


class _Finder:
    def __init__(self, tokenize: Tokenize | None) -> None:
        self.tokenize = tokenize
        self.best: _Best | None = None
        self.compared = 0
        self.differing = 0
        self.batch: list[tuple[int, dict[str, Any], dict[str, Any]]] = []

    def add(self, index: int, left: dict[str, Any], right: dict[str, Any]) -> None:
        self.compared += 1
        if left == right:
            return  # the same record: the same tokens and text, no divergence
        self.batch.append((index, left, right))
        if len(self.batch) >= TOKENIZE_BATCH:
            self.flush()

    def flush(self) -> None:
        batch, self.batch = self.batch, []
        if not batch:
            return
        lefts: list[TokenizedRequest | None] = [None] * len(batch)
        rights: list[TokenizedRequest | None] = [None] * len(batch)
        if self.tokenize is not None:
            lefts = self.tokenize([left for _, left, _ in batch])
            rights = self.tokenize([right for _, _, right in batch])
        for (index, left, right), left_tokens, right_tokens in zip(
            batch, lefts, rights, strict=True
        ):
            self._judge(index, left, right, left_tokens, right_tokens)

    def _judge(
        self,
        index: int,
        left: dict[str, Any],
        right: dict[str, Any],
        left_tokens: TokenizedRequest | None,
        right_tokens: TokenizedRequest | None,
    ) -> None:
        if (
            left_tokens is not None
            and right_tokens is not None
            and _comparable(left_tokens, right_tokens)
        ):
            position = _token_divergence(left_tokens, right_tokens)
            if position is None:
                return
            self._consider((position, index), index, left, right, position, right_tokens)
            return
        text = _first_text_difference(prompt_parts(left), prompt_parts(right))
        if text is None:
            return
        # Without token ids, order by (part index, character offset) as a stand-in.
        self._consider((text[0] * 1_000_000 + text[3], index), index, left, right, None, None)

    def _consider(
        self,
        key: tuple[int, int],
        index: int,
        left: dict[str, Any],
        right: dict[str, Any],
        position: int | None,
        tokens: TokenizedRequest | None,
    ) -> None:
        self.differing += 1
        if self.best is None or key < self.best.key:
            self.best = _Best(key, index, left, right, position, tokens)


def find_divergence(
    baseline_records: Iterable[dict[str, Any]],
    candidate_records: Iterable[dict[str, Any]],
    tokenize: Tokenize | None = None,
) -> Divergence | None:
    """The earliest divergence over corresponding requests, or None when they are identical.

    Both record iterables are read once or twice (ids are looked at first), so they must give
    the same records each time (a list, or an ``passes.log_input.RecordStream``). ``tokenize`` turns
    records into tokenized requests; without it (or without token ids) the divergence is
    located in text only.
    """
    finder = _Finder(tokenize)
    by_id = _all_have_ids(baseline_records) and _all_have_ids(candidate_records)
    if by_id:
        for index, left, right in _pairs_by_id(baseline_records, candidate_records):
            finder.add(index, left, right)
        finder.flush()
    if not by_id or finder.compared == 0:  # no id in common: pair by arrival order
        finder = _Finder(tokenize)
        for index, left, right in _pairs_in_order(baseline_records, candidate_records):
            finder.add(index, left, right)
        finder.flush()
    best = finder.best
    if best is None:
        return None
    segment: Segment | None = None
    if best.token_position is not None and best.candidate_tokens is not None:
        segment = segment_at(best.candidate_tokens.segments, best.token_position)
    text = _first_text_difference(prompt_parts(best.baseline), prompt_parts(best.candidate))
    baseline_excerpt = candidate_excerpt = ""
    label = segment.label if segment else None
    kind = segment.kind if segment else None
    if text is not None:
        _, left_part, right_part, offset = text
        baseline_excerpt = _excerpt(left_part.text, offset) if left_part else "(absent)"
        candidate_excerpt = _excerpt(right_part.text, offset) if right_part else "(absent)"
        if label is None:
            part = right_part or left_part
            assert part is not None
            label, kind = part.label, part.kind
    elif best.token_position is not None and best.candidate_tokens is not None:
        block_size = best.candidate_tokens.block_size
        if best.candidate_tokens.block_keys is not None and block_size:
            note = f"(block-key trace, no text: block {best.token_position // block_size} differs)"
            baseline_excerpt = candidate_excerpt = note
    request_id = _request_id(best.candidate) or f"#{best.index + 1}"
    return Divergence(
        request_id=request_id,
        token_position=best.token_position,
        segment=SegmentName(kind=kind, label=label),
        baseline_text=baseline_excerpt,
        candidate_text=candidate_excerpt,
        differing_requests=finder.differing,
        compared_requests=finder.compared,
    )
