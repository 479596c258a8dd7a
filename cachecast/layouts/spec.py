"""Prompt layouts: a template of one application's requests plus a sample of its variables.

A layout is a small YAML file (our format), or a Jinja2 file that renders to one; every
string inside it may hold Jinja2 placeholders. Example::

    cachecast_layout: 1
    provider: openai
    model: gpt-4o
    system: "You are a support agent. Current time: {{ now }}"
    tools: [{type: function, function: {name: lookup, parameters: {type: object}}}]
    tool_order: fixed          # or 'shuffle': the order changes per request (a set in code)
    messages: []               # fixed messages opening every session (few-shot examples)
    turn:                      # one agent turn; earlier turns become the history
      - {role: user, content: "{{ question }}"}
      - {role: assistant, content: "{{ answer }}"}
    scope: "{{ tenant }}"      # optional: whatever separates caches (prompt_cache_key...)
    cache_breakpoints: [tools, "system:1h", last_message]   # explicit cache_control markers
    arrival: {sessions: 20, turns_per_session: 4, turn_interval_seconds: 30,
              session_interval_seconds: 60, start: "2026-01-01T00:00:00Z", output_tokens: 200}
    values:                    # the sample: one dict per session and per turn, cycled
      sessions: [{tenant: acme}]
      turns: [{question: "Where is my order?", answer: "On its way."}]

With ``provider: anthropic`` the requests are Anthropic Messages bodies (top-level
``system``); otherwise OpenAI Chat Completions bodies. ``cache_breakpoints`` puts a
``cache_control`` marker (optionally with a TTL option name) at the end of the tools, of the
system prompt, or of each request's last message (the marker moves on as the session grows,
as clients using explicit caching do).

Templates come from pull requests, so they render in Jinja2's sandbox with undefined
variables as errors (a typo must fail the check, not render as an empty string).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import jinja2
import yaml

from cachecast.core.errors import BadInputError, LimitExceededError, Location
from cachecast.layouts.sandbox import BoundedSandbox, render_bounded

LAYOUT_FORMAT_KEY = "cachecast_layout"
JINJA_SUFFIXES = (".j2", ".jinja", ".jinja2")
_TOP_LEVEL_KEYS = {
    LAYOUT_FORMAT_KEY,
    "provider",
    "model",
    "system",
    "tools",
    "tool_order",
    "messages",
    "turn",
    "scope",
    "cache_breakpoints",
    "arrival",
    "values",
    "values_file",
}
_ARRIVAL_KEYS = {
    "sessions",
    "turns_per_session",
    "turn_interval_seconds",
    "session_interval_seconds",
    "start",
    "output_tokens",
}


class LayoutError(BadInputError):
    """A layout that cannot be read: the file (or inline document) and the field at fault
    (None for the document as a whole, e.g. YAML that does not parse)."""

    title = "Invalid layout"

    def __init__(self, file: str, field: str | None, reason: str) -> None:
        self.reason = reason
        super().__init__(reason, location=Location(source=file, field=field))

    @property
    def file(self) -> str:
        return self.location.source or ""

    @property
    def field(self) -> str | None:
        return self.location.field


class NotALayoutError(LayoutError):
    """A YAML file without the ``cachecast_layout`` key: some other YAML, not ours."""


@dataclass(frozen=True, slots=True)
class Arrival:
    """When the synthetic requests arrive: sessions start every ``session_interval_seconds``,
    a session's turns follow each other every ``turn_interval_seconds``."""

    sessions: int = 10
    turns_per_session: int = 4
    turn_interval_seconds: float = 30.0
    session_interval_seconds: float = 60.0
    start: dt.datetime = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    output_tokens: int = 200

    @property
    def requests(self) -> int:
        return self.sessions * self.turns_per_session

    def describe(self) -> str:
        return (
            f"{self.sessions} sessions x {self.turns_per_session} turns, a turn every "
            f"{self.turn_interval_seconds:g} s, a new session every "
            f"{self.session_interval_seconds:g} s from {self.start.isoformat()}"
        )


@dataclass(frozen=True, slots=True)
class Layout:
    """A parsed layout. Strings still hold their placeholders; ``expand`` renders them."""

    source: str
    provider: str | None
    model: str | None
    system: str | None
    tools: tuple[Any, ...]
    tool_order: str  # 'fixed' or 'shuffle'
    messages: tuple[dict[str, Any], ...]
    turn: tuple[dict[str, Any], ...]
    scope: str | None
    breakpoints: tuple[tuple[str, str | None], ...]  # (where, ttl option name or None)
    arrival: Arrival
    session_values: tuple[dict[str, Any], ...]
    turn_values: tuple[dict[str, Any], ...]
    raw: dict[str, Any] = field(default_factory=dict)  # the document as written (for diffs)


def is_layout_document(document: object) -> bool:
    return isinstance(document, dict) and LAYOUT_FORMAT_KEY in document


