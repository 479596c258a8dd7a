"""``usage``: what agent sessions cost, where it went, what caching saved, what misses cost.

:func:`usage_report` reads Claude Code transcripts and Codex CLI rollouts with the one reader
of agent sessions (``sessions.reading``: usage fields only, nothing tokenized), predicts each
request under its client's profile (``sessions.replay.predict_sessions``, the predictions
``reconcile`` makes) and, per request:

* bills the observed usage (uncached input, cache reads, writes per TTL, output) under the
  contract in force on the request's date (in ``timezone``), with the long-context tier the
  whole prompt reaches (cache reads and writes count toward it); the same tokens with caching
  off give the bill without caching, and the difference is what caching saved;
* takes the cached tokens it did not read (``sessions.replay.missed_reads``: the prefix an
  idle gap let expire, else the shortfall from a prediction outside tolerance) and prices
  them at the input price minus the cache read price: that is "lost", attributed to the
  cause (``sessions.causes``: an idle gap that outlived the TTL, a changed system prompt or
  tools, a model change, a best-effort provider, ...);
* adds the request to its row (``by``: day, session, project, model, several allowed), to the
  totals, to the timeline (hit rate by hour, or by day over long spans) and to the worst
  requests (most dollars lost).

What-if scenarios re-price the same requests: another TTL (``ttl``: every write made with it;
a request whose idle gap the TTL covers reads what it missed to an expired TTL, one whose gap
it does not cover writes what it read), another model or provider (``targets``: the same
tokens under that contract on each request's date; writes take the option of the same TTL
name, else the contract's default), and self-hosting (``self_hosted``: the requests in range
served by a vLLM deployment, figured by ``compare`` on them: ``usecases.usage_self_hosted``).
A request whose model has no contract in force on its date is counted, left out of every bill,
and listed in ``unpriced`` (the report then says ``complete_bill: false``).
docs/usage-report.md has the definitions.
"""

from __future__ import annotations

import datetime as dt
import heapq
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from pathlib import Path
from typing import Literal, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field

from cachecast.contracts.answers import ContractLookup
from cachecast.contracts.model import ContractTerms
from cachecast.core.dates import IsoDate
from cachecast.core.errors import BadInputError, Location, LogRecordError
from cachecast.logs.headless_names import RUN_MEANING, TURN_MEANING
from cachecast.sessions.profiles import PROFILES, profile_for_format
from cachecast.sessions.reading import ModelDefaults, SessionRequest
from cachecast.sessions.replay import MissedReads, PredictedRequest, missed_reads, predict_sessions
from cachecast.simulator.billing import EXACT, bill_request, bill_without_cache
from cachecast.usecases.reports import (
    ContractReference,
    DecimalNumber,
    InputIssue,
    Money,
    Report,
    hit_rate_of,
)
from cachecast.usecases.request_base import Request
from cachecast.usecases.session_files import find_sessions
from cachecast.usecases.session_prompts import read_sessions
from cachecast.usecases.usage_pricing import (
    ContractCache,
    WhatIf,
    WhatIfSums,
    add_to_scenario,
    cacheable_minimum,
    lost_of,
    usage_of,
    writes_of,
    writes_on,
)
from cachecast.usecases.usage_self_hosted import (
    SelfHostedOption,
    SelfHostedWhatIf,
    self_hosted_what_if,
)
from cachecast.usecases.usage_statements import ClientStatement, client_statements

Grouping = Literal["day", "session", "project", "model"]
TtlName = Literal["5m", "1h"]
MAX_ISSUES = 100
TIMELINE_HOURS_UP_TO = 24 * 14  # longer spans: one point per day
HIT_RATE_DEFINITION = "cache-read tokens / prompt tokens (reads + writes + uncached), observed"
SELF_HOSTED = (
    "self-hosted vLLM for the same requests: --self-hosted MODEL@GPU[xN][:PRICE], or cachecast"
    " compare <sessions> --model <preset> --gpu <gpu> --gpu-price <$/h> (docs/economics.md)"
)
ZERO = Decimal(0)
PREDICTOR = "client profiles (sessions.predictor, docs/predictions.md)"


class SessionFile(Request):
    path: Path
    name: str | None = Field(None, description="how the report names it (default: the path)")


