"""Bounds on claimed and computed sizes: what a small input may make cachecast do.

A log record can claim any token count (``usage.input_tokens: 1e40``), a layout can ask a
template for any amount of text, a model config for any number of layers. Each such size is
checked against its bound here *before* the work it would cause, and a size over its bound is
a :class:`~cachecast.core.errors.LimitExceededError` (exit 2, HTTP 422 ``limit-exceeded``) naming
the field, the value and the limit, and the setting that raises it.

The bounds in force are a context variable: the command line runs with the defaults below
(docs/limits.md gives each with its reason); the service runs every request and job with the
limits of its settings (``max_request_tokens`` ...). Code reads them with :func:`current`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, fields

from cachecast.core.errors import LimitExceededError, Location


@dataclass(frozen=True, slots=True)
class Limits:
    """Every bound, with its default (docs/limits.md). Field names are the service settings'
    names (``CACHECAST_MAX_REQUEST_TOKENS`` ...)."""

    # Tokens one request may claim or carry, input or output: above every context window
    # offered today (10 million tokens), so a real log never meets it.
    max_request_tokens: int = 10_000_000
    # Prompt and output tokens of all requests of one log together.
    max_log_tokens: int = 20_000_000_000
    # Records (lines) of one log.
    max_log_records: int = 50_000_000
    # Characters one rendered template (one layout string) may produce.
    max_template_output_chars: int = 10_000_000
    # Seconds the templates of one layout may take to render, all requests together.
    max_template_render_seconds: float = 10.0
    # Model geometry: layers, attention (and KV, expert) heads, any width or size in a config.
    max_model_layers: int = 4096
    max_model_heads: int = 65_536
    max_model_dimension: int = 16_777_216
    # Decoders (cachecast.logs.decoding): a YAML document with every alias expanded, in nodes
    # and in scalar characters; the output of one compressed body.
    max_yaml_nodes: int = 2_000_000
    max_yaml_chars: int = 2_000_000_000
    max_decompressed_bytes: int = 1_000_000_000
    # Work budgets of one pass, checked before anything is built: bytes of the log files read
    # (as stored; a compressed file's output is bounded by max_decompressed_bytes), bytes of
    # one line of JSON lines (refused before the line is read whole), characters of text one
    # record holds (checked before any of it is rendered or tokenized; logs.sanitize); bytes of
    # a whole JSON document (a HAR file, an OTLP export), read and parsed at once.
    max_log_bytes: int = 64_000_000_000
    max_line_bytes: int = 64 * 1024 * 1024
    max_document_bytes: int = 64 * 1024 * 1024
    max_record_chars: int = 40_000_000


DEFAULT_LIMITS = Limits()
# The service's own, much lower, per-request budgets: one unauthenticated request must not be
# able to keep a worker busy for minutes or take gigabytes (docs/limits.md gives the reasons).
# The body itself is bounded by the service setting max_body_bytes (50 MB).
SERVICE_LIMITS = Limits(
    max_request_tokens=2_000_000,
    max_log_tokens=50_000_000,
    max_log_records=1_000_000,
    max_template_output_chars=10_000_000,
    max_template_render_seconds=5.0,
    max_yaml_nodes=1_000_000,
    max_yaml_chars=100_000_000,
    max_decompressed_bytes=100_000_000,
    max_log_bytes=200_000_000,
    max_line_bytes=16 * 1024 * 1024,
    max_document_bytes=32 * 1024 * 1024,
    max_record_chars=8_000_000,
)
# A frozen dataclass: the shared default cannot be changed in place.
_CURRENT: ContextVar[Limits] = ContextVar("cachecast_limits", default=DEFAULT_LIMITS)

LIMIT_NAMES = tuple(field.name for field in fields(Limits))


def current() -> Limits:
    """The limits in force for the code running now."""
    return _CURRENT.get()


@contextlib.contextmanager
def limits_in_force(limits: Limits) -> Iterator[None]:
    """Run the code inside this block (and the threads it hands work to through
    ``contextvars``, as Starlette's thread pool does) under ``limits``."""
    token = _CURRENT.set(limits)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def set_limits(limits: Limits) -> None:
    """Put ``limits`` in force for the rest of the current context (a service thread)."""
    _CURRENT.set(limits)


def exceeded(
    name: str, value: object, *, field: str | None, what: str, location: Location | None = None
) -> LimitExceededError:
    """The error for ``value`` of ``field`` over the limit ``name``: the message says the
    value, the limit and the setting that raises it."""
    limit = getattr(current(), name)
    where = location or Location(field=field)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        value = int(value)  # 1e8 claimed as a JSON number reads 100000000, not 100000000.0
    return LimitExceededError(
        f"{what} {value} is over the limit of {limit} (setting {name}; docs/limits.md)",
        location=where,
    )


def check_tokens(value: float, field: str) -> None:
    """A token count one request claims or carries (as given: ``1e+40`` stays readable):
    at most ``max_request_tokens``."""
    if value > current().max_request_tokens:
        raise exceeded("max_request_tokens", value, field=field, what="a token count of")


def check_count(
    name: str,
    value: int,
    field: str | None,
    what: str,
    *,
    location: Location | None = None,
    unit: str = "",
) -> int:
    """``value`` at most the limit ``name`` (an integer limit); ``unit`` follows the value."""
    limit = getattr(current(), name)
    if value > limit:
        shown = f"{value:,} {unit}" if unit else value
        raise exceeded(name, shown, field=field, what=what, location=location)
    return value
