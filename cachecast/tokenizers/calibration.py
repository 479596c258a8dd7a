"""Calibrated approximate tokenization: segment lengths scaled to what the provider counted.

Providers without a public tokenizer (Anthropic, Gemini, Bedrock, DeepSeek...) are tokenized
with o200k_base as an approximation (``registry``). Their usage reports the true prompt
length, and where a breakpoint falls relative to the minimum cacheable length decides
whether anything is cached at all, so the approximation is calibrated against that count:

- **Scaling, not padding.** A request's text tokens are scaled by one ratio so that the
  request's total equals the observed count; breakpoints and segment boundaries move with
  them (a breakpoint at the end of a message lands where the provider put it, and the
  minimum is judged there). Framing tokens (the chat framing specials and the role before
  ``<message>``, the reply priming) and placeholders of non-text inputs (documented fixed
  counts) are not text and keep their count.
- **Equal content, equal length.** A segment whose content was already sized keeps that
  size in every later request that shares its cache (:class:`Calibrator` remembers it by
  a hash of its ids), so prefixes shared across requests stay identical token for token
  and can be matched; only the segments a request brings first are scaled to meet its
  count. A repeat whose count differs from the sizes already fixed puts the difference in
  its last text segment (that request only).
- **One calibrator per cache.** The sources of a run that share its cache (files with
  timestamps, records given inline) share one calibrator, so that a prefix one file
  writes and another reads has one length in both; a file without timestamps, which keeps
  a cache of its own, keeps a calibrator of its own, chosen when its first record is read
  (``passes.log_input.LogReading``). Sizes follow the order the records are read in: the
  files' first batches in the order the files are given, then as the merge by timestamp
  reads on; the first count to size a segment decides its size everywhere after. A
  distributed pass reads such files in one task, in that order (``passes.ray``), so that
  they read the same wherever they are read. (``tokenize`` lists the files one after the
  other and calibrates them in that order: the same sizes as a replay unless files that
  share content hold more than one batch of records each.)
- **A per-model ratio.** Every request with usage gives a sample ``(observed - fixed) /
  approximate text`` for its logged model; requests without usage get their model's
  (text-weighted) mean ratio, or their family's where the model itself has none yet.
  Streaming: the ratio is what the requests read so far taught, the usage-bearing records of
  the reader's current batch (256 records) included, since they are calibrated first. Before
  any usage was seen a record keeps the raw approximation (ratio 1, counted as
  ``uncalibrated``); the sizes it fixed are provisional and the first request with usage
  containing those segments sizes them again.
- **Not learned from**: a request whose prompt the log does not hold whole
  (``prompt_complete`` false; it is still fitted to its own count), and a sample outside
  :data:`PLAUSIBLE_RATIO` (``implausible``: the logged text is not the text sent: a
  rewritten body, a hidden prompt); later requests keep their sizes all the same.
- A record is fitted to its own count only when its logged model is of the family the pass
  tokenizes as (``tokenizer_family``): Gemini's count says nothing about Claude's tokens.

Results stay marked approximate (``TokenizedRequest.exact`` is False): the total is the
provider's, the positions inside it are an estimate whose spread the report gives.
"""

from __future__ import annotations

import dataclasses
import math
import re
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from xxhash import xxh3_128_digest

from cachecast.tokenizers.base import NON_TEXT_ID_BASE
from cachecast.tokenizers.sequences import common_prefix_length
from cachecast.tokenizers.types import Breakpoint, Segment

PLAUSIBLE_RATIO = (Fraction(1, 2), Fraction(2))
MAX_REMEMBERED_SEGMENTS = 1 << 20
MAX_BUILT_BYTES = 128 << 20  # calibrated segment ids kept for reuse (oldest dropped)
OPENING_BYTES = 256  # a request is compared with the latest calibrated one opening alike
REMEMBERED_REQUESTS = 256
_FAMILIES = (
    "claude",
    "gemini",
    "deepseek",
    "grok",
    "kimi",
    "moonshot",
    "nova",
    "qwen",
    "mistral",
    "llama",
    "gpt",
)

FITTED = "calibrated to usage"
RATIO_APPLIED = "calibrated by the learned ratio"
UNCALIBRATED = "uncalibrated"