class UsageRequest(Request):
    """The sessions to report on and how; ``files`` empty: the default locations."""

    files: list[SessionFile] = Field(default_factory=list)
    since: IsoDate | None = Field(None, description="first day included (in timezone)")
    until: IsoDate | None = Field(None, description="last day included (in timezone)")
    timezone: str = Field("UTC", description="IANA zone the days are counted in")
    by: list[Grouping] = Field(default_factory=lambda: list[Grouping](["day"]), min_length=1)
    ttl: TtlName | None = Field(None, description="what-if: every cache write with this TTL")
    targets: list[str] = Field(
        default_factory=list, description="what-if: PROVIDER:MODEL to re-price the same tokens"
    )
    self_hosted: SelfHostedOption | None = Field(
        None, description="what-if: the same requests served by this vLLM deployment (compare)"
    )
    worst: int = Field(20, ge=0, le=1000, description="worst requests listed")
    model: str | None = Field(
        None,
        description="the model of the requests whose log names none (codex exec --json never does)",
    )
    on_bad_record: Literal["skip", "stop"] = "skip"


class UsageTotals(Report):
    """One row (or the totals): the observed usage and its bills."""

    group: dict[str, str] = Field(default_factory=dict, description="dimension -> value")
    requests: int = Field(0, description="API requests whose usage the log states one by one")
    turns: int = Field(0, description=TURN_MEANING)
    runs: int = Field(0, description=RUN_MEANING)
    prompt_tokens: int = Field(0, description="whole prompts: uncached + reads + writes")
    cache_read_tokens: int = 0
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0
    uncached_input_tokens: int = 0
    output_tokens: int = 0
    hit_rate: DecimalNumber = Decimal(0)
    cost: Money = ZERO
    cost_without_cache: Money = ZERO
    saved: Money = Field(ZERO, description="cost_without_cache - cost")
    missed_tokens_by_cause: dict[str, int] = Field(default_factory=dict)
    lost_by_cause: dict[str, Money] = Field(
        default_factory=dict, description="dollars the missed tokens cost above reads"
    )
    top_causes: list[str] = Field(default_factory=list, description="by dollars lost")
    unpriced_requests: int = 0


class WorstRequest(Report):
    source: str
    line: int
    request_id: str
    session: str
    model: str
    timestamp: dt.datetime | None
    prompt_tokens: int
    cache_read_tokens: int
    expected_read_tokens: int = Field(
        description="what the client profile's prediction says it should have read"
    )
    cacheable_tokens: int = Field(
        description="what its lineage had cached: the prefix an idle gap let expire, else"
        " the prediction"
    )
    cause: str = Field(description="a code of the session causes (docs/predictions.md)")
    detail: str
    lost: Money


class TimelinePoint(Report):
    """The requests that started in [start, start + seconds)."""

    start: dt.datetime
    seconds: int
    requests: int
    prompt_tokens: int
    cache_read_tokens: int
    hit_rate: DecimalNumber


class UnpricedModel(Report):
    provider: str
    model: str
    requests: int
    first_day: dt.date | None
    last_day: dt.date | None
    reason: str


class UsageReport(Report):
    files: list[str]
    clients: dict[str, int] = Field(description="client -> requests")
    timezone: str
    since: dt.date | None
    until: dt.date | None
    by: list[str]
    predictor: str = Field(description="what says what each request should have read")
    profiles: dict[str, str] = Field(
        default_factory=dict, description="client -> where its caching profile is written down"
    )
    hit_rate_definition: str = HIT_RATE_DEFINITION
    rows: list[UsageTotals]
    totals: UsageTotals
    complete_bill: bool = Field(description="false: some requests had no contract (unpriced)")
    unpriced: list[UnpricedModel]
    contracts: list[ContractReference]
    worst_requests: list[WorstRequest]
    timeline: list[TimelinePoint]
    what_if: list[WhatIf]
    self_hosted: str = SELF_HOSTED
    self_hosted_what_if: SelfHostedWhatIf | None = Field(
        None, description="--self-hosted: compare's figures for the same requests"
    )
    notes: list[str] = Field(
        default_factory=list,
        description="what was assumed to price the requests (e.g. a price unverified [U] on a"
        " date before a model's first stored version)",
    )
    client_statements: list[ClientStatement] = Field(
        default_factory=list, description="Claude Code headless runs: the result's own figures"
    )
    issues: list[InputIssue]
    issue_count: int


