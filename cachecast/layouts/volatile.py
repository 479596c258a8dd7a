"""Volatile spans: text that changes from request to request among requests of one template.

Requests are grouped by template (model, tool set, opening roles: ``textview.template_key``).
For every prompt part (same label) the distinct texts of the group are compared line by
line: the lines every text shares at the top and at the bottom are stable; the lines in
between hold the volatile span. What matters for caching is what follows a span: every
token after it is a different prefix chain, so a span's cost is the stable content behind it.

Parts from the first user message on are reported too, but a user's turn is expected to
vary; only spans in the system prompt, tool schemas and opening messages are ``movable``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cachecast.layouts.textview import (
    Part,
    prompt_parts,
    request_body,
    template_key,
    tool_name,
)

MAX_DISTINCT = 64  # distinct texts compared per part; enough to see what varies

_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2})?)?|\b\d{1,2}:\d{2}(:\d{2})?\b|\b1[6-9]\d{8}\b"
)
_IDENTIFIER = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-|\b[0-9a-fA-F]{12,}\b|\b[\w]+[-_]\d+\b|\b\d{4,}\b"
)
_NAME = re.compile(r"^[A-Z][a-z]+( [A-Z][a-z]+)*$")
# A line that only labels a value ("Current time: ", "User id = "): moving it next to the
# user's message keeps its meaning; anything else may be an instruction.
_DATA_LABEL = re.compile(r"^\s*[-*]?\s*[\w ()/.'-]{1,40}[:=]\s")


@dataclass(frozen=True, slots=True)
class VolatileSpan:
    template: int  # index of the template group
    label: str  # the part, e.g. messages[0]
    part_kind: str  # system, tool, message
    role: str | None
    part_index: int  # position of the part in prompt order
    first_line: int  # 0-based line of the part where the volatile lines start
    line_count: int  # how many lines they cover (stable lines in between included)
    lines_after: int  # lines of the part after them
    part_lines: int | None  # lines of the part when every request's has as many, else None
    kind: str  # timestamp, identifier, name, document, text
    examples: tuple[str, ...]
    distinct_values: int
    requests: int  # requests of the group that have this part
    stable_chars_after_in_part: int
    prompt_chars_after: int  # characters after the span in the whole (first) prompt
    movable: bool
    data_only: bool  # the moved lines only label values (no instructions)

    def describe(self) -> str:
        return describe_span(self)


class SpanFacts(Protocol):
    """What a sentence about a span needs (a :class:`VolatileSpan`, or a report of one)."""

    @property
    def kind(self) -> str: ...
    @property
    def first_line(self) -> int: ...
    @property
    def part_kind(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def distinct_values(self) -> int: ...
    @property
    def requests(self) -> int: ...
    @property
    def prompt_chars_after(self) -> int: ...


def describe_span(span: SpanFacts) -> str:
    """One sentence: what varies, where, how often, and how much prompt follows it."""
    where = "top" if span.first_line == 0 else f"line {span.first_line + 1}"
    return (
        f"{span.kind} at the {where} of {span.part_kind} `{span.label}`"
        f" ({span.distinct_values} distinct values in {span.requests} requests), followed by"
        f" {span.prompt_chars_after:,} characters of prompt"
    )


@dataclass(frozen=True, slots=True)
class ToolOrderIssue:
    template: int
    distinct_orders: int  # distinct tool orders seen
    requests: int
    canonical_order: tuple[str, ...]  # tool names sorted


@dataclass(frozen=True, slots=True)
class ScopeSplit:
    """Requests of one template spread over several cache scopes."""

    template: int
    scopes: int
    requests: int


TemplateKey = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Analysis:
    keys: tuple[TemplateKey, ...]  # the template key of each group, in order of first request
    sizes: tuple[int, ...]  # requests of each template group
    spans: tuple[VolatileSpan, ...]
    tool_order: tuple[ToolOrderIssue, ...]
    scope_splits: tuple[ScopeSplit, ...]
    breakpoints: bool = False  # some request marks a cache breakpoint


def value_kind(value: str) -> str:
    stripped = value.strip()
    if len(stripped) > 200 or stripped.count("\n") >= 3:
        return "document"
    if _TIMESTAMP.search(stripped):
        return "timestamp"
    if _IDENTIFIER.search(stripped):
        return "identifier"
    last = stripped.rsplit(":", 1)[-1].strip().rstrip(".!,")
    if _NAME.match(last) or any(_NAME.match(word.strip(".,!")) for word in stripped.split()[-3:]):
        return "name"
    return "text"


def _common_lines(texts: Sequence[list[str]]) -> tuple[int, int]:
    """(lines equal at the top of every text, lines equal at the bottom), not overlapping."""
    shortest = min(len(lines) for lines in texts)
    top = 0
    while top < shortest and all(lines[top] == texts[0][top] for lines in texts):
        top += 1
    bottom = 0
    while bottom < shortest - top and all(
        lines[-1 - bottom] == texts[0][-1 - bottom] for lines in texts
    ):
        bottom += 1
    return top, bottom


def _is_data_only(block_texts: Sequence[list[str]]) -> bool:
    """Every moved line is 'label: value' where only the value varies."""
    line_count = len(block_texts[0])
    if any(len(lines) != line_count for lines in block_texts):
        return False
    for index in range(line_count):
        variants = [lines[index].rstrip("\n") for lines in block_texts]
        if len(set(variants)) == 1:
            if variants[0].strip():
                return False  # a stable line carried along: could be an instruction
            continue
        # The shared head of the line must be a short label ending in ':' or '=' followed by
        # whitespace ("Current time: "); the value after it is what varies.
        if not _DATA_LABEL.match(_common_prefix(variants)):
            return False
    return True


def _common_prefix(values: Sequence[str]) -> str:
    first = min(values)
    last = max(values)
    index = 0
    while index < len(first) and index < len(last) and first[index] == last[index]:
        index += 1
    return first[:index]


def _split_lines(text: str) -> list[str]:
    return text.splitlines(keepends=True) or [""]


@dataclass(slots=True)
class _PartTexts:
    """One part of a group's first request: how many requests have it, and their first
    ``MAX_DISTINCT`` distinct texts."""

    count: int = 0
    texts: dict[str, None] = field(default_factory=dict)


class _Group:
    """What a group of one template keeps while the records stream by: bounded by the
    distinct texts, tool orders and scopes it sees, not by its requests."""

    def __init__(self, reference: list[Part]) -> None:
        self.reference = reference
        self.parts = [_PartTexts() for _ in reference]
        self.size = 0
        self.orders: set[tuple[str, ...]] = set()
        self.scopes: set[str] = set()

    def add(self, record: dict[str, Any], parts: list[Part]) -> None:
        self.size += 1
        for index, part in enumerate(self.reference):
            if part.kind == "tool" or index >= len(parts) or parts[index].label != part.label:
                continue
            kept = self.parts[index]
            kept.count += 1
            if len(kept.texts) < MAX_DISTINCT:
                kept.texts.setdefault(parts[index].text, None)
        self.orders.add(tuple(tool_name(t) for t in request_body(record).get("tools") or []))
        self.scopes.add(str(record.get("scope")))


def analyze(records: Iterable[dict[str, Any]]) -> Analysis:
    """Group the records by template and find every volatile span, tool-order variation and
    scope split, in one pass over the records (none is held)."""
    keys: dict[TemplateKey, int] = {}
    groups: list[_Group] = []
    breakpoints = False
    for record in records:
        parts = prompt_parts(record)
        breakpoints = breakpoints or any(part.breakpoint for part in parts)
        key = template_key(record)
        index = keys.get(key)
        if index is None:
            index = keys[key] = len(groups)
            groups.append(_Group(parts))
        groups[index].add(record, parts)
    spans: list[VolatileSpan] = []
    tool_issues: list[ToolOrderIssue] = []
    scope_splits: list[ScopeSplit] = []
    for group_index, group in enumerate(groups):
        spans.extend(_group_spans(group_index, group))
        if len(group.orders) > 1:
            canonical = tuple(sorted(next(iter(group.orders))))
            tool_issues.append(
                ToolOrderIssue(group_index, len(group.orders), group.size, canonical)
            )
        if len(group.scopes) > 1:
            scope_splits.append(ScopeSplit(group_index, len(group.scopes), group.size))
    spans.sort(key=lambda span: (-span.prompt_chars_after, span.template, span.part_index))
    return Analysis(
        tuple(keys),
        tuple(group.size for group in groups),
        tuple(spans),
        tuple(tool_issues),
        tuple(scope_splits),
        breakpoints,
    )


def _runs(flags: Sequence[bool]) -> list[tuple[int, int]]:
    """Maximal runs of True as (start, end) index pairs."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    for index, flag in enumerate([*flags, False]):
        if flag and start is None:
            start = index
        elif not flag and start is not None:
            runs.append((start, index))
            start = None
    return runs


