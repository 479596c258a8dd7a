"""Headless output of coding agents (``claude -p --output-format stream-json|json``,
``codex exec --json``) read as session requests: the units ``logs.headless`` parses, each a
:class:`SessionRequest` of the client that printed it (its profile, its provider), undated
(the output has no time) and marked with what its usage covers (``unit``: request, turn,
run). docs/clients.md, "Headless output", says what is read and what is not known.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from cachecast.core.errors import BadInputError, LimitExceededError, Location, RecordFieldError
from cachecast.logs.errors import LogRecordError
from cachecast.logs.headless import Unit, units
from cachecast.logs.headless_names import CLAUDE_RESULT, CLAUDE_STREAM, CODEX_EXEC, HEADLESS_FORMATS
from cachecast.logs.usage import normalize_usage
from cachecast.sessions.native import (
    CLAUDE_CODE,
    CODEX,
    NO_DEFAULTS,
    ModelDefaults,
    SessionRequest,
    _claude_provider,
    make_request,
)

__all__ = ["HEADLESS_FORMATS", "PER_UNIT", "client_of", "headless_requests"]

# What a unit of usage that is not one request covers, in the words refusals use.
PER_UNIT = {
    "turn": "codex exec --json: every request of a turn summed",
    "run": "claude -p --output-format json: each model's tokens over the whole run",
}

_CLIENT = {CLAUDE_STREAM: CLAUDE_CODE, CLAUDE_RESULT: CLAUDE_CODE, CODEX_EXEC: CODEX}


def client_of(format: str) -> str:
    """The client (and profile) whose headless output ``format`` is."""
    return _CLIENT[format]


def headless_requests(
    path: Path,
    source: str,
    format: str,
    skipped: Counter[str],
    defaults: ModelDefaults = NO_DEFAULTS,
    *,
    need_model: bool = True,
) -> Iterator[SessionRequest | LogRecordError]:
    """Every unit of a headless output file as a request, errors in place. A unit naming no
    model takes ``--model``; where none is given the file is refused (BadInputError naming
    the file and ``--model``): ``codex exec --json`` never names its model. ``need_model``
    false (``inspect``, which prices nothing): such a unit's model is left empty."""
    for unit in units(path, source, format, skipped):
        if isinstance(unit, LogRecordError):
            yield unit
            continue
        model = unit.model or defaults.model
        if model is None and not need_model:
            model = ""
        if model is None:
            what = (
                "codex exec --json names no model"
                if format == CODEX_EXEC
                else ("this result names no model (no modelUsage)")
            )
            raise BadInputError(
                f"{what}: give --model (the model the run used)",
                location=Location(source=source, line=unit.line, field="model"),
            )
        try:
            yield _request(unit, source, format, model, defaults)
        except RecordFieldError as error:
            yield LogRecordError(source, unit.line, error.field, error.reason)
        except LimitExceededError as error:
            raise error.located(source, unit.line) from None


def _request(
    unit: Unit, source: str, format: str, model: str, defaults: ModelDefaults
) -> SessionRequest:
    usage = normalize_usage(unit.usage, convention=unit.convention, path=unit.where)
    if unit.convention == "codex" and (usage.cache_read_tokens or 0) > (usage.input_tokens or 0):
        raise RecordFieldError(
            f"{unit.where}.cached_input_tokens",
            f"{usage.cache_read_tokens} exceeds input_tokens {usage.input_tokens} (a subset)",
        )
    client = client_of(format)
    if client == CLAUDE_CODE:
        provider = _claude_provider(model, None if unit.model else defaults.provider)
    else:
        provider = unit.provider or defaults.provider or "openai"
    built = make_request(
        source,
        unit.line,
        unit.request_id,
        unit.lineage,
        model,
        None,  # no time in the output
        usage,
        event=unit.event,
        provider=provider,
        client_version=unit.version,
        client=client,
        session=unit.session,
        project=unit.project,
    )
    return dataclasses.replace(built, unit=unit.unit)