def tokenizer_family(model: str | None) -> str | None:
    """The tokenizer family a model id belongs to (``claude`` for ``us.anthropic.claude-*``
    and ``claude-3-5-sonnet``), the id itself where no family is known."""
    if model is None:
        return None
    name = model.strip().lower()
    for family in _FAMILIES:
        if re.search(rf"(^|[./:_-]){family}", name):
            return "kimi" if family == "moonshot" else family
    return name


@dataclass(slots=True)
class RatioStats:
    """What one model's requests with usage taught: their ratios and how they were used."""

    samples: int = 0
    text_approximate: int = 0  # approximate text tokens of the sampled requests
    text_observed: int = 0  # observed minus fixed tokens of the same requests
    ratio_sum: float = 0.0
    ratio_square_sum: float = 0.0
    ratio_min: Fraction | None = None
    ratio_max: Fraction | None = None
    fitted: int = 0  # requests scaled to their own observed count
    ratio_applied: int = 0  # requests without usage scaled by the learned ratio
    uncalibrated: int = 0  # requests without usage before any ratio was known
    implausible: int = 0  # samples outside PLAUSIBLE_RATIO (not learned from)
    incomplete: int = 0  # fitted requests whose prompt the log does not hold whole

    def add(self, approximate: int, observed: int) -> None:
        ratio = Fraction(observed, approximate)
        self.samples += 1
        self.text_approximate += approximate
        self.text_observed += observed
        self.ratio_sum += float(ratio)
        self.ratio_square_sum += float(ratio) ** 2
        self.ratio_min = ratio if self.ratio_min is None else min(self.ratio_min, ratio)
        self.ratio_max = ratio if self.ratio_max is None else max(self.ratio_max, ratio)

    def merge(self, other: RatioStats) -> None:
        """Add ``other``'s requests (another file's) to these."""
        self.samples += other.samples
        self.text_approximate += other.text_approximate
        self.text_observed += other.text_observed
        self.ratio_sum += other.ratio_sum
        self.ratio_square_sum += other.ratio_square_sum
        for bound, pick in (("ratio_min", min), ("ratio_max", max)):
            mine, theirs = getattr(self, bound), getattr(other, bound)
            setattr(
                self,
                bound,
                theirs if mine is None else mine if theirs is None else pick(mine, theirs),
            )
        self.fitted += other.fitted
        self.ratio_applied += other.ratio_applied
        self.uncalibrated += other.uncalibrated
        self.implausible += other.implausible
        self.incomplete += other.incomplete

    @property
    def ratio(self) -> Fraction | None:
        """Text-weighted mean ratio (observed text tokens / approximate text tokens)."""
        if not self.text_approximate:
            return None
        return Fraction(self.text_observed, self.text_approximate)

    @property
    def stdev(self) -> float:
        """Population standard deviation of the per-request ratios."""
        if self.samples < 2:
            return 0.0
        mean = self.ratio_sum / self.samples
        return math.sqrt(max(0.0, self.ratio_square_sum / self.samples - mean * mean))

    @property
    def relative_spread(self) -> float:
        """Half the range of the per-request ratios, relative to the mean ratio: how far a
        position calibrated with the mean may sit from where a request's own ratio puts it."""
        ratio = self.ratio
        if ratio is None or self.ratio_min is None or self.ratio_max is None:
            return 0.0
        return float((self.ratio_max - self.ratio_min) / 2 / ratio)


def merged(groups: list[dict[str, RatioStats]]) -> dict[str, RatioStats]:
    """Per-model statistics of several calibrators (one per file) added up."""
    total: dict[str, RatioStats] = {}
    for group in groups:
        for model, stats in group.items():
            total.setdefault(model, RatioStats()).merge(stats)
    return total


@dataclass(frozen=True, slots=True)
class Fitted:
    """A request's calibrated ids, segments and breakpoints, and how it was calibrated."""

    tokens: array[int]
    segments: tuple[Segment, ...]
    breakpoints: tuple[Breakpoint, ...]
    how: str
    offsets: tuple[int, ...] = ()  # the caller's other offsets, calibrated