def _group_spans(group_index: int, group: _Group) -> list[VolatileSpan]:
    reference = group.reference
    first_user = next(
        (i for i, part in enumerate(reference) if part.kind == "message" and part.role == "user"),
        len(reference),
    )
    spans: list[VolatileSpan] = []
    for part_index, part in enumerate(reference):
        if part.kind == "tool":
            continue  # tools vary by order, handled as a tool-order issue
        kept = group.parts[part_index]
        count = kept.count
        distinct = list(kept.texts)
        if len(distinct) < 2:
            continue
        # Spans are only meaningful inside content that is the same part in every request;
        # from the first user message on, sessions legitimately differ.
        line_lists = [_split_lines(text) for text in distinct]
        reference_lines = _split_lines(part.text)
        runs: list[tuple[int, int]]  # (first line, end line) of each volatile run
        part_lines: int | None
        if len({len(lines) for lines in line_lists}) == 1:
            # Same line count everywhere: compare line by line, so that a name at the top
            # and a time at the bottom are two spans, not one span holding everything.
            part_lines = len(line_lists[0])
            varying = [
                any(lines[i] != line_lists[0][i] for lines in line_lists) for i in range(part_lines)
            ]
            runs = _runs(varying)
        else:
            # A value spanning several lines (a retrieved document): one region between
            # the lines shared at the top and at the bottom.
            part_lines = None
            top, bottom = _common_lines(line_lists)
            runs = [(top, len(reference_lines) - bottom)]
        for first, end in runs:
            lines_after = (part_lines if part_lines is not None else len(reference_lines)) - end
            if part_lines is not None:
                blocks = [lines[first:end] for lines in line_lists]
            else:
                blocks = [lines[first : len(lines) - lines_after] for lines in line_lists]
            sample_values = ["".join(block).strip() for block in blocks[:3]]
            tail = reference_lines[len(reference_lines) - lines_after :] if lines_after else []
            after_in_part = sum(len(line) for line in tail)
            after_in_prompt = after_in_part + sum(len(p.text) for p in reference[part_index + 1 :])
            spans.append(
                VolatileSpan(
                    template=group_index,
                    label=part.label,
                    part_kind=part.kind,
                    role=part.role,
                    part_index=part_index,
                    first_line=first,
                    line_count=end - first,
                    lines_after=lines_after,
                    part_lines=part_lines,
                    kind=value_kind(sample_values[0]),
                    examples=tuple(value[:120] for value in sample_values),
                    distinct_values=len({"".join(block) for block in blocks}),
                    requests=count,
                    stable_chars_after_in_part=after_in_part,
                    prompt_chars_after=after_in_prompt,
                    movable=part_index < first_user,
                    data_only=_is_data_only(blocks),
                )
            )
    return spans
