"""The rendering every conversation API shares: the message loop, the marks, and taking an
earlier request's leading parts over.

An API's own module says how its header (tools, system) and one message render and what
its request-level rules add at the end (:class:`Conversation`); the loop over the messages,
the running totals after each (:class:`~cachecast.tokenizers.render.parts.Mark`) and the
reuse of an earlier request of the same conversation (:meth:`Conversation.render_after`)
are the same for all of them. So are the parts of tool definitions (:func:`tool_parts`) and
the Anthropic-style ``cache_control`` marker several APIs read (:func:`breakpoint_ttl`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import compress, count, islice
from operator import is_not
from typing import Any

import orjson

from cachecast.core.errors import RecordFieldError
from cachecast.tokenizers.render.fields import as_dict, as_list, compact_json, require
from cachecast.tokenizers.render.parts import (
    NO_BREAKPOINT,
    Mark,
    Rendered,
    RenderedPart,
    parts_size,
)


def _no_request_rules(body: dict[str, Any], rendered: Rendered) -> None:
    """For APIs whose caching rules all sit on the parts themselves."""


@dataclass(frozen=True, slots=True)
class Conversation:
    """How one API's conversation renders: the header (tools, system), the message list's
    field, one message's parts, and the request-level rules applied once every part is
    there (``finish``: Anthropic's top-level ``cache_control``, OpenAI's request controls)."""

    exact: bool
    field: str
    header: Callable[[dict[str, Any], Rendered], bool]
    message: Callable[[Any, str, Rendered], bool]
    finish: Callable[[dict[str, Any], Rendered], None] = _no_request_rules

    def render(self, body: dict[str, Any], api: str) -> Rendered:
        rendered = Rendered(api, [], exact=self.exact, body=body)
        start = Mark(0, 0, -1, False, self.exact)
        rendered.marks.append(advance(start, rendered, self.header(body, rendered)))
        messages = require(body, self.field, "")
        if self.field == "input" and isinstance(messages, str):  # Responses: one string
            self.message(messages, self.field, rendered)
            rendered.exact = rendered.exact and rendered.marks[-1].exact
            rendered.body = None  # nothing to take over from a non-list input
            self.finish(body, rendered)
            return rendered
        self.messages(rendered, as_list(messages, self.field), 0)
        self.finish(body, rendered)
        return rendered

    def render_after(self, body: dict[str, Any], api: str, previous: Rendered) -> Rendered | None:
        """Render ``body`` taking over the leading parts of ``previous``, an earlier request
        of the same conversation, or None when they share nothing reusable.

        Reuse needs the same API, every field other than the message list equal (tools,
        system, top-level cache_control...: the header and the breakpoint rules come from
        them) and then holds for the longest run of leading messages equal to
        ``previous``'s. Equal means equal as JSON text (:func:`header_json`,
        :func:`same_message`): Python's ``==`` alone would take ``1``, ``1.0`` and ``true``
        or two key orders as equal, which render differently.
        """
        old_body = previous.body
        if previous.api != api or old_body is None:
            return None
        name = self.field
        messages = body.get(name)
        old_messages = old_body.get(name)
        if type(messages) is not list or type(old_messages) is not list:
            return None
        if len(body) != len(old_body):
            return None
        header = header_json(body, name)
        if previous.header_json is None:
            previous.header_json = header_json(old_body, name)
        if header != previous.header_json:
            return None
        # Messages that are the very same objects render the same: a reader that builds a
        # request on an earlier one's list (a Responses chain) hands them over, and they are
        # passed over in C, so a chain of N requests is not N whole comparisons in Python.
        common = identical_prefix(messages, old_messages)
        rest = zip(islice(messages, common, None), islice(old_messages, common, None), strict=False)
        for new, old in rest:
            if not same_message(new, old):
                break
            common += 1
        mark = previous.marks[common]
        rendered = Rendered(
            api,
            [],
            exact=mark.exact,
            chat_tools=previous.chat_tools,
            body=body,
            header_json=header,
            marks=previous.marks[: common + 1],
            prefix=previous,
            prefix_parts=mark.parts,
            prefix_breakpoints=mark.breakpoints,
        )
        self.messages(rendered, messages, common)
        self.finish(body, rendered)
        return rendered

    def messages(self, rendered: Rendered, messages: list[Any], first: int) -> None:
        mark = rendered.marks[-1]
        marks = rendered.marks
        name = self.field
        for index in range(first, len(messages)):
            exact = self.message(messages[index], f"{name}[{index}]", rendered)
            mark = advance(mark, rendered, exact)
            marks.append(mark)
        rendered.exact = mark.exact


def advance(mark: Mark, rendered: Rendered, exact: bool) -> Mark:
    """The mark after the parts appended since ``mark``."""
    breakpoints = mark.breakpoints
    last = mark.last_cacheable
    marked = mark.last_cacheable_marked
    eligible = mark.last_eligible
    size = mark.size
    offset = rendered.prefix_parts
    parts = rendered.parts
    for index in range(mark.parts - offset, len(parts)):
        part = parts[index]
        size += parts_size([part])
        has_breakpoint = part.breakpoint_ttl != NO_BREAKPOINT
        breakpoints += has_breakpoint + len(part.inner_breakpoints)
        if part.cacheable:
            last = offset + index
            marked = has_breakpoint
        if part.framed and part.kind != "tool" and part.role != "assistant":
            eligible = offset + index
    return Mark(
        offset + len(parts), breakpoints, last, marked, mark.exact and exact, eligible, size
    )


def identical_prefix(a: list[Any], b: list[Any]) -> int:
    """How many leading positions of ``a`` and ``b`` hold the very same objects (a C loop)."""
    first_other = next(compress(count(), map(is_not, a, b)), None)
    return min(len(a), len(b)) if first_other is None else first_other


def header_json(body: dict[str, Any], messages_field: str) -> bytes:
    """Every field but the messages, as JSON text: equal text, equal header and rules.
    (One serialization per request is cheaper than walking the tool schemas each time.)"""
    return orjson.dumps({key: value for key, value in body.items() if key != messages_field})


def same_message(a: Any, b: Any) -> bool:
    """Whether two messages render the same: equal as JSON text, except that the order of
    their own keys does not matter: every renderer reads a message's fields by name (nested
    values are rendered as JSON text, so their key order still does)."""
    if a != b:
        return False
    if type(a) is not dict or type(b) is not dict:
        return _same_types(a, b)
    for key, value in a.items():
        if type(value) is not str and not _same_types(value, b[key]):
            return False
    return True


def _same_types(a: Any, b: Any) -> bool:
    """For values already ``==``: same types all through (``1 == 1.0 == True`` in Python)
    and the same key order (tool definitions render their keys in the given order)."""
    kind = type(a)
    if kind is not type(b):
        return False
    # Plain loops, strings skipped (already equal, and only ever equal to strings): this
    # runs on every message of every request and a generator per level costs more.
    if kind is dict:
        if list(a) != list(b):
            return False
        for key, value in a.items():
            if type(value) is not str and not _same_types(value, b[key]):
                return False
        return True
    if kind is list:
        for x, y in zip(a, b, strict=True):
            if type(x) is not str and not _same_types(x, y):
                return False
    return True


def tool_parts(tools: Any, path: str) -> list[RenderedPart]:
    """One part per tool definition, compact JSON of the tool object in its own key order
    (OpenAI's own tool rendering is not public: the requests holding tools are not exact)."""
    parts = []
    for index, tool in enumerate(as_list(tools, path)):
        label = f"{path}[{index}]"
        tool = as_dict(tool, label)
        ttl = breakpoint_ttl(tool, label)
        definition = {key: value for key, value in tool.items() if key != "cache_control"}
        parts.append(RenderedPart("tool", label, "system", [compact_json(definition)], ttl))
    return parts


def breakpoint_ttl(block: dict[str, Any], path: str) -> str | None:
    """The TTL of a block's ``cache_control`` marker (None: the default), or NO_BREAKPOINT
    where the block has none."""
    marker = block.get("cache_control")
    if marker is None:
        return NO_BREAKPOINT
    marker = as_dict(marker, f"{path}.cache_control")
    ttl = marker.get("ttl")
    if ttl is not None and not isinstance(ttl, str):
        raise RecordFieldError(
            f"{path}.cache_control.ttl", "expected a string such as '5m' or '1h'"
        )
    return ttl
