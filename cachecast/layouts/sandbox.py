"""The Jinja2 sandbox layouts render in, with bounded output and bounded time.

Jinja2's own sandbox stops a template from reaching Python internals, but not from asking
for any amount of work: ``{{ 'ab ' * 20000000 }}`` is a 478-byte layout and a 60 MB prompt.
Here every way a template makes text grows is bounded *before* the text is made:

* the operators that multiply or join values (``*``, ``**``, ``+``, ``%``), the filters and
  string methods that pad, repeat or replace (``center``, ``indent``, ``replace``,
  ``format``, ``join``, ...) refuse a result larger than the output left;
* ``lipsum`` (any number of paragraphs in one call) is not offered;
* the text a template renders counts against ``max_template_output_chars`` as it streams out,
  shared by every template of one layout (:func:`render_budget`);
* every loop iteration and every macro call checks the clock against
  ``max_template_render_seconds`` (also shared by one layout's templates), so a template that
  loops without writing anything still stops in time.

A limit crossed is a :class:`~cachecast.core.errors.LimitExceededError` naming the template's place
in the layout, the size and the limit (docs/limits.md).
"""

from __future__ import annotations

import contextlib
import math
import re
import string
import time
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.filters import FILTERS
from jinja2.sandbox import SandboxedEnvironment
from jinja2.visitor import NodeTransformer

from cachecast.core.errors import LimitExceededError
from cachecast.core.limits import current as current_limits

TICK = "cachecast_render_tick"
_PRINTF_WIDTH = re.compile(r"%[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


@dataclass(slots=True)
class RenderBudget:
    """What the templates of one layout may still spend: characters and time."""

    chars_left: int
    deadline: float

    def take(self, chars: int) -> None:
        self.chars_left -= chars
        if self.chars_left < 0:
            raise _too_much_text(current_limits().max_template_output_chars - self.chars_left)

    def room(self, chars: int) -> None:
        """Refuse, before it is made, a value of ``chars`` characters (or items)."""
        if chars > self.chars_left:
            spent = current_limits().max_template_output_chars - self.chars_left
            raise _too_much_text(spent + chars)

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            limit = current_limits().max_template_render_seconds
            raise LimitExceededError(
                f"the layout's templates render for more than the limit of {limit:g} s"
                " (setting max_template_render_seconds; docs/limits.md)"
            )


def _too_much_text(chars: int) -> LimitExceededError:
    limit = current_limits().max_template_output_chars
    return LimitExceededError(
        f"the layout's templates would render {chars} characters, over the limit of {limit}"
        " (setting max_template_output_chars; docs/limits.md)"
    )


_BUDGET: ContextVar[RenderBudget | None] = ContextVar("cachecast_render_budget", default=None)


def _new_budget() -> RenderBudget:
    limits = current_limits()
    return RenderBudget(
        chars_left=limits.max_template_output_chars,
        deadline=time.monotonic() + limits.max_template_render_seconds,
    )


@contextlib.contextmanager
def render_budget() -> Iterator[RenderBudget]:
    """One budget of characters and time for every template rendered inside this block (one
    layout's expansion); outside any block each render has a budget of its own."""
    budget = _new_budget()
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)


def _budget() -> RenderBudget:
    budget = _BUDGET.get()
    if budget is None:
        raise RuntimeError("a bounded template rendered outside render_string")
    return budget


def weight(value: Any, limit: int) -> int:
    """About how many characters ``value`` turns into when written out (strings their
    length, containers the sum of their items plus one each), counted up to ``limit``."""
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, Mapping):
        total = 0
        for key, item in value.items():
            total += 2 + weight(key, limit) + weight(item, limit)
            if total > limit:
                break
        return total
    if isinstance(value, list | tuple | set | frozenset):
        total = 0
        for item in value:
            total += 1 + weight(item, limit)
            if total > limit:
                break
        return total
    return 24  # a number, None, an undefined: a few characters


def _check_weight(value: Any) -> None:
    budget = _budget()
    budget.room(weight(value, budget.chars_left + 1))