# Bounded: output and time (layouts.sandbox; docs/limits.md).
_ENVIRONMENT = BoundedSandbox(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
_JINJA_MARKERS = ("{{", "{%", "{#")


@functools.lru_cache(maxsize=4096)
def _compiled(template: str) -> jinja2.Template:
    # A layout renders the same few strings for every request: compile each once.
    return _ENVIRONMENT.from_string(template)


def render_string(
    template: str, variables: Mapping[str, Any], *, where: str | None, file: str
) -> str:
    """Render one placeholder string; an undefined variable is a LayoutError naming ``where``."""
    if not any(marker in template for marker in _JINJA_MARKERS):
        return template
    try:
        return render_bounded(_compiled(template), variables)
    except jinja2.TemplateError as error:
        raise LayoutError(file, where, f"template error: {error}") from error
    except LimitExceededError as error:
        error.location = Location(source=file, field=where)
        error.args = (error.one_line(),)
        raise
    except Exception as error:
        # The template is the user's code: whatever it raises (1/0, a recursive macro, a
        # method on the wrong type) is an error in the layout, never in cachecast.
        raise LayoutError(
            file, where, f"template error: {type(error).__name__}: {error}"
        ) from error


def render_value(value: Any, variables: Mapping[str, Any], *, where: str, file: str) -> Any:
    """Render every string inside a JSON-like value (tool schemas, message content parts)."""
    if isinstance(value, str):
        return render_string(value, variables, where=where, file=file)
    if isinstance(value, list):
        return [
            render_value(item, variables, where=f"{where}[{index}]", file=file)
            for index, item in enumerate(value)
        ]
    if isinstance(value, dict):
        return {
            key: render_value(item, variables, where=f"{where}.{key}", file=file)
            for key, item in value.items()
        }
    return value


def is_jinja_name(name: str) -> bool:
    """Whether a file name says it is a whole-file Jinja2 template."""
    return PurePosixPath(name).suffix in JINJA_SUFFIXES


def load_layout_text(
    text: str,
    name: str,
    *,
    values_text: str | None = None,
    values_name: str | None = None,
    read_relative: Any = None,
    jinja: bool | None = None,
) -> Layout:
    """Parse a layout from its text; ``name`` names it in errors (``values_name`` the values,
    default ``NAME (values)``).

    A whole-file Jinja2 layout (``jinja``; None: decided by the suffix of ``name``) is
    rendered once, with no variables except those in the values passed as ``values_text``,
    into the YAML format; per-request placeholders survive when written as
    ``{% raw %}{{ now }}{% endraw %}``. ``read_relative(path) -> str`` reads a
    ``values_file`` named relative to the layout (from the same git revision when needed);
    without it (an inline document) a ``values_file`` is refused.
    """
    sample: dict[str, Any] = {}
    if values_text is not None:
        sample = _parse_values(values_text, values_name or f"{name} (values)")
    if is_jinja_name(name) if jinja is None else jinja:
        text = render_string(text, _flat_sample(sample), where=None, file=name)
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise LayoutError(name, None, f"not valid YAML: {error}") from error
    if not is_layout_document(document):
        raise NotALayoutError(name, LAYOUT_FORMAT_KEY, "missing: not a cachecast layout")
    assert isinstance(document, dict)
    return parse_layout(document, name, sample=sample, read_relative=read_relative)


def _flat_sample(sample: Mapping[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {"values": sample}
    for key, value in sample.items():
        if key not in ("sessions", "turns"):
            flat[key] = value
    return flat


def _parse_values(text: str, name: str) -> dict[str, Any]:
    try:
        values = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise LayoutError(name, None, f"not valid YAML/JSON: {error}") from error
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise LayoutError(name, None, "must be a mapping with 'sessions' and/or 'turns'")
    return values


def parse_layout(
    document: dict[str, Any],
    name: str,
    *,
    sample: dict[str, Any] | None = None,
    read_relative: Any = None,
) -> Layout:
    unknown = sorted(set(document) - _TOP_LEVEL_KEYS)
    if unknown:
        raise LayoutError(
            name, unknown[0], f"unknown key (known: {', '.join(sorted(_TOP_LEVEL_KEYS))})"
        )
    if document[LAYOUT_FORMAT_KEY] != 1:
        raise LayoutError(name, LAYOUT_FORMAT_KEY, "only version 1 is known")

    system = document.get("system")
    if system is not None and not isinstance(system, str):
        raise LayoutError(name, "system", "must be a string")
    tools = document.get("tools") or []
    if not isinstance(tools, list):
        raise LayoutError(name, "tools", "must be a list of tool schemas")
    tool_order = document.get("tool_order", "fixed")
    if tool_order not in ("fixed", "shuffle"):
        raise LayoutError(name, "tool_order", "must be 'fixed' or 'shuffle'")
    messages = _parse_messages(document.get("messages") or [], name, "messages")
    turn = _parse_messages(document.get("turn") or [], name, "turn")
    if not any(message["role"] == "user" for message in turn):
        raise LayoutError(name, "turn", "needs at least one user message")
    scope = document.get("scope")
    if scope is not None and not isinstance(scope, str):
        raise LayoutError(name, "scope", "must be a string")
    for key in ("provider", "model"):
        if document.get(key) is not None and not isinstance(document[key], str):
            raise LayoutError(name, key, "must be a string")

    values: dict[str, Any] = {}
    if "values_file" in document:
        if read_relative is None:
            raise LayoutError(
                name,
                "values_file",
                "an inline layout has no folder to read a values file from: give the values inline",
            )
        values = _parse_values(read_relative(str(document["values_file"])), document["values_file"])
    if "values" in document:
        inline = document["values"]
        if not isinstance(inline, dict):
            raise LayoutError(name, "values", "must be a mapping with 'sessions' and/or 'turns'")
        values = {**values, **inline}
    if sample:
        values = {**values, **sample}
    session_values = _parse_value_list(values.get("sessions"), name, "values.sessions")
    turn_values = _parse_value_list(values.get("turns"), name, "values.turns")

    return Layout(
        source=name,
        provider=document.get("provider"),
        model=document.get("model"),
        system=system,
        tools=tuple(tools),
        tool_order=tool_order,
        messages=messages,
        turn=turn,
        scope=scope,
        breakpoints=_parse_breakpoints(document.get("cache_breakpoints") or [], name),
        arrival=_parse_arrival(document.get("arrival") or {}, name),
        session_values=session_values,
        turn_values=turn_values,
        raw=document,
    )


BREAKPOINT_PLACES = ("tools", "system", "last_message")


def _parse_breakpoints(value: object, name: str) -> tuple[tuple[str, str | None], ...]:
    if not isinstance(value, list):
        raise LayoutError(
            name, "cache_breakpoints", "must be a list such as [system, last_message]"
        )
    breakpoints: list[tuple[str, str | None]] = []
    for index, item in enumerate(value):
        place, _, ttl = str(item).partition(":")
        if place not in BREAKPOINT_PLACES or not isinstance(item, str):
            raise LayoutError(
                name,
                f"cache_breakpoints[{index}]",
                f"{item!r}: expected one of {', '.join(BREAKPOINT_PLACES)}, optionally ':TTL'",
            )
        breakpoints.append((place, ttl or None))
    return tuple(breakpoints)


def _parse_messages(value: object, name: str, where: str) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list):
        raise LayoutError(name, where, "must be a list of messages")
    messages: list[dict[str, Any]] = []
    for index, message in enumerate(value):
        field_name = f"{where}[{index}]"
        if not isinstance(message, dict):
            raise LayoutError(name, field_name, "must be a mapping with role and content")
        if message.get("role") not in ("system", "developer", "user", "assistant", "tool"):
            raise LayoutError(
                name, f"{field_name}.role", "must be system, developer, user, assistant or tool"
            )
        if "content" not in message:
            raise LayoutError(name, f"{field_name}.content", "missing")
        messages.append(dict(message))
    return tuple(messages)


def _parse_value_list(value: object, name: str, where: str) -> tuple[dict[str, Any], ...]:
    if value is None:
        return ({},)
    if not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
        raise LayoutError(name, where, "must be a non-empty list of mappings")
    return tuple(value)


def _parse_arrival(value: object, name: str) -> Arrival:
    if not isinstance(value, dict):
        raise LayoutError(name, "arrival", "must be a mapping")
    unknown = sorted(set(value) - _ARRIVAL_KEYS)
    if unknown:
        raise LayoutError(
            name,
            f"arrival.{unknown[0]}",
            f"unknown key (known: {', '.join(sorted(_ARRIVAL_KEYS))})",
        )
    defaults = Arrival()
    options: dict[str, Any] = {}
    for key in ("sessions", "turns_per_session", "output_tokens"):
        if key in value:
            number = value[key]
            minimum = 0 if key == "output_tokens" else 1
            if isinstance(number, bool) or not isinstance(number, int) or number < minimum:
                raise LayoutError(name, f"arrival.{key}", f"must be an integer >= {minimum}")
            options[key] = number
    for key in ("turn_interval_seconds", "session_interval_seconds"):
        if key in value:
            number = value[key]
            if isinstance(number, bool) or not isinstance(number, int | float) or number < 0:
                raise LayoutError(name, f"arrival.{key}", "must be a number of seconds >= 0")
            options[key] = float(number)
    if "start" in value:
        start = value["start"]
        if isinstance(start, str):
            try:
                start = dt.datetime.fromisoformat(start)
            except ValueError as error:
                raise LayoutError(
                    name, "arrival.start", f"not an ISO 8601 time: {error}"
                ) from error
        if not isinstance(start, dt.datetime):
            raise LayoutError(name, "arrival.start", "must be an ISO 8601 date-time")
        options["start"] = start if start.tzinfo else start.replace(tzinfo=dt.UTC)
    return Arrival(**{**_arrival_dict(defaults), **options})


def _arrival_dict(arrival: Arrival) -> dict[str, Any]:
    return {name: getattr(arrival, name) for name in Arrival.__slots__}