@dataclass(slots=True)
class _Sums:
    requests: int = 0
    turns: int = 0
    runs: int = 0
    prompt: int = 0
    read: int = 0
    write_5m: int = 0
    write_1h: int = 0
    uncached: int = 0
    output: int = 0
    cost: Decimal = ZERO
    plain: Decimal = ZERO
    missed: dict[str, int] = field(default_factory=dict)
    lost: dict[str, Decimal] = field(default_factory=dict)
    unpriced: int = 0

    def add(self, call: SessionRequest, priced: _Priced | None) -> None:
        observed = call.observed
        if call.unit == "turn":
            self.turns += 1
        elif call.unit == "run":
            self.runs += 1
        else:
            self.requests += 1
        self.prompt += call.facts.prompt_tokens
        self.read += observed.read
        self.write_5m += call.write_5m
        self.write_1h += call.write_1h
        self.uncached += observed.uncached
        self.output += observed.output
        if priced is None:
            self.unpriced += 1
            return
        with localcontext(EXACT):
            self.cost += priced.cost
            self.plain += priced.plain
            if priced.missed:
                self.missed[priced.cause] = self.missed.get(priced.cause, 0) + priced.missed
                self.lost[priced.cause] = self.lost.get(priced.cause, ZERO) + priced.lost

    def report(self, group: dict[str, str]) -> UsageTotals:
        with localcontext(EXACT):
            saved = self.plain - self.cost
        causes = sorted(self.lost, key=lambda cause: (-self.lost[cause], cause))
        return UsageTotals(
            group=group,
            requests=self.requests,
            turns=self.turns,
            runs=self.runs,
            prompt_tokens=self.prompt,
            cache_read_tokens=self.read,
            cache_write_5m_tokens=self.write_5m,
            cache_write_1h_tokens=self.write_1h,
            uncached_input_tokens=self.uncached,
            output_tokens=self.output,
            hit_rate=hit_rate_of(self.read, self.prompt),
            cost=self.cost,
            cost_without_cache=self.plain,
            saved=saved,
            missed_tokens_by_cause=dict(sorted(self.missed.items())),
            lost_by_cause={cause: self.lost[cause] for cause in causes},
            top_causes=[cause for cause in causes if self.lost[cause] > 0][:3],
            unpriced_requests=self.unpriced,
        )


@dataclass(frozen=True, slots=True)
class _Priced:
    cost: Decimal
    plain: Decimal
    missed: int
    cause: str
    lost: Decimal


@dataclass(slots=True)
class _Unpriced:
    reason: str
    requests: int = 0
    first_day: dt.date | None = None
    last_day: dt.date | None = None

    def add(self, day: dt.date | None) -> None:
        self.requests += 1
        if day is not None:
            self.first_day = day if self.first_day is None else min(day, self.first_day)
            self.last_day = day if self.last_day is None else max(day, self.last_day)


def _timezone(name: str) -> dt.tzinfo:
    if name.upper() == "UTC":
        return dt.UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadInputError(
            f"unknown time zone {name!r} (an IANA name such as Europe/Paris, or UTC)",
            location=Location(field="timezone"),
        ) from None


class _Worst(NamedTuple):
    lost: Decimal
    order: int  # minus the request's place: the earlier of two equal losses first
    each: PredictedRequest
    moment: dt.datetime | None
    missed: MissedReads