@dataclass(slots=True)
class _Piece:
    """One segment of the request: its id slice, fixed and text counts, memo key."""

    segment: Segment
    key: bytes
    prefix: int  # leading fixed tokens (framing up to <message>)
    suffix: int  # trailing fixed tokens (<end>)
    placeholders: int  # non-text placeholder ids inside the text
    text: int  # approximate text tokens
    sized: int | None = None  # calibrated text tokens


@dataclass(frozen=True, slots=True)
class _Recent:
    """A calibrated request, for the next request of its conversation to take over."""

    data: bytes  # the approximate ids
    pieces: list[_Piece]
    fitted: array[int]
    segments: list[Segment]
    anchors: list[tuple[int, int, int, int, int, int]]


SIZE_GUESSED, SIZE_FITTED, SIZE_FIRM = 0, 1, 2  # no count; fitted, not learned; learned


@dataclass(slots=True)
class _Remembered:
    text: int
    level: int  # how the size was decided: SIZE_GUESSED, SIZE_FITTED or SIZE_FIRM


@dataclass(slots=True)
class Calibrator:
    """Calibration state of the sources of one pass that share a cache: see the module text.

    ``tokenize_as`` is the model the pass tokenizes every record as (None: each record as
    its own model); ``framing`` the start / message / end special ids of its framing."""

    tokenize_as: str | None = None
    max_remembered: int = MAX_REMEMBERED_SEGMENTS
    models: dict[str, RatioStats] = field(default_factory=dict)
    _sizes: OrderedDict[bytes, _Remembered] = field(default_factory=OrderedDict)
    _shapes: dict[bytes, tuple[int, int, int, int]] = field(default_factory=dict)
    _built: dict[tuple[bytes, int], bytes] = field(default_factory=dict)
    _built_bytes: int = 0
    _recent: OrderedDict[bytes, _Recent] = field(default_factory=OrderedDict)

    def compatible(self, logged_model: str | None, tokenized_as: str | None) -> bool:
        """Whether a record's observed count is a count of the tokenizer being estimated."""
        if logged_model is None or tokenized_as is None:
            return True
        return tokenizer_family(logged_model) == tokenizer_family(tokenized_as)

    def stats(self, model: str | None) -> RatioStats:
        name = (model or "").lower()
        found = self.models.get(name)
        if found is None:
            found = self.models[name] = RatioStats()
        return found

    def ratio_for(self, model: str | None) -> Fraction | None:
        """The ratio a request of ``model`` without usage is scaled by: its model's, else the
        mean over the models of its family, else None (nothing learned yet)."""
        own = self.models.get((model or "").lower())
        if own is not None and own.ratio is not None:
            return own.ratio
        family = tokenizer_family(model)
        observed = approximate = 0
        for name, stats in self.models.items():
            if tokenizer_family(name or None) == family:
                observed += stats.text_observed
                approximate += stats.text_approximate
        return Fraction(observed, approximate) if approximate else None

    def fit(
        self,
        tokens: Sequence[int],
        segments: Sequence[Segment],
        breakpoints: Sequence[Breakpoint],
        *,
        model: str | None,
        observed_count: int | None,
        complete: bool,
        framing: tuple[int, int, int],
        offsets: Sequence[int] = (),
    ) -> Fitted:
        """Calibrate one approximately tokenized request (see the module docstring).

        ``observed_count``: the provider's prompt length where the record reports one and
        the record's model is compatible (:meth:`compatible`), else None."""
        data = tokens if isinstance(tokens, array) else array("I", tokens)
        raw = memoryview(data).cast("B") if len(data) else memoryview(b"")
        whole = data.tobytes()
        opening = whole[:OPENING_BYTES]
        previous = self._recent.get(opening)
        reused = 0
        if previous is not None:
            # A conversation's next request: the leading segments it shares with the previous
            # one need no hashing, no analysis and, sized alike, no building.
            common = common_prefix_length(previous.data, whole)
            limit = min(len(segments), len(previous.pieces))
            while (
                reused < limit
                and segments[reused] == previous.pieces[reused].segment
                and segments[reused].end * 4 <= common
            ):
                reused += 1
        pieces = (
            [dataclasses.replace(previous.pieces[index], sized=None) for index in range(reused)]
            if previous is not None
            else []
        )
        pieces += [self._piece(data, raw, segment, framing) for segment in segments[reused:]]
        covered = segments[-1].end if segments else 0
        fixed = sum(p.prefix + p.suffix + p.placeholders for p in pieces) + (len(data) - covered)
        text = sum(p.text for p in pieces)
        stats = self.stats(model)
        if observed_count is not None:
            how = FITTED
            stats.fitted += 1
            if not complete:
                stats.incomplete += 1
            self._size_to_count(pieces, observed_count - fixed)
            plausible = False
            if text > 0 and observed_count > fixed:
                ratio = Fraction(observed_count - fixed, text)
                plausible = PLAUSIBLE_RATIO[0] <= ratio <= PLAUSIBLE_RATIO[1]
                if not plausible:
                    stats.implausible += 1
                elif complete:
                    stats.add(text, observed_count - fixed)
            # Sizes fitted to a count not learned from are kept by later requests all the
            # same: a hidden prompt spread over them must not change their copies' length.
            level = SIZE_FIRM if complete and plausible else SIZE_FITTED
        else:
            ratio_known = self.ratio_for(model)
            if ratio_known is None:
                how = UNCALIBRATED
                stats.uncalibrated += 1
            else:
                how = RATIO_APPLIED
                stats.ratio_applied += 1
            self._size_by_ratio(pieces, ratio_known or Fraction(1))
            level = SIZE_GUESSED
        for piece in pieces:
            remembered = self._sizes.get(piece.key)
            if remembered is None or level > remembered.level:
                assert piece.sized is not None
                self._remember(piece.key, _Remembered(piece.sized, level))
        fitted, new_segments, mapping = self._build(data, raw, pieces, covered, previous, reused)
        self._recent[opening] = _Recent(whole, pieces, fitted, new_segments, mapping.anchors)
        self._recent.move_to_end(opening)
        if len(self._recent) > REMEMBERED_REQUESTS:
            self._recent.popitem(last=False)
        if observed_count is not None and len(fitted) != observed_count:
            fitted, new_segments = _cut_or_pad(fitted, new_segments, observed_count)
        length = len(fitted)
        new_breakpoints = []
        for point in breakpoints:
            offset = min(mapping(point.offset), length)
            if offset > 0:
                new_breakpoints.append(Breakpoint(offset, point.ttl))
        moved = tuple(min(mapping(offset), length) for offset in offsets)
        return Fitted(fitted, tuple(new_segments), tuple(new_breakpoints), how, moved)

    def _piece(
        self, data: array[int], raw: memoryview, segment: Segment, framing: tuple[int, int, int]
    ) -> _Piece:
        """A segment's memo key and counts; the counts of content seen before are reused
        (the analysis runs once per distinct segment)."""
        key = xxh3_128_digest(raw[segment.start * 4 : segment.end * 4])
        shape = self._shapes.get(key)
        if shape is None:
            ids = np.frombuffer(data, dtype=np.uint32)[segment.start : segment.end]
            shape = self._shapes[key] = _shape(ids, framing)
            if len(self._shapes) > self.max_remembered:
                self._shapes.pop(next(iter(self._shapes)))
        return _Piece(segment, key, *shape)

    def _build(
        self,
        data: array[int],
        raw: memoryview,
        pieces: list[_Piece],
        covered: int,
        previous: _Recent | None = None,
        reused: int = 0,
    ) -> tuple[array[int], list[Segment], _Mapping]:
        """The calibrated ids and segments, and the map from approximate offsets to
        calibrated ones (exact at segment boundaries, linear inside a segment's text). A
        segment's calibrated ids are a pure function of its ids and size, kept for reuse;
        the leading ``reused`` pieces, where sized as in ``previous``, are its ids."""
        chunks: list[bytes | memoryview] = []
        segments: list[Segment] = []
        anchors: list[tuple[int, int, int, int, int, int]] = []
        position = 0
        same = 0
        if previous is not None:
            while same < reused and pieces[same].sized == previous.pieces[same].sized:
                same += 1
            if same:
                position = previous.segments[same - 1].end
                chunks.append(memoryview(previous.fitted).cast("B")[: position * 4])
                segments.extend(previous.segments[:same])
                anchors.extend(previous.anchors[:same])
        for piece in pieces[same:]:
            segment = piece.segment
            sized = piece.sized if piece.sized is not None else piece.text
            length = piece.prefix + piece.suffix + piece.placeholders + sized
            if sized == piece.text:
                chunk: bytes | memoryview = raw[segment.start * 4 : segment.end * 4]
            else:
                cache_key = (piece.key, sized)
                found = self._built.get(cache_key)
                if found is None:
                    ids = np.frombuffer(data, dtype=np.uint32)[segment.start : segment.end]
                    found = _calibrated(ids, piece, sized).tobytes()
                    self._built[cache_key] = found
                    self._built_bytes += len(found)
                    while self._built_bytes > MAX_BUILT_BYTES and self._built:
                        self._built_bytes -= len(self._built.pop(next(iter(self._built))))
                chunk = found
            chunks.append(chunk)
            anchors.append(
                (
                    segment.start,
                    segment.end,
                    position,
                    position + length,
                    piece.prefix,
                    piece.suffix,
                )
            )
            segments.append(Segment(segment.kind, segment.label, position, position + length))
            position += length
        tail = raw[covered * 4 :]
        chunks.append(tail)
        anchors.append((covered, len(data), position, position + len(data) - covered, 0, 0))
        fitted = array("I")
        fitted.frombytes(b"".join(chunks))
        return fitted, segments, _Mapping(anchors)

    def _known(self, piece: _Piece, usage: bool) -> int | None:
        remembered = self._sizes.get(piece.key)
        if remembered is None or (usage and remembered.level == SIZE_GUESSED):
            return None
        self._sizes.move_to_end(piece.key)
        return remembered.text

    def _size_to_count(self, pieces: list[_Piece], text_target: int) -> None:
        """Size the pieces so that their text adds up to ``text_target``: remembered ones
        keep their size, new ones share the rest in proportion to their approximate text."""
        new: list[_Piece] = []
        known_total = 0
        for piece in pieces:
            known = self._known(piece, usage=True)
            if known is None:
                new.append(piece)
            else:
                piece.sized = known
                known_total += known
        rest = text_target - known_total
        new_text = sum(piece.text for piece in new)
        if new and new_text > 0 and rest >= 0:
            _distribute(new, rest, new_text)
            return
        for piece in new:  # nothing to scale by: new pieces keep their approximate size
            piece.sized = piece.text
        residual = text_target - sum(p.sized or 0 for p in pieces)
        # The difference goes to the last piece with text, this request only (never below
        # zero; whatever cannot be taken there is cut or padded at the end by the caller).
        with_text = [piece for piece in pieces if piece.text > 0]
        if with_text:
            last = with_text[-1]
            assert last.sized is not None
            last.sized = max(0, last.sized + residual)

    def _size_by_ratio(self, pieces: list[_Piece], ratio: Fraction) -> None:
        for piece in pieces:
            known = self._known(piece, usage=False)
            piece.sized = known if known is not None else round(piece.text * ratio)

    def _remember(self, key: bytes, value: _Remembered) -> None:
        self._sizes[key] = value
        self._sizes.move_to_end(key)
        if len(self._sizes) > self.max_remembered:
            self._sizes.popitem(last=False)


