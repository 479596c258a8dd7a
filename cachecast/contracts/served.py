"""The contract of the model that served a logged request, on the request's date.

A request in a log is evidence: the model named in it answered on that day. Two cases in
which the store alone would refuse such a request are priced here instead, with a note
that says what was assumed (docs/predictions.md, "Contracts of served models"):

- **Dated before the first stored version of a model whose launch date no source gives**
  (``data/lifecycle.json`` has none): that first version starts on the earliest day our
  sources priced the model (often the day a price map was read), not on its launch. The
  log proves the model served earlier, so the request is priced under that first version
  and the note says the price on that date is unverified [U]. Where ``lifecycle.json``
  gives the launch date, a request before the first version is refused with one error
  naming the launch date and its source.
- **A log whose times are not dates** (no timestamps, or trace-relative ones), for a model
  with no version in force today (retired): the recording was made while the model was
  served, so its last version applies, with a note naming it.

And one case the store would price without a word: a request of the days a model served only
in its vendor's own agent (``client_only_from`` to ``launched_on`` in ``lifecycle.json``) was
billed to a subscription, not per token, so whatever version prices it, the note says the
price on that day is unverified [U].
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from cachecast.contracts.model import ContractTerms
from cachecast.core.errors import ContractNotYetInForceError, UnknownContractError
from cachecast.core.provider_names import normalize_provider
from cachecast.logs.providers import FAST_MODE_SUFFIX

if TYPE_CHECKING:  # the lifecycle (and the SQL types its reader brings) only when needed
    from cachecast.contracts.history import Lifecycle


class ContractVersions(Protocol):
    """What pricing a served request needs of the store (``ContractStore`` has both)."""

    def as_of(self, provider: str, model: str, day: dt.date) -> ContractTerms: ...

    def history(self, provider: str, model: str) -> list[ContractTerms]: ...


@dataclass(frozen=True, slots=True)
class ServedContract:
    """The terms a served request is priced under, and what was assumed to find them."""

    terms: ContractTerms
    note: str | None = None


def served_contract(
    store: ContractVersions,
    provider: str,
    model: str,
    day: dt.date | None,
    today: dt.date,
    lifecycle: Mapping[tuple[str, str], Lifecycle] | None = None,
) -> ServedContract:
    """The contract of ``provider``/``model`` for a request it served on ``day`` (None: the
    log's times are not dates). Raises UnknownContractError where none can be named (saying
    why in words where ``lifecycle.json`` knows that no per-token price was published), and
    where a fast-mode model would be priced under a contract that is not a fast one (an
    alias pattern of the standard model matches its name)."""
    if lifecycle is None:
        lifecycle = packaged_lifecycle()
    try:
        served = _served(store, provider, model, day, today, lifecycle)
    except UnknownContractError:
        life = lifecycle.get((normalize_provider(provider), model.strip().lower()))
        if life is None or not life.not_priced:
            raise
        raise UnknownContractError(
            f"{provider}/{model}: {life.not_priced} ({life.not_priced_source}): not priced"
        ) from None
    fast = model.strip().lower().endswith(FAST_MODE_SUFFIX)
    # A model whose own name has the word (xAI's grok-4-fast-reasoning, the model a request
    # for grok-4-fast runs) is no fast mode of another: only a contract without it is refused.
    if fast and f"{FAST_MODE_SUFFIX}-" not in f"{served.terms.model}-":
        raise UnknownContractError(
            f"{provider}/{model}: fast mode bills a multiple of"
            f" {served.terms.provider}/{served.terms.model}'s prices and no contract states"
            " them: not priced"
        )
    return served


def _served(
    store: ContractVersions,
    provider: str,
    model: str,
    day: dt.date | None,
    today: dt.date,
    lifecycle: Mapping[tuple[str, str], Lifecycle],
) -> ServedContract:
    if day is None:
        try:
            return ServedContract(store.as_of(provider, model, today))
        except ContractNotYetInForceError:
            raise
        except UnknownContractError:
            versions = store.history(provider, model)  # (raises for an unknown model)
            ended = [terms for terms in versions if terms.effective_from <= today]
            if not ended:
                raise
            last = max(ended, key=lambda terms: terms.effective_from)
            return ServedContract(
                last,
                f"the log's times are not dates and {last.provider}/{last.model} has no version"
                f" in force on {today.isoformat()}: priced under its last version"
                f" {_span(last)}, in force while the model served the recorded requests",
            )
    try:
        terms = store.as_of(provider, model, day)
    except ContractNotYetInForceError as error:
        versions = store.history(provider, model)
        first = min(versions, key=lambda terms: terms.effective_from)
        life = lifecycle.get((first.provider, first.model))
        if life is not None and _client_only(life, day):
            return ServedContract(first, _client_only_note(first, life, day, "that launch's"))
        if life is not None and life.launched_on is not None:
            raise ContractNotYetInForceError(
                f"{error.message}; the model launched on {life.launched_on.isoformat()}"
                f" ({life.launch_source})"
            ) from None
        corrected, how = _corrected_first(first, versions)
        return ServedContract(
            corrected,
            f"[U] price unverified on {day.isoformat()}: the log shows"
            f" {first.provider}/{first.model} serving before its first stored version"
            f" ({first.effective_from.isoformat()}), whose start is the earliest day our"
            f" sources priced it, not a launch date (none of our sources gives one); priced"
            f" under {how}",
        )
    life = lifecycle.get((terms.provider, terms.model))
    if life is not None and _client_only(life, day):
        # A version stored for those days (the catalog's history carried back to the agent's
        # release) prices the request, but no per-token price of that day exists.
        return ServedContract(terms, _client_only_note(terms, life, day, "the stored version's"))
    return ServedContract(terms)


@functools.cache
def packaged_lifecycle() -> Mapping[tuple[str, str], Lifecycle]:
    """``lifecycle.json`` as packaged, read once."""
    from cachecast.contracts.history import read_lifecycle

    return read_lifecycle()


def _client_only(life: Lifecycle, day: dt.date) -> bool:
    """Whether ``day`` is one on which the model served only in its vendor's own agent."""
    return (
        life.launched_on is not None
        and life.client_only_from is not None
        and life.client_only_from <= day < life.launched_on
    )