def _check_printf(template: str, args: Any) -> None:
    """``'%999999999d' % 1`` makes a billion characters: refuse widths past the room left."""
    budget = _budget()
    starred = isinstance(args, tuple) and any(
        "*" in (match.group(1) or "") + (match.group(2) or "")
        for match in _PRINTF_WIDTH.finditer(template)
    )
    for match in _PRINTF_WIDTH.finditer(template):
        for part in match.groups():
            if part and part.isdigit():
                budget.room(int(part))
    if starred:
        for arg in args:
            if isinstance(arg, int) and not isinstance(arg, bool):
                budget.room(abs(arg))


def _check_format(template: str) -> None:
    """``'{:>999999999}'.format(1)``: the same for ``str.format`` widths and precisions."""
    budget = _budget()
    for _, _, spec, _ in string.Formatter().parse(template):
        for number in re.findall(r"\d+", spec or ""):
            budget.room(int(number))


def _projected_replace(text: str, old: str, new: str, count: int | None = None) -> int:
    occurrences = (len(text) + 1) if old == "" else text.count(old)
    if count is not None and count >= 0:
        occurrences = min(occurrences, count)
    return len(text) + occurrences * (len(new) - len(old))


def _binop_guard(operator: str, left: Any, right: Any) -> None:
    budget = _budget()
    if operator == "*":
        for sequence, times in ((left, right), (right, left)):
            if isinstance(sequence, str | bytes | list | tuple) and isinstance(times, int):
                budget.room(weight(sequence, budget.chars_left + 1) * max(times, 0))
    elif operator == "+":
        if isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
            room = budget.chars_left + 1
            budget.room(weight(left, room) + weight(right, room))
    elif operator == "**":
        if isinstance(left, int | float) and isinstance(right, int | float):
            base = abs(float(left))
            # Digits of the result: exponent x log10(base); a number longer than the output
            # left could never be written out anyway.
            if base > 1 and right > 0:
                digits = float(right) * math.log10(base)
                budget.room(int(min(digits, 1e18)))
    elif operator == "%" and isinstance(left, str):
        _check_printf(left, right)


