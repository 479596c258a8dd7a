"""The model an API served when a request named none, as its reference stated on the day.

Cohere's v1 ``/chat`` takes an optional ``model``; a body without one was answered by the
endpoint's default model, and no v1 response names the model (``meta`` carries the API
version and the billed units only). Cohere's API reference stated the default in the
``model`` parameter's text ("Defaults to `command-r-plus`."), and that text moved. The
Python SDK's client is generated from the reference, so each release's ``base_client.py``
carries the text of its day; the releases' files are dated (the sdist's file times). The
statements below are those dated releases (docs/contracts.md, "contracts-v29"):

========== ============================ ==========================================
release    files dated                  ``chat``'s ``model``
========== ============================ ==========================================
5.0.0      2024-03-20                   "Defaults to `command`."
5.1.0      2024-03-21                   "Defaults to `command`."
5.2.0      2024-04-03                   "Defaults to `command-r`."
5.3.0      2024-04-16                   "Defaults to `command-r`."
5.3.2      2024-04-17                   "Defaults to `command-r`."
5.3.3      2024-04-23                   "Defaults to `command-r-plus`."
5.4.0      2024-05-09                   "Defaults to `command-r-plus`."
5.5.0      2024-05-14                   "Defaults to `command-r-plus`."
5.13.8     2025-01-14                   "Defaults to `command-r-plus-08-2024`."
5.14.2     2025-04-02                   "Defaults to `command-r-plus-08-2024`."
5.15.0     2025-04-15                   no default stated
========== ============================ ==========================================

(The 4.x clients of before March 2024 state none; 5.8.0 still reads `command-r-plus` and
5.9.0 already `command-r-plus-08-2024`, but neither release's files carry a date.)

A day between two dated statements of the same model is that model's: the reference said
so before and after it. A day between two statements that differ is undated [U]: the
default moved on some day between them, so neither is stated for it, unless only one of
the two models had been released that day (a model cannot be the default before its
launch in ``lifecycle.json``). A day before the first statement or after the reference
stopped stating one is in none of our sources. The reasons say which.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from cachecast.core.provider_names import normalize_provider


@dataclass(frozen=True, slots=True)
class DefaultStatement:
    """What one dated release of a provider's reference says the default model is."""

    day: dt.date  # the day of the release's files
    model: str | None  # None: the reference states no default
    release: str  # the release that carries it


@dataclass(frozen=True, slots=True)
class DocumentedDefault:
    """The model a request without one is priced as, and the note that says so."""

    model: str
    note: str


def _statement(day: str, model: str | None, release: str) -> DefaultStatement:
    return DefaultStatement(dt.date.fromisoformat(day), model, release)


# Cohere's v1 /chat: the table of the module's docstring, in order of day.
COHERE_V1_CHAT: tuple[DefaultStatement, ...] = (
    _statement("2024-03-20", "command", "5.0.0"),
    _statement("2024-03-21", "command", "5.1.0"),
    _statement("2024-04-03", "command-r", "5.2.0"),
    _statement("2024-04-16", "command-r", "5.3.0"),
    _statement("2024-04-17", "command-r", "5.3.2"),
    _statement("2024-04-23", "command-r-plus", "5.3.3"),
    _statement("2024-05-09", "command-r-plus", "5.4.0"),
    _statement("2024-05-14", "command-r-plus", "5.5.0"),
    _statement("2025-01-14", "command-r-plus-08-2024", "5.13.8"),
    _statement("2025-04-02", "command-r-plus-08-2024", "5.14.2"),
    _statement("2025-04-15", None, "5.15.0"),
)

STATEMENTS: dict[str, tuple[DefaultStatement, ...]] = {"cohere": COHERE_V1_CHAT}


def _cited(statement: DefaultStatement) -> str:
    said = f"'Defaults to {statement.model}'" if statement.model is not None else "no default"
    return (
        f"{said} in Cohere's Python SDK {statement.release} of"
        f" {statement.day.isoformat()}, generated from the API reference"
    )


def documented_default(
    provider: str, day: dt.date | None, launched: Callable[[str], dt.date | None]
) -> DocumentedDefault | str:
    """The model ``provider``'s API served on ``day`` to a request that named none, as its
    reference stated it, with a note naming the assumption and its source; else the reason
    (a string) why no model can be named. ``launched(model)`` gives a model's launch day
    (``lifecycle.json``), which excludes a later default from the days before it."""
    key = normalize_provider(provider)
    statements = STATEMENTS.get(key)
    name = f"{provider.lower()}: the record names no model (the API served its default model"
    if statements is None:
        return f"{name}, and which one it was is in none of our sources: give --model)"
    if day is None:
        return f"{name}, which changed over time, and the log's times are not dates: give --model)"
    before = [s for s in statements if s.day <= day]
    after = [s for s in statements if s.day >= day]
    first, last = statements[0], statements[-1]
    if not before:
        return (
            f"{name}; Cohere's API reference is first seen stating one on"
            f" {first.day.isoformat()} ({_cited(first)}), after {day.isoformat()}: give --model)"
        )
    said, next_said = before[-1], (after[0] if after else None)
    if said.model is None or next_said is None:
        return (
            f"{name}; the API reference states none on {day.isoformat()} (its last statement:"
            f" {_cited(last)}): give --model)"
        )
    if said.model == next_said.model:
        cited = _cited(said) if said == next_said else f"{_cited(said)}; {_cited(next_said)}"
        return DocumentedDefault(
            said.model,
            f"a Cohere v1 /chat body without 'model': priced as {said.model}, the default"
            f" the API reference stated on {day.isoformat()} ({cited}); no v1 response names"
            " the model, so it is assumed, not observed (docs/contracts.md, 'contracts-v29')",
        )
    later = next_said.model
    if later is None:
        return (
            f"{name}; the API reference stopped stating one between {_cited(said)} and"
            f" {_cited(next_said)}, and on which day is in none of our sources [U]: give"
            " --model)"
        )
    later_launch = launched(later)
    if later_launch is not None and day < later_launch:
        return DocumentedDefault(
            said.model,
            f"a Cohere v1 /chat body without 'model': priced as {said.model}, the default"
            f" the API reference stated last ({_cited(said)}); the next statement"
            f" ({_cited(next_said)}) names {later}, launched {later_launch.isoformat()},"
            f" after {day.isoformat()} [U: the day the default moved is in none of our"
            " sources]; the model is assumed, not observed (docs/contracts.md, 'contracts-v29')",
        )
    return (
        f"{name}; on {day.isoformat()} it was {said.model} or {next_said.model}: the API"
        f" reference moved between {_cited(said)} and {_cited(next_said)}, and the day it"
        " moved is in none of our sources [U]: give --model)"
    )