def _distribute(pieces: list[_Piece], total: int, weight_total: int) -> None:
    """``total`` split over ``pieces`` in proportion to their text, by cumulative rounding
    (the sizes add up to ``total`` exactly and each is within one token of its share)."""
    done = 0
    weight = 0
    for piece in pieces:
        weight += piece.text
        cumulative = total * weight // weight_total
        piece.sized = cumulative - done
        done = cumulative


def _shape(ids: np.ndarray, framing: tuple[int, int, int]) -> tuple[int, int, int, int]:
    """(leading framing, trailing framing, placeholders, text) token counts of a segment."""
    start_id, message_id, end_id = framing
    length = len(ids)
    prefix = suffix = 0
    if length and ids[0] == start_id:
        found = np.flatnonzero(ids[: min(length, 32)] == message_id)
        if len(found):
            prefix = int(found[0]) + 1
    if length > prefix and ids[-1] == end_id:
        suffix = 1
    body = ids[prefix : length - suffix]
    placeholders = int(np.count_nonzero(body >= NON_TEXT_ID_BASE)) if len(body) else 0
    return prefix, suffix, placeholders, len(body) - placeholders


def _runs(body: np.ndarray) -> list[tuple[bool, int, int]]:
    """(is text, start, end) runs of a segment's body: text ids and non-text placeholders."""
    marks = body >= NON_TEXT_ID_BASE
    if not marks.any():
        return [(True, 0, len(body))] if len(body) else []
    runs: list[tuple[bool, int, int]] = []
    start = 0
    for index in range(1, len(body) + 1):
        if index == len(body) or marks[index] != marks[start]:
            runs.append((not bool(marks[start]), start, index))
            start = index
    return runs