def _guarded_str_method(obj: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    budget = _budget()
    values = list(args) + list(kwargs.values())
    if name in ("center", "ljust", "rjust", "zfill"):
        width = values[0] if values else 0
        if isinstance(width, int):
            budget.room(width)
    elif name == "expandtabs":
        size = values[0] if values else 8
        if isinstance(size, int):
            budget.room(len(obj) + obj.count("\t") * max(size, 0))
    elif name == "replace" and len(values) >= 2:
        old, new = values[0], values[1]
        count = values[2] if len(values) > 2 else None
        if isinstance(old, str) and isinstance(new, str):
            budget.room(
                _projected_replace(obj, old, new, count if isinstance(count, int) else None)
            )
    elif name == "join" and values:
        budget.room(weight(values[0], budget.chars_left + 1) * (1 + len(obj)))
    elif name in ("format", "format_map"):
        _check_format(obj)


def _bounded_filter(name: str, guard: Callable[..., None]) -> Callable[..., Any]:
    original = FILTERS[name]

    def bounded(*args: Any, **kwargs: Any) -> Any:
        guard(*args, **kwargs)
        return original(*args, **kwargs)

    bounded.__name__ = original.__name__
    for flag in ("jinja_pass_arg",):
        if hasattr(original, flag):
            setattr(bounded, flag, getattr(original, flag))
    return bounded


def _text_of(args: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
    """The filtered value and the filter's own arguments (after the eval context or
    environment that some filters are passed first)."""
    if args and isinstance(args[0], nodes.EvalContext | jinja2.Environment):
        args = args[1:]
    return (args[0] if args else ""), args[1:]


def _center_guard(*args: Any, **kwargs: Any) -> None:
    _, rest = _text_of(args)
    width = rest[0] if rest else kwargs.get("width", 80)
    if isinstance(width, int):
        _budget().room(width)


def _indent_guard(*args: Any, **kwargs: Any) -> None:
    text, rest = _text_of(args)
    width = rest[0] if rest else kwargs.get("width", 4)
    size = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
    lines = str(text).count("\n") + 1
    _budget().room(len(str(text)) + lines * max(size, 0))


def _replace_guard(*args: Any, **kwargs: Any) -> None:
    text, rest = _text_of(args)
    old = rest[0] if rest else kwargs.get("old", "")
    new = rest[1] if len(rest) > 1 else kwargs.get("new", "")
    count = rest[2] if len(rest) > 2 else kwargs.get("count")
    _budget().room(
        _projected_replace(str(text), str(old), str(new), count if isinstance(count, int) else None)
    )


def _format_guard(*args: Any, **kwargs: Any) -> None:
    text, rest = _text_of(args)
    _check_printf(str(text), tuple(rest) if rest else tuple(kwargs.values()))


def _join_guard(*args: Any, **kwargs: Any) -> None:
    value, rest = _text_of(args)
    separator = rest[0] if rest else kwargs.get("d", "")
    budget = _budget()
    room = budget.chars_left + 1
    items = weight(value, room)
    budget.room(items + items * len(str(separator)))


def _wordwrap_guard(*args: Any, **kwargs: Any) -> None:
    text, _ = _text_of(args)
    _budget().room(2 * len(str(text)))


_BOUNDED_FILTERS = {
    "center": _center_guard,
    "indent": _indent_guard,
    "replace": _replace_guard,
    "format": _format_guard,
    "join": _join_guard,
    "wordwrap": _wordwrap_guard,
}


def _tick() -> str:
    _budget().tick()
    return ""


class _TickInserter(NodeTransformer):
    """A clock check at the top of every loop body and every macro body: pure-Python loops
    that write nothing would otherwise never come back to the streaming check."""

    def _ticked(self, body: list[nodes.Node]) -> list[nodes.Node]:
        call = nodes.Call(nodes.Name(TICK, "load"), [], [], None, None)
        return [nodes.ExprStmt(call), *body]

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.body = self._ticked(node.body)
        return node

    def visit_Macro(self, node: nodes.Macro) -> nodes.Node:
        self.generic_visit(node)
        node.body = self._ticked(node.body)
        return node

    def visit_CallBlock(self, node: nodes.CallBlock) -> nodes.Node:
        self.generic_visit(node)
        node.body = self._ticked(node.body)
        return node


class BoundedSandbox(SandboxedEnvironment):
    """Jinja2's sandbox with the bounds of the module docstring."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(optimized=False, **options)  # no constant folding at compile time
        self.globals.pop("lipsum", None)
        self.globals[TICK] = _tick
        for name, guard in _BOUNDED_FILTERS.items():
            self.filters[name] = _bounded_filter(name, guard)

    def _generate(
        self,
        source: nodes.Template,
        name: str | None,
        filename: str | None,
        defer_init: bool = False,
    ) -> str:
        ticked = _TickInserter().visit(source)
        return super()._generate(ticked, name, filename, defer_init)

    def call_binop(
        self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any
    ) -> Any:
        _binop_guard(operator, left, right)
        return super().call_binop(context, operator, left, right)

    def call(
        __self,  # Jinja2's own signature: a keyword argument may be named self
        __context: jinja2.runtime.Context,
        __obj: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        # The sandbox hands str.format out wrapped (functools.update_wrapper): look inside.
        method = getattr(__obj, "__wrapped__", __obj)
        owner = getattr(method, "__self__", None)
        if isinstance(owner, str):
            _guarded_str_method(owner, getattr(method, "__name__", ""), args, kwargs)
        _budget().tick()
        return super().call(__context, __obj, *args, **kwargs)


def render_bounded(template: jinja2.Template, variables: Mapping[str, Any]) -> str:
    """Render ``template`` within the current budget (or a fresh one): its text streams out
    chunk by chunk, each counted against the characters left and the clock."""
    budget = _BUDGET.get()
    token = None
    if budget is None:
        budget = _new_budget()
        token = _BUDGET.set(budget)
    try:
        parts: list[str] = []
        for chunk in template.generate(**variables):
            budget.take(len(chunk))
            budget.tick()
            parts.append(chunk)
        return "".join(parts)
    finally:
        if token is not None:
            _BUDGET.reset(token)


__all__ = [
    "BoundedSandbox",
    "LimitExceededError",
    "RenderBudget",
    "render_bounded",
    "render_budget",
]
