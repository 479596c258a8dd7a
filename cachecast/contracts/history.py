"""Gaps in the stored history of each contract, between its model's launch and a day.

A contract's history is complete when some version is in force on every day from the model's
launch until it is retired or until the day asked. Three things can break that:

- a **hole**: days between two stored versions on which none is in force, unless the
  lifecycle data (``data/lifecycle.json``) declares the model was not served then, with a
  source (DeepSeek took ``deepseek-chat`` away between two generations, for instance);
- a **late start**: the first version starts after the model's known launch date
  (``lifecycle.json`` ``launched_on``, with its source), so a log of the first days meets no
  contract;
- nothing else: a last version with an ``effective_to`` is a retirement. The store only keeps
  a bounded last version when it was written so on purpose (docs/contracts.md, rule 4), and
  the catalog's bounded last versions carry the provider's retirement date and source in
  their notes. Retirements are counted, not reported as gaps.

A model with no known launch date is counted as such: its first version is the earliest day
our sources priced it, which may be after the launch (docs/contracts.md says how to add one).
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterable, Mapping
from enum import StrEnum
from importlib import resources
from typing import Any

from pydantic import BaseModel, Field, model_validator

from cachecast.contracts.errors import ContractFormatError
from cachecast.contracts.model import ContractTerms
from cachecast.contracts.serialize import loads_json
from cachecast.core.dates import IsoDate

LIFECYCLE_FILE = "lifecycle.json"


class NotServed(BaseModel):
    """A span on which a provider did not serve the model under this id (half-open)."""

    start: IsoDate
    end: IsoDate | None = None
    source: str = Field(min_length=1)


class Lifecycle(BaseModel):
    """What our sources say of one model's launch and the spans it was not served."""

    launched_on: IsoDate | None = None
    launch_source: str = ""
    launch_note: str = Field(default="", description="what the launch source says of prices")
    not_served: tuple[NotServed, ...] = ()
    client_only_from: IsoDate | None = Field(
        default=None,
        description="the first day the vendor's own agent (Codex signed in with ChatGPT)"
        " served the model, before ``launched_on``, its launch in the per-token API: no"
        " per-token price was published for the days between",
    )
    client_only_source: str = ""
    not_priced: str = Field(
        default="",
        description="why no per-token price exists for an id no contract names (served only"
        " in a subscription's agent, say): the reason a request of it is not priced",
    )
    not_priced_source: str = ""

    @model_validator(mode="after")
    def _client_only_before_launch(self) -> Lifecycle:
        if self.client_only_from is not None and (
            self.launched_on is None
            or self.client_only_from >= self.launched_on
            or not self.client_only_source
        ):
            raise ValueError(
                "client_only_from needs a launched_on after it and a client_only_source"
            )
        if self.not_priced and not self.not_priced_source:
            raise ValueError("not_priced needs a not_priced_source")
        return self


class GapKind(StrEnum):
    HOLE = "hole"
    LATE_START = "late_start"


class HistoryGap(BaseModel):
    """Days on which a model was served but no version of its contract is in force."""

    kind: GapKind
    provider: str
    model: str
    start: dt.date = Field(description="first day without a contract")
    end: dt.date = Field(description="first day with one again (exclusive)")
    evidence: str = Field(description="why these days need a contract: the launch's source")


class HistorySummary(BaseModel):
    """How complete the stored history is, up to ``until``."""

    until: dt.date
    contracts: int
    gaps: list[HistoryGap]
    retired: int = Field(description="contracts whose last version ended before `until`")
    launch_known: int = Field(description="contracts whose launch date our sources give")
    launch_unknown: list[str] = Field(
        description="provider/model whose launch date no source gives: the first version is "
        "the earliest day our sources priced it"
    )


def read_lifecycle(data: Any | None = None) -> dict[tuple[str, str], Lifecycle]:
    """The packaged lifecycle data (or ``data`` in its form), keyed by (provider, model)."""
    if data is None:
        text = resources.files("cachecast.contracts").joinpath("data", LIFECYCLE_FILE)
        data = loads_json(text.read_text("utf-8"), LIFECYCLE_FILE)
    models = data.get("models") if isinstance(data, Mapping) else None
    if not isinstance(models, Mapping):
        raise ContractFormatError(LIFECYCLE_FILE, "", "models", "must be an object")
    found: dict[tuple[str, str], Lifecycle] = {}
    for key, value in models.items():
        provider, sep, model = str(key).partition("/")
        if not sep:
            raise ContractFormatError(LIFECYCLE_FILE, str(key), "", "key must be provider/model")
        try:
            found[(provider, model)] = Lifecycle.model_validate(value)
        except ValueError as error:
            raise ContractFormatError(LIFECYCLE_FILE, str(key), "", str(error)) from error
    return found


def _declared(spans: Iterable[NotServed], start: dt.date, end: dt.date) -> bool:
    return any(span.start <= start and (span.end is None or end <= span.end) for span in spans)


def history_gaps(
    history: Iterable[ContractTerms],
    until: dt.date,
    lifecycle: Mapping[tuple[str, str], Lifecycle] | None = None,
) -> HistorySummary:
    """Every hole and late start in ``history`` (all stored versions) up to ``until``."""
    known = read_lifecycle() if lifecycle is None else lifecycle
    gaps: list[HistoryGap] = []
    retired = 0
    launch_known = 0
    unknown: list[str] = []
    contracts = 0
    ordered = sorted(history, key=lambda t: (t.provider, t.model, t.effective_from))
    for (provider, model), group in itertools.groupby(ordered, key=lambda t: (t.provider, t.model)):
        versions = [terms for terms in group if terms.effective_from < until]
        if not versions:
            continue
        contracts += 1
        life = known.get((provider, model), Lifecycle())
        first = versions[0].effective_from
        if life.launched_on is None:
            unknown.append(f"{provider}/{model}")
        else:
            launch_known += 1
            if life.launched_on < first and not _declared(life.not_served, life.launched_on, first):
                gaps.append(
                    HistoryGap(
                        kind=GapKind.LATE_START,
                        provider=provider,
                        model=model,
                        start=life.launched_on,
                        end=first,
                        evidence=f"launched {life.launched_on.isoformat()}: {life.launch_source}",
                    )
                )
        for before, after in itertools.pairwise(versions):
            end = before.effective_to
            if end is not None and end < after.effective_from:
                if _declared(life.not_served, end, after.effective_from):
                    continue
                gaps.append(
                    HistoryGap(
                        kind=GapKind.HOLE,
                        provider=provider,
                        model=model,
                        start=end,
                        end=after.effective_from,
                        evidence=f"versions of {before.effective_from.isoformat()} and "
                        f"{after.effective_from.isoformat()} ({after.source})",
                    )
                )
        last_end = versions[-1].effective_to
        if last_end is not None and last_end <= until:
            retired += 1
    return HistorySummary(
        until=until,
        contracts=contracts,
        gaps=gaps,
        retired=retired,
        launch_known=launch_known,
        launch_unknown=unknown,
    )


__all__ = [
    "GapKind",
    "HistoryGap",
    "HistorySummary",
    "Lifecycle",
    "NotServed",
    "history_gaps",
    "read_lifecycle",
]