def usage_report(request: UsageRequest, store: ContractLookup) -> UsageReport:
    """The report the module docstring describes."""
    zone = _timezone(request.timezone)
    if request.self_hosted is not None:
        request.self_hosted.check()  # the model, accelerator and price, before any file
    if request.since and request.until and request.since > request.until:
        raise BadInputError(
            f"--since {request.since} is after --until {request.until}",
            location=Location(field="since"),
        )
    if request.files:
        paths = [(file.path, file.name or str(file.path)) for file in request.files]
        for path, name in paths:
            if not path.is_file():
                raise BadInputError("no such file", location=Location(source=name, field="files"))
    else:
        paths = [(path, str(path)) for path in find_sessions([])]
    if not paths:
        raise BadInputError("no session file found", location=Location(field="files"))
    targets = [_target(text) for text in request.targets]
    issues: list[LogRecordError] = []
    issue_count = 0

    def on_error(error: LogRecordError) -> None:
        nonlocal issue_count
        if request.on_bad_record == "stop":
            raise error
        issue_count += 1
        if len(issues) < MAX_ISSUES:
            issues.append(error)

    by_client = read_sessions(paths, on_error, ModelDefaults(request.model))
    # Our bill per (file, session): set beside what a headless run's result states.
    by_source: dict[tuple[str, str], Decimal] = {}
    whole_units = 0  # turns and runs priced at base rates (no long-context tier told)
    # Server tool calls the usages report (Anthropic's server_tool_use: web searches, web
    # fetches), and the requests that made them: not token prices (docs/clients.md).
    server_calls = server_requests = 0
    contracts = ContractCache(store)
    rows: dict[tuple[str, ...], _Sums] = {}
    totals = _Sums()
    clients: dict[str, int] = {}
    unpriced: dict[tuple[str, str], _Unpriced] = {}
    hours: dict[dt.datetime, list[int]] = {}
    worst: list[_Worst] = []
    scenarios = [WhatIfSums(f"ttl {request.ttl}")] if request.ttl else []
    scenarios += [WhatIfSums(f"target {p}:{m}") for p, m in targets]
    served: list[PredictedRequest] = []  # the requests the self-hosted what-if serves
    index = 0
    for client, requests in by_client.items():
        profile = profile_for_format(client)
        assert profile is not None  # a native format's client
        # Every request is predicted, those outside --since/--until too: they are what the
        # requests in range continue.
        minimum = cacheable_minimum(store, profile, zone)
        # Only requests are predicted: a turn's or a run's usage sums requests the log does
        # not show apart, so no read can be predicted (or missed) for it.
        alone = [call for call in requests if call.unit == "request"]
        whole: list[tuple[SessionRequest, PredictedRequest | None]] = [
            (call, None) for call in requests if call.unit != "request"
        ]
        predicted = [(each.request, each) for each in predict_sessions(alone, profile, minimum)]
        for call, each in [*predicted, *whole]:
            moment = dt.datetime.fromtimestamp(call.facts.timestamp, zone) if call.dated else None
            day = moment.date() if moment is not None else None
            if (request.since or request.until) and (
                day is None
                or (request.since is not None and day < request.since)
                or (request.until is not None and day > request.until)
            ):
                continue
            index += 1
            if call.usage.server_tool_calls:
                server_calls += call.usage.server_tool_calls
                server_requests += 1
            if request.self_hosted is not None and each is not None:
                served.append(each)
            clients[client] = clients.get(client, 0) + 1
            bill_day = day or dt.datetime.now(dt.UTC).date()
            provider = call.provider or profile.provider
            contract = contracts.served(provider, call.facts.model, bill_day)
            priced = None
            if not isinstance(contract, ContractTerms):
                unpriced.setdefault((provider, call.facts.model), _Unpriced(contract)).add(day)
            else:
                contracts.use(contract)
                missed = None if each is None else missed_reads(each)
                if each is None and contract.long_context_tiers:
                    # The tier is chosen per request, which a sum does not show: base rates.
                    contract = contract.model_copy(update={"long_context_tiers": ()})
                    whole_units += 1
                priced = _price(call, contract, missed)
                with localcontext(EXACT):
                    run = (call.facts.source, call.session)
                    by_source[run] = by_source.get(run, ZERO) + priced.cost
                if each is not None and missed is not None and request.worst:
                    # Models are built for the requests kept only (a heap of the worst).
                    item = _Worst(priced.lost, -index, each, moment, missed)
                    if len(worst) < request.worst:
                        heapq.heappush(worst, item)
                    elif item[:2] > worst[0][:2]:
                        heapq.heapreplace(worst, item)
                gap = None if each is None else each.predicted.gap_seconds
                loss = (gap, priced.cause, priced.missed)
                for scenario in scenarios:
                    add_to_scenario(
                        scenario, call, contract, priced.cost, loss, contracts, bill_day
                    )
            key = tuple(_group_value(dimension, call, day) for dimension in request.by)
            row = rows.get(key)
            if row is None:
                row = rows[key] = _Sums()
            row.add(call, priced)
            totals.add(call, priced)
            if moment is not None:
                hour = moment.replace(minute=0, second=0, microsecond=0)
                point = hours.setdefault(hour, [0, 0, 0])
                point[0] += 1
                point[1] += call.facts.prompt_tokens
                point[2] += call.observed.read
    ordered = sorted(rows.items())
    total = totals.report({})
    return UsageReport(
        files=[name for _, name in paths],
        clients=clients,
        timezone=request.timezone,
        since=request.since,
        until=request.until,
        by=list(request.by),
        predictor=PREDICTOR,
        profiles={name: PROFILES[name].source for name in sorted(by_client)},
        rows=[row.report(dict(zip(request.by, key, strict=True))) for key, row in ordered],
        totals=total,
        complete_bill=not unpriced,
        unpriced=[
            UnpricedModel.read(entry, provider=provider, model=model)
            for (provider, model), entry in sorted(unpriced.items())
        ],
        contracts=sorted(
            (ContractReference.of(terms) for terms in contracts.used.values()),
            key=lambda reference: reference.version,
        ),
        worst_requests=[_worst(item) for item in sorted(worst, key=lambda x: (-x[0], -x[1]))],
        timeline=_timeline(hours),
        what_if=[scenario.report() for scenario in scenarios],
        self_hosted_what_if=(
            None
            if request.self_hosted is None
            else self_hosted_what_if(
                request.self_hosted, served, total.hit_rate, total.cost, not unpriced
            )
        ),
        notes=list(contracts.notes)
        + (
            [
                f"{whole_units} turn or run totals priced without the long-context tier: the"
                " tier is chosen per request, and a total does not show its requests' lengths [U]"
            ]
            if whole_units
            else []
        )
        + _server_tool_note(server_calls, server_requests),
        client_statements=client_statements(paths, by_client, by_source),
        issues=[InputIssue.of(error) for error in issues],
        issue_count=issue_count,
    )


