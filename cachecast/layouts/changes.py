"""Candidate layout changes that make prompts share longer prefixes, and their diffs.

From the volatile-span analysis (``volatile.analyze``) each applicable change is a record
transform (applied to every request of a log or of an expanded layout) plus the diff that
shows it: on the layout file itself where the change maps onto it, else on the first request
it changes. Replaying the changed requests and ranking the changes is
``cachecast.usecases.suggest``.

Changes:
- ``move_to_end_of_system``: the volatile lines go to the end of the same system prompt
  (same role, still before the conversation: safe).
- ``move_to_last_user_message``: the volatile lines leave the system prompt and are appended
  to the last user message; the agent keeps them in its history, so later turns re-send them
  there. Content moved after the user's turn may change meaning: ``needs_review`` unless the
  lines only label values ("Current time: ...").
- ``split_system``: the stable system prompt stays first; the volatile lines become a second
  system message just before the first user message (same role: safe).
- ``pin_tool_order``: tools sorted by name in every request (safe).
- ``add_breakpoints``: for targets that cache only at explicit breakpoints (Anthropic-style)
  when the requests carry none: markers at the end of the system prompt and of the last
  message (safe: the prompt text does not change).
- ``shared_prompt_cache_key``: one cache scope (prompt_cache_key) per template instead of
  many; needs review, since it changes what may share a cache.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from cachecast.core.errors import CachecastError
from cachecast.layouts.expand import add_breakpoints
from cachecast.layouts.spec import Layout
from cachecast.layouts.textview import (
    part_by_label,
    prompt_parts,
    request_body,
    template_key,
    tool_name,
)
from cachecast.layouts.volatile import Analysis, VolatileSpan
from cachecast.tokenizers.render import detect_api

# The system prompt (covering the tools before it) and the newest message: the stable
# prefix every session shares, and the growing history within a session.
SUGGESTED_BREAKPOINTS: tuple[tuple[str, str | None], ...] = (
    ("system", None),
    ("last_message", None),
)
# Contract modes that read the cache only at explicit breakpoints.
EXPLICIT_MODES = ("explicit", "both")


@dataclass(frozen=True, slots=True)
class Tagged:
    """A request on its way through changes: where it was, its template group as analysed,
    the request as logged and as the changes so far left it."""

    index: int  # 0-based position in the original requests
    group: int | None  # template group of the original request (None: not analysed)
    original: dict[str, Any]
    record: dict[str, Any]

    def changed(self, record: dict[str, Any]) -> Tagged:
        return Tagged(self.index, self.group, self.original, record)


# A change applied to a stream of requests, one out for each one in, in order, lazily (a
# log is never held); a transform never changes the records it is given (it copies).
ItemTransform = Callable[[Iterator[Tagged]], Iterator[Tagged]]
Grouping = Callable[[dict[str, Any]], int | None]


# --- record transforms -----------------------------------------------------------------


def _append_text(content: Any, block: str) -> Any:
    addition = block.strip("\n")
    if isinstance(content, str):
        return content.rstrip("\n") + "\n\n" + addition
    if isinstance(content, list):
        return [*content, {"type": "text", "text": addition}]
    return content


def _system_location(body: dict[str, Any], label: str) -> tuple[str, int | None]:
    """('messages', index) for messages[i], ('system', None) for a top-level system."""
    if label.startswith("messages["):
        return "messages", int(label[len("messages[") : label.index("]")])
    return "system", None


def _cut_lines(text: str, spans: Sequence[VolatileSpan]) -> tuple[str, str] | None:
    """(text without the spans' lines, those lines in order), or None when this text does not
    have the shape the spans were found in (a request of another shape is left as it is)."""
    lines = text.splitlines(keepends=True)
    taken: set[int] = set()
    for span in spans:
        if span.part_lines is not None:
            if len(lines) != span.part_lines:
                return None
            taken.update(range(span.first_line, span.first_line + span.line_count))
        else:
            end = len(lines) - span.lines_after
            if span.first_line > end:
                return None
            taken.update(range(span.first_line, end))
    block = "".join(line for index, line in enumerate(lines) if index in taken)
    rest = "".join(line for index, line in enumerate(lines) if index not in taken)
    return rest, block


def _move(spans: Sequence[VolatileSpan], destination: str) -> ItemTransform:
    """Move the lines of ``spans`` (all in one part of one template) to ``destination``."""
    span = spans[0]

    def transform(items: Iterator[Tagged]) -> Iterator[Tagged]:
        # Per session: the (message index, text) this change appended to earlier requests;
        # an agent re-sends its history as it sent it, so later turns carry them too.
        appended: dict[str, list[tuple[int, str]]] = {}
        for item in items:
            if item.group != span.template:
                yield item
                continue
            record = copy.deepcopy(item.record)
            _move_in(record, item.index, spans, destination, appended)
            yield item.changed(record)

    return transform


def _move_in(
    record: dict[str, Any],
    index: int,
    spans: Sequence[VolatileSpan],
    destination: str,
    appended: dict[str, list[tuple[int, str]]],
) -> None:
    """Move the spans' lines within ``record`` (a copy) in place; a request of another shape
    is left as it is."""
    body = request_body(record)
    where, message_index = _system_location(body, spans[0].label)
    if where != "messages" or message_index is None:
        return
    messages = body.get("messages") or []
    content = messages[message_index].get("content")
    if not isinstance(content, str):
        return
    cut = _cut_lines(content, spans)
    if cut is None:
        return
    rest, block = cut
    if destination == "end_of_system":
        messages[message_index]["content"] = _append_text(rest, block)
    elif destination == "split_system":
        messages[message_index]["content"] = rest
        first_user = next(
            (i for i, m in enumerate(messages) if m.get("role") == "user"), len(messages)
        )
        messages.insert(
            first_user,
            {"role": messages[message_index]["role"], "content": block.strip("\n")},
        )
    else:  # last user message, keeping earlier turns as they were sent
        messages[message_index]["content"] = rest
        session = str(record.get("session", f"#{index}"))
        history = appended.setdefault(session, [])
        for earlier_index, earlier_block in history:
            if earlier_index < len(messages) and messages[earlier_index].get("role") == "user":
                messages[earlier_index]["content"] = _append_text(
                    messages[earlier_index]["content"], earlier_block
                )
        last_user = max(
            (i for i, m in enumerate(messages) if m.get("role") == "user"), default=None
        )
        if last_user is not None:
            messages[last_user]["content"] = _append_text(messages[last_user]["content"], block)
            history.append((last_user, block))


def _each(change: Callable[[dict[str, Any]], None]) -> ItemTransform:
    """A change made to every request on its own (on a copy)."""

    def transform(items: Iterator[Tagged]) -> Iterator[Tagged]:
        for item in items:
            record = copy.deepcopy(item.record)
            change(record)
            yield item.changed(record)

    return transform


def _sort_tools(record: dict[str, Any]) -> None:
    body = request_body(record)
    if body.get("tools"):
        body["tools"] = sorted(body["tools"], key=tool_name)


def _mark_breakpoints(record: dict[str, Any]) -> None:
    # A logged request keeps its own API's markers: an OpenAI Chat Completions body gets
    # OpenAI's, since Anthropic's would make it read as an Anthropic body.
    body = request_body(record)
    provider = record.get("provider")
    try:
        api = detect_api(body, provider.lower() if isinstance(provider, str) else None)
    except CachecastError:
        return  # no prompt: the replay names the record and its field
    add_breakpoints(body, SUGGESTED_BREAKPOINTS, openai=api == "chat")


_pin_tools = _each(_sort_tools)
_add_breakpoints = _each(_mark_breakpoints)


def _compose(*steps: ItemTransform) -> ItemTransform:
    """The steps applied in order, each to what the previous left."""

    def transform(items: Iterator[Tagged]) -> Iterator[Tagged]:
        for step in steps:
            items = step(items)
        return items

    return transform


def _shared_scope(items: Iterator[Tagged]) -> Iterator[Tagged]:
    """Every request's cache scope is its template's."""
    for item in items:
        record = copy.deepcopy(item.record)
        if item.group is not None:
            record["scope"] = f"template-{item.group}"
        yield item.changed(record)


# --- diffs -----------------------------------------------------------------------------


def _render_request(record: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for part in prompt_parts(record):
        marker = " [cache_control]" if part.breakpoint else ""
        lines.append(f"## {part.label} ({part.role or part.kind}){marker}\n")
        lines.extend(
            line if line.endswith("\n") else line + "\n" for line in part.text.splitlines()
        )
    if "scope" in record:
        lines.append(f"## scope: {record['scope']}\n")
    return lines


def request_diff(before: dict[str, Any], after: dict[str, Any], name: str) -> str:
    return "".join(
        difflib.unified_diff(
            _render_request(before), _render_request(after), f"a/{name}", f"b/{name}"
        )
    )


class _LiteralDumper(yaml.SafeDumper):
    """Writes multi-line strings as YAML block literals, as people write layouts."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_LiteralDumper.add_representer(str, _represent_str)


def _layout_text(document: dict[str, Any]) -> list[str]:
    text = yaml.dump(
        document, Dumper=_LiteralDumper, sort_keys=False, allow_unicode=True, width=100
    )
    return text.splitlines(keepends=True)


def _changed_layout(
    first_record: dict[str, Any],
    document: dict[str, Any],
    kind: str,
    spans: Sequence[VolatileSpan],
) -> dict[str, Any] | None:
    """``document`` (a copy of the layout) with the change applied, or None where the change
    does not map onto the layout's own text. ``first_record`` is the layout's first request,
    as expanded (its text says whether the layout's lines map line for line)."""
    base, _, also = kind.partition("+")
    if also:
        changed = _changed_layout(first_record, document, base, spans)
        return None if changed is None else _changed_layout(first_record, changed, also, spans)
    if kind == "add_breakpoints":
        document["cache_breakpoints"] = [place for place, _ in SUGGESTED_BREAKPOINTS]
        return document
    if kind == "pin_tool_order":
        document["tool_order"] = "fixed"
        document["tools"] = sorted(document.get("tools") or [], key=tool_name)
        return document
    if kind == "shared_prompt_cache_key":
        document["scope"] = "template-0"
        return document
    template = document.get("system")
    label = spans[0].label if spans else None
    rendered = part_by_label(first_record, label) if label is not None else None
    if label != "messages[0]" or not isinstance(template, str):
        return None
    if rendered is None or len(template.splitlines()) != len(rendered.text.splitlines()):
        return None  # a placeholder renders over several lines: no line-for-line mapping
    cut = _cut_lines(template, spans)
    if cut is None:
        return None
    rest, block = cut
    if kind == "move_to_end_of_system":
        document["system"] = _append_text(rest, block)
    elif kind == "split_system":
        document["system"] = rest
        messages = list(document.get("messages") or [])
        first_user = next(
            (i for i, m in enumerate(messages) if m.get("role") == "user"), len(messages)
        )
        messages.insert(first_user, {"role": "system", "content": block.strip("\n")})
        document["messages"] = messages
    elif kind == "move_to_last_user_message":
        document["system"] = rest
        turn = [dict(message) for message in document.get("turn") or []]
        last_user = max(i for i, m in enumerate(turn) if m.get("role") == "user")
        turn[last_user]["content"] = _append_text(turn[last_user]["content"], block)
        document["turn"] = turn
    else:
        return None
    return document


def layout_diff(
    layout: Layout,
    first_record: dict[str, Any],
    name: str,
    kind: str,
    spans: Sequence[VolatileSpan],
) -> str | None:
    """The change written on the layout file itself (named ``name``), when it maps onto it."""
    document = _changed_layout(first_record, copy.deepcopy(layout.raw), kind, spans)
    if document is None:
        return None
    return "".join(
        difflib.unified_diff(
            _layout_text(layout.raw), _layout_text(document), f"a/{name}", f"b/{name}"
        )
    )


def change_diff(
    change: Change,
    original: Iterable[dict[str, Any]],
    *,
    layout: Layout | None,
    name: str,
) -> str:
    """The diff that shows ``change``: on the layout (named ``name``) where it maps onto it,
    else on the first request it changes (``original``: the requests before it, read until
    that one)."""
    first: Tagged | None = None
    for item in change.tagged_stream(original):
        if first is None:
            first = item
            if layout is not None:
                diff = layout_diff(layout, item.original, name, change.kind, change.spans)
                if diff is not None:
                    return diff
        if item.record != item.original:
            return request_diff(item.original, item.record, f"request-{item.index + 1}")
    if first is None:
        return ""
    return request_diff(first.original, first.record, "request-1")


# --- the candidates --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Change:
    """One candidate change: what it is, why, whether a person must review it, and the
    transform that applies it to every request (``grouping``: the template group of a
    request as analysed, which the transform reads)."""

    kind: str
    title: str
    rationale: str
    needs_review: bool
    apply: ItemTransform
    spans: tuple[VolatileSpan, ...]
    grouping: Grouping

    def tagged_stream(self, records: Iterable[dict[str, Any]]) -> Iterator[Tagged]:
        """The requests after the change, each with its original, lazily."""
        tagged = (
            Tagged(index, self.grouping(record), record, record)
            for index, record in enumerate(records)
        )
        return self.apply(tagged)

    def stream(self, records: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """The requests after the change, lazily (``PromptSet.changed`` takes this)."""
        return (item.record for item in self.tagged_stream(records))

    def transform(self, records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """The requests after the change, as a list."""
        return [item.record for item in self.tagged_stream(records)]


def _move_candidates(spans: tuple[VolatileSpan, ...], grouping: Grouping) -> list[Change]:
    """The three moves of some volatile lines of one system prompt."""
    first, last = spans[0], spans[-1]
    if len(spans) == 1:
        what = (
            f"the {first.kind} lines ({first.line_count}) at line {first.first_line + 1}"
            f" of `{first.label}`"
        )
        found = first.describe()
    else:
        kinds = ", ".join(span.kind for span in spans)
        what = f"all {len(spans)} volatile line groups ({kinds}) of `{first.label}`"
        found = "; ".join(span.describe() for span in spans)
    data_only = all(span.data_only for span in spans)
    candidates: list[Change] = []
    if last.lines_after:  # something stable follows: moving to the end changes the prefix
        candidates.append(
            Change(
                "move_to_end_of_system",
                f"Move {what} to the end of the system prompt",
                f"{found}; after the move the stable system prompt is a shared prefix.",
                False,
                _move(spans, "end_of_system"),
                spans,
                grouping,
            )
        )
        candidates.append(
            Change(
                "split_system",
                f"Split the system prompt: stable part first, {what} as a second system"
                " message before the first user message",
                f"{found}; the stable system prompt and the tools become a shared prefix.",
                False,
                _move(spans, "split_system"),
                spans,
                grouping,
            )
        )
    candidates.append(
        Change(
            "move_to_last_user_message",
            f"Move {what} to the end of the last user message",
            f"{found}; after the move everything up to the user's new message, history"
            " included, is a shared prefix."
            + (
                ""
                if data_only
                else " The moved lines are not only labelled values: they may be"
                " instructions, and after the user's turn they can change meaning."
            ),
            not data_only,
            _move(spans, "last_user"),
            spans,
            grouping,
        )
    )
    return candidates


def candidate_changes(analysis: Analysis, *, explicit_targets: Sequence[str]) -> list[Change]:
    """Every change that applies to the analysed requests; ``explicit_targets`` names the
    targets that read only at explicit breakpoints when the requests carry none."""
    grouping = _grouping(analysis)
    candidates: list[Change] = []
    if explicit_targets:
        candidates.append(
            Change(
                "add_breakpoints",
                "Add cache breakpoints at the end of the system prompt and of the last message",
                f"{', '.join(explicit_targets)} cache only at explicit cache_control"
                " breakpoints and these requests carry none: nothing is ever read.",
                False,
                _add_breakpoints,
                (),
                grouping,
            )
        )
    movable: dict[tuple[int, str], list[VolatileSpan]] = {}
    for span in analysis.spans:
        if span.movable and span.part_kind == "system" and span.label.startswith("messages["):
            movable.setdefault((span.template, span.label), []).append(span)
    for spans in movable.values():
        spans.sort(key=lambda span: span.first_line)
        choices: list[tuple[VolatileSpan, ...]] = [(span,) for span in spans]
        if len(spans) > 1:
            choices.append(tuple(spans))  # all of the part's volatile lines at once
        for chosen in choices:
            candidates.extend(_move_candidates(chosen, grouping))
    if explicit_targets:
        # Explicit-only targets read nothing without breakpoints, whatever the order: each
        # move is also tried with breakpoints added.
        for move in [c for c in candidates if c.spans]:
            candidates.append(
                Change(
                    f"{move.kind}+add_breakpoints",
                    f"{move.title}, and add cache breakpoints (system prompt, last message)",
                    move.rationale,
                    move.needs_review,
                    _compose(move.apply, _add_breakpoints),
                    move.spans,
                    grouping,
                )
            )
    for issue in analysis.tool_order:
        candidates.append(
            Change(
                "pin_tool_order",
                "Pin the tool order (sort tools by name)",
                f"{issue.distinct_orders} different tool orders in {issue.requests} requests of one"
                " template: every order is a different prefix from the first tool on.",
                False,
                _pin_tools,
                (),
                grouping,
            )
        )
    if analysis.scope_splits:
        split = analysis.scope_splits[0]
        candidates.append(
            Change(
                "shared_prompt_cache_key",
                "Set one prompt_cache_key (cache scope) per template",
                f"requests of one template are spread over {split.scopes} cache scopes;"
                " one key per template lets them share cached prefixes. Review: this widens"
                " what may share a cache.",
                True,
                _shared_scope,
                (),
                grouping,
            )
        )
    return candidates


# --- combinations ----------------------------------------------------------------------


def components(change: Change) -> tuple[str, ...]:
    """The single changes ``change`` is made of (``move_to_end_of_system+add_breakpoints`` is
    two)."""
    return tuple(change.kind.split("+"))


def compatible(chosen: Sequence[Change], change: Change) -> bool:
    """Whether ``change`` can be applied on top of ``chosen``: no single change twice, and at
    most one change that moves volatile lines (the moves of one part are alternatives: after
    one, the lines another would move are no longer where it looks for them)."""
    taken = {kind for item in chosen for kind in components(item)}
    if taken & set(components(change)):
        return False
    return not (change.spans and any(item.spans for item in chosen))


def combine(changes: Sequence[Change], rationale: str) -> Change:
    """One change applying ``changes`` in order (each on the requests the previous left)."""
    spans = next((change.spans for change in changes if change.spans), ())
    return Change(
        "+".join(change.kind for change in changes),
        "Combine: " + "; and ".join(change.title for change in changes),
        rationale,
        any(change.needs_review for change in changes),
        _compose(*(change.apply for change in changes)),
        spans,
        changes[0].grouping,
    )


def _grouping(analysis: Analysis) -> Grouping:
    """The template group of a request, as ``analysis`` grouped them."""
    groups = {key: index for index, key in enumerate(analysis.keys)}

    def group_of(record: dict[str, Any]) -> int | None:
        return groups.get(template_key(record))

    return group_of