def _client_only_note(terms: ContractTerms, life: Lifecycle, day: dt.date, whose: str) -> str:
    """The [U] note of a request ``_client_only`` found (both dates are set then)."""
    released = life.client_only_from.isoformat() if life.client_only_from else "?"
    launched = life.launched_on.isoformat() if life.launched_on else "?"
    return (
        f"[U] price unverified on {day.isoformat()}: {terms.provider}/{terms.model}"
        f" served only through its vendor's own agent then (from {released}:"
        f" {life.client_only_source}), billed to a subscription, not per token; its"
        f" per-token API launched on {launched} ({life.launch_source}): priced at {whose}"
        f" prices, {_span(terms)}"
    )


def _corrected_first(
    first: ContractTerms, versions: list[ContractTerms]
) -> tuple[ContractTerms, str]:
    """The terms a request dated before ``first`` is priced under: ``first``'s, unless
    ``first`` lasts one day and the next version starts where it ends. A correction starts
    the day after the version it corrects (a start cannot be shared: docs/contracts.md), so
    such a first version is what the store knew before the correction, and its correction
    is what the store knows now."""
    after = first.effective_to
    if after is not None and after == first.effective_from + dt.timedelta(days=1):
        following = [terms for terms in versions if terms.effective_from == after]
        if following:
            return following[0], (
                f"the terms of {_span(following[0])}, which correct that one-day version"
            )
    return first, "that version's terms"


def _span(terms: ContractTerms) -> str:
    end = terms.effective_to.isoformat() if terms.effective_to is not None else "open"
    return f"[{terms.effective_from.isoformat()}, {end})"