def _resample(text: np.ndarray, size: int) -> np.ndarray:
    """``size`` ids drawn in order from ``text`` (each id repeated or skipped evenly): a pure
    function of the text and the size, so equal segments give equal ids."""
    if size == len(text):
        return text
    if size <= 0 or not len(text):
        return text[:0]
    return text[(np.arange(size, dtype=np.int64) * len(text)) // size]


def _calibrated(ids: np.ndarray, piece: _Piece, sized: int) -> np.ndarray:
    """A segment's ids with its text resized to ``sized`` tokens (framing and placeholders
    kept; text runs share the size in proportion, by cumulative rounding)."""
    prefix, suffix = piece.prefix, piece.suffix
    body = ids[prefix : len(ids) - suffix]
    parts = [ids[:prefix]]
    runs = _runs(body)
    weights = sum(end - begin for is_text, begin, end in runs if is_text)
    done = weight = 0
    for is_text, begin, end in runs:
        if is_text:
            weight += end - begin
            cumulative = sized * weight // weights if weights else 0
            parts.append(_resample(body[begin:end], cumulative - done))
            done = cumulative
        else:
            parts.append(body[begin:end])
    if not weights and sized:  # a segment without text asked to grow: pad it here
        parts.append(_filler(piece.key, sized))
    parts.append(ids[len(ids) - suffix :])
    joined: np.ndarray = np.concatenate(parts).astype(np.uint32, copy=False)
    return joined


class _Mapping:
    """Approximate offset -> calibrated offset: exact at segment boundaries and inside the
    framing, linear inside a segment's text."""

    def __init__(self, anchors: list[tuple[int, int, int, int, int, int]]) -> None:
        self.anchors = anchors

    def __call__(self, offset: int) -> int:
        last_end = 0
        for old_start, old_end, new_start, new_end, prefix, suffix in self.anchors:
            if offset < old_start:
                return last_end
            if offset <= old_end:
                if offset - old_start <= prefix:
                    return new_start + offset - old_start
                if old_end - offset <= suffix:
                    return new_end - (old_end - offset)
                old_body = old_end - old_start - prefix - suffix
                new_body = new_end - new_start - prefix - suffix
                inside = offset - old_start - prefix
                return new_start + prefix + inside * new_body // max(old_body, 1)
            last_end = new_end
        return last_end


def _filler(key: bytes, count: int) -> np.ndarray:
    seed = int.from_bytes(key[:4], "little")
    return (NON_TEXT_ID_BASE + (seed + np.arange(count, dtype=np.int64)) % (1 << 24)).astype(
        np.uint32
    )


def _cut_or_pad(
    tokens: array[int], segments: list[Segment], count: int
) -> tuple[array[int], list[Segment]]:
    """Last resort where sizing could not meet the count (the remembered segments alone are
    longer than it): cut or pad at the end."""
    fitted = array("I", tokens[:count])
    if len(fitted) < count:
        filler = _filler(bytes(tokens[-4:].tobytes()) if len(tokens) else b"\0" * 4, count)
        fitted.extend(int(value) for value in filler[: count - len(fitted)])
    kept = [
        Segment(s.kind, s.label, s.start, min(s.end, count)) for s in segments if s.start < count
    ]
    if kept and kept[-1].end < count:
        last = kept[-1]
        kept[-1] = Segment(last.kind, last.label, last.start, count)
    return fitted, kept