def _server_tool_note(calls: int, requests: int) -> list[str]:
    """What the bill leaves out where responses report server tool calls: Anthropic bills a
    web search per search, on top of its tokens (a web fetch costs its tokens only); no
    contract holds a per-call price, so the calls are counted, not billed [U]."""
    if not calls:
        return []
    return [
        f"{calls} server tool call(s) in {requests} request(s) (usage.server_tool_use: web"
        " searches and fetches): a web search is billed per search on top of its tokens, which"
        " this bill does not include"
    ]


def _price(call: SessionRequest, terms: ContractTerms, missed: MissedReads | None) -> _Priced:
    usage = usage_of(call, call.observed.read, writes_on(terms, writes_of(call)))
    with localcontext(EXACT):
        cost = bill_request(usage, terms).total
        plain = bill_without_cache(usage, terms).total
    if missed is None:
        return _Priced(cost, plain, 0, "", ZERO)
    return _Priced(cost, plain, missed.tokens, missed.cause, lost_of(call, terms, missed.tokens))


def _worst(item: _Worst) -> WorstRequest:
    call, facts = item.each.request, item.each.request.facts
    return WorstRequest(
        source=facts.source,
        line=facts.line,
        request_id=facts.request_id,
        session=call.session,
        model=facts.model,
        timestamp=item.moment,
        prompt_tokens=facts.prompt_tokens,
        cache_read_tokens=call.observed.read,
        expected_read_tokens=item.each.predicted.read,
        cacheable_tokens=item.missed.expected,
        cause=item.missed.cause,
        detail=item.missed.detail,
        lost=item.lost,
    )


def _target(text: str) -> tuple[str, str]:
    provider, sep, model = text.partition(":")
    if not sep or not provider.strip() or not model.strip():
        raise BadInputError(
            f"expected PROVIDER:MODEL, got {text!r}", location=Location(field="--target")
        )
    return provider.strip().lower(), model.strip().lower()


def _group_value(dimension: str, call: SessionRequest, day: dt.date | None) -> str:
    if dimension == "day":
        return day.isoformat() if day is not None else "(no time)"
    if dimension == "session":
        return call.session
    if dimension == "project":
        return call.project or "(none)"
    return call.facts.model


def _timeline(hours: dict[dt.datetime, list[int]]) -> list[TimelinePoint]:
    if not hours:
        return []
    first, last = min(hours), max(hours)
    points: dict[dt.datetime, list[int]] = hours
    seconds = 3600
    if (last - first).total_seconds() > TIMELINE_HOURS_UP_TO * 3600:
        points, seconds = {}, 86400
        for hour, sums in hours.items():
            day = hour.replace(hour=0)
            point = points.setdefault(day, [0, 0, 0])
            for position in range(3):
                point[position] += sums[position]
    return [
        TimelinePoint(
            start=start,
            seconds=seconds,
            requests=sums[0],
            prompt_tokens=sums[1],
            cache_read_tokens=sums[2],
            hit_rate=hit_rate_of(sums[2], sums[1]),
        )
        for start, sums in sorted(points.items())
    ]
