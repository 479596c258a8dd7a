"""``reconcile``: our predictions held against what the providers really returned and billed.

Agent sessions (a client profile's log format, or ``client``) are predicted by
``usecases.session_reconcile``; a log whose files mix clients, or sessions with other logs,
is reconciled group by group into one report by ``usecases.mixed_reconcile``. Every request
of any other log is replayed, in order, through the cache policy of the contract of the model
that served it (``logged_model`` with its provider; aliases and regional profiles resolve in
the store), each model in a cache of its own: the estimate pipeline
(``simulator.pricing.price_request``) with one target per served model. The contract is the
one in force on ``at``, else on the day of the model's first request (today where the log's
times are not dates).

For every request with observed usage, predicted and observed reads, writes and cost sit
side by side (``simulator.reconcile``). A request is *within tolerance* when its predicted
reads and writes are each within max(:data:`TOLERANCE_TOKENS` tokens, 1% of its prompt) of the
observed ones, as on agent sessions; an exact match is counted apart. Every request whose
tokens do not match exactly is classified, first rule that applies:

0. ``read_not_reported``: the usage carries no cache-read field (docs/log-formats.md, "Absent
   cache reads") under a contract that offers caching: its reads are unknown, not 0, so it is
   not judged on reads (neither exact nor within tolerance; the summary counts it in
   ``reads_not_reported`` and sums the other requests' reads only), and its observed bill
   counts the whole reported prompt as uncached input;
1. ``tokenizer_approximation``: an approximated tokenizer, and the error is within
   tolerance or within the calibration's spread (``relative_spread`` x prompt);
2. ``warm_cache_at_log_start``: the provider read more than we did, and no entry the log
   shows could hold what we did not read: some of those tokens were new to the log (first
   sight, or past where the prompt diverged from every earlier one) and no earlier
   breakpoint cached the others: it was cached before the log begins;
3. ``contract_disputed``: the observation contradicts a stored term (a cached prefix shorter
   than ``min_cacheable_tokens``; a hit off the ``increment_tokens`` steps; a read after the
   TTL had run out; caching without a breakpoint under an explicit contract, where the log
   holds the whole prompt): the contract version, the field and the request are named. Under
   a version that offers no caching (mode none) every cached token disputes it, and this rule
   comes first: the prediction of 0 cached does not depend on the tokenizer or on the log's
   history;
4. ``provider_best_effort_miss``: the provider read less than we did, from a prefix the log
   shows cached and alive, under an automatic cache whose provider documents it as best
   effort (OpenAI: identical prompts sent seconds apart can miss);
5. ``unexplained``; a request within tolerance that no earlier rule classifies carries no
   class (``None``): its error is the prediction's margin.

A request whose reported usage contradicts itself (``ObservedUsage.contradiction``) is
listed, not compared; a reconciliation that compared nothing is refused with why.

(Over 600 lines: the request, the report's models and the one replay that fills them are one
use case, and the CLI, the API and the HTML page import the report from here.)
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field

from cachecast.contracts import ContractStore
from cachecast.contracts.defaults import documented_default
from cachecast.contracts.model import CacheMode, ContractTerms
from cachecast.contracts.served import ServedContract, packaged_lifecycle, served_contract
from cachecast.core.errors import BadInputError, Location, UnknownContractError
from cachecast.logs.errors import bad_line_count
from cachecast.logs.providers import infer_provider
from cachecast.passes.log_input import LogReading, check_reading
from cachecast.passes.per_request import COLUMN_TYPES, PerRequestTable, check_table_path
from cachecast.passes.progress import NoProgress, Progress
from cachecast.sessions.profiles import profile_named
from cachecast.simulator.billing import EXACT, BillTotals
from cachecast.simulator.misses import (
    FIRST_SIGHT,
    NO_BREAKPOINT,
    PREFIX_DIVERGED,
    PREFIX_NOT_IN_LOG,
    TTL_EXPIRED,
    MissSpan,
    PromptHistory,
)
from cachecast.simulator.policies import CachePolicy
from cachecast.simulator.pricing import (
    PROGRESS_EVERY,
    ObservedModelMatcher,
    PerRequestRow,
    Target,
    TargetTotals,
    price_request,
    target_policy,
)
from cachecast.simulator.reconcile import ReconciledRequest, ReconciliationSummary
from cachecast.simulator.types import TOLERANCE_TOKENS as TOLERANCE_TOKENS  # named here too
from cachecast.tokenizers.calibration import RatioStats
from cachecast.tokenizers.types import TokenizedRequest
from cachecast.usecases.predictions import (
    CalibrationReport,
    MissCauseTotal,
    TimelinePoint,
    calibration_of,
    miss_causes_of,
    notes_of,
    timeline_of,
)
from cachecast.usecases.reports import (
    TARGET_NOTES,
    ContractReference,
    FractionText,
    InputIssue,
    Money,
    ObservedReads,
    PredictedReads,
    Report,
    issues_of,
)
from cachecast.usecases.requests import LogRequest
from cachecast.usecases.session_reports import ClientReport, SessionFileReport, file_groups

MAX_LISTED_REQUESTS = 1000

TOKENIZER_APPROXIMATION = "tokenizer_approximation"
WARM_CACHE = "warm_cache_at_log_start"
CONTRACT_DISPUTED = "contract_disputed"
BEST_EFFORT_MISS = "provider_best_effort_miss"
UNEXPLAINED = "unexplained"
READ_NOT_REPORTED = "read_not_reported"
CLASSES = (
    READ_NOT_REPORTED,
    TOKENIZER_APPROXIMATION,
    WARM_CACHE,
    CONTRACT_DISPUTED,
    BEST_EFFORT_MISS,
    UNEXPLAINED,
)


def unnamed_reason(provider: str | None, model: str | None) -> str:
    """Why a request is not priced where its log leaves the provider or the model unknown."""
    if model is not None:
        return (
            f"model {model!r}: the log names no provider for it (no host cachecast knows and"
            " no model family that names one): give --provider"
        )
    return "the log names no provider or model (give --provider/--model)"


def unknown_reason(provider: str, model: str, message: str) -> str:
    """Why a request is not priced where the store has no contract for it: a provider the
    store does not know is said to be one no contract covers (the request is unpriced, its
    log readable)."""
    if message.startswith("unknown provider"):
        known = message.split("(known: ", 1)[-1].rstrip(")") if "(known: " in message else ""
        return (
            f"{provider}:{model}: no stored contract covers provider {provider!r}, so model"
            f" {model!r} is not priced" + (f" (providers with contracts: {known})" if known else "")
        )
    if (
        provider in ("google", "vertex")
        and message.startswith("unknown model")
        and _EXPERIMENTAL.search(model)
    ):
        # Google's experimental ids are left unpriced on purpose (docs/contracts.md,
        # "contracts-v19"): say so rather than leave a bare "unknown model".
        message += (
            "; an experimental Gemini id ('-exp'): no per-token price for it is in our"
            " sources, so it is not stored"
        )
    if provider == "groq" and message.startswith("unknown model") and _COMPOUND.match(model):
        # A Compound system is billed as the model calls it made, which a response lists in
        # usage_breakdown.models (cachecast.logs.http.system_calls): without it, no price.
        message += (
            "; a Groq Compound system, billed as the model calls its response lists in"
            " usage_breakdown.models, which this record does not carry: which models it"
            " called and with how many tokens is not known"
        )
    return f"{provider}:{model}: {message}"


# Groq's Compound systems: compound, compound-mini, compound-beta, compound-beta-mini.
_COMPOUND = re.compile(r"^compound(?:-beta)?(?:-mini)?$")

# Google's experimental model ids: gemini-2.0-flash-exp, gemini-2.0-pro-exp-02-05, ...
_EXPERIMENTAL = re.compile(r"-exp(?:-|$)")


class ReconcileRequest(LogRequest):
    """Replay ``log`` under the contracts of the models that served it."""

    at: dt.date | None = Field(
        default=None,
        description=(
            "contracts in force on this day (default: each request's own day; a log"
            " without dates: today)"
        ),
    )
    per_request: Path | None = Field(
        default=None, description="also write every replayed request to this .csv/.parquet"
    )


class MissSpanReport(Report):
    cause: str
    start: int
    tokens: int
    detail: str | None = None


class ReconciledRow(Report):
    """One request with observed usage: prediction, observation, and the verdict."""

    source: str
    line: int
    request_id: str
    timestamp: float
    target: str = Field(description="provider:model of the contract that served it")
    exact_tokens: bool = Field(description="the tokenizer is the provider's own")
    input_tokens: int = Field(description="the prompt length the provider reported")
    predicted_cache_read_tokens: int
    observed_cache_read_tokens: int | None = Field(
        description="None: the usage reports no cache read (not judged on reads)"
    )
    predicted_cache_write_tokens: int
    observed_cache_write_tokens: int | None = Field(
        description="None: the usage reports no cache write (not judged on writes)"
    )
    predicted_cost: Money
    observed_cost: Money
    token_error: int
    exact_match: bool
    within_tolerance: bool
    classification: str | None = Field(description="why it does not match (None: it does)")
    explanation: str
    miss_causes: list[MissSpanReport] = Field(description="our prediction's tokens not read")


class ReconcileSummary(Report):
    """Error statistics over the reconciled requests."""

    requests: int
    exact_matches: int
    exact_match_share: FractionText
    within_one_percent: int
    within_one_percent_share: FractionText
    within_tolerance: int
    within_tolerance_share: FractionText
    mean_abs_error_tokens: FractionText
    mean_abs_error_cost: FractionText
    read_bias_tokens: FractionText = Field(
        description="mean predicted minus observed reads",
        validation_alias=AliasChoices("read_bias_tokens", "read_bias"),
    )
    write_bias_tokens: FractionText = Field(
        description="the same for writes, where reported",
        validation_alias=AliasChoices("write_bias_tokens", "write_bias"),
    )
    cost_bias: FractionText = Field(description="mean predicted minus observed bill, USD")
    predicted_cache_read_tokens: PredictedReads = Field(
        description="predicted reads, summed over the requests whose usage reports reads"
    )
    observed_cache_read_tokens: ObservedReads = Field(
        description="observed reads, summed over the same requests"
    )
    reads_not_reported: int = Field(
        default=0,
        description="requests predicted to read whose usage reports no cache read (class"
        " read_not_reported; an absent read where none is predicted is taken as 0):"
        " not judged on reads, counted in requests but never exact or within tolerance, their"
        " reads in neither sum; their observed bill counts the prompt as uncached input",
    )
    predicted_cost: Money = Field(
        validation_alias=AliasChoices("predicted_cost", "predicted_cost_sum")
    )
    observed_cost: Money = Field(
        validation_alias=AliasChoices("observed_cost", "observed_cost_sum")
    )
    classes: dict[str, int] = Field(description="mismatches by classification")
    warm_at_log_start: int = Field(
        default=0,
        description="requests outside tolerance because the cache was warm before the log"
        " began (counted outside tolerance above: nothing in the log predicts their reads)",
    )
    within_tolerance_share_after_warm_start: FractionText = Field(
        default="0",
        description="within tolerance among the requests less those warm before the log began",
    )

    @classmethod
    def of(
        cls, summary: ReconciliationSummary, tolerance: int, classes: Counter[str]
    ) -> ReconcileSummary:
        share = Fraction(tolerance, summary.requests) if summary.requests else "0"
        warm = classes[WARM_CACHE]
        rest = summary.requests - warm
        return cls.read(
            summary,
            within_tolerance=tolerance,
            within_tolerance_share=share,
            classes={name: classes[name] for name in CLASSES if classes[name]},
            warm_at_log_start=warm,
            within_tolerance_share_after_warm_start=Fraction(tolerance, rest) if rest else "0",
        )


class ReconcileTarget(Report):
    """One served model: its contract, the replay's totals and its reconciliation."""

    provider: str
    model: str
    logged_models: list[str] = Field(description="model ids the log names for it")
    contract: ContractReference
    tokenizer: str
    requests: int
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    hit_rate: float
    cost: Money
    summary: ReconcileSummary
    miss_causes: list[MissCauseTotal]
    calibration: list[CalibrationReport]
    timeline: list[TimelinePoint]
    notes: list[str] = Field(default_factory=list, description=TARGET_NOTES)

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"


class ReconcileReport(Report):
    """Predicted against observed, per served model and over the whole log."""

    at: dt.date | None
    tolerance: str = (
        f"reads and writes each within max({TOLERANCE_TOKENS} tokens, 1% of the prompt) of the"
        " observed ones; exact matches are counted apart"
    )
    sources: list[str]
    skipped_lines: int
    errors: list[InputIssue]
    summary: ReconcileSummary
    targets: list[ReconcileTarget]
    requests: list[ReconciledRow] = Field(
        description=f"every reconciled request (mismatches first, at most {MAX_LISTED_REQUESTS})"
    )
    requests_listed: int
    requests_without_usage: int
    contradictory_observations: list[str] = Field(
        default_factory=list,
        description="file:line: requests whose reported usage contradicts itself (cache"
        " reads and writes above the prompt): not reconciled",
    )
    unpriced: dict[str, int] = Field(
        default_factory=dict, description="requests no contract could be found for, by reason"
    )
    client: ClientReport | None = Field(
        default=None, description="sessions: the agent client (the one client profile used)"
    )
    clients: list[ClientReport] = Field(
        default_factory=list,
        description="a log that mixes clients, or sessions with other logs: every client"
        " profile used (each file's entry in ``files`` names its own)",
    )
    files: list[SessionFileReport] = Field(
        default_factory=list,
        description="per file: its client profile and figures (session files; in a log that"
        " mixes clients or sessions with other logs, every file, 'none' where replayed)",
    )


@dataclass(frozen=True, slots=True)
class ReconciledPart:
    """One reconciliation's report and the running figures its summary was made of: a log
    that mixes clients, or sessions with other logs, sums its groups' figures
    (``usecases.mixed_reconcile``)."""

    report: ReconcileReport
    summary: ReconciliationSummary
    within_tolerance: int
    classes: Counter[str]


class _OwnModel(ObservedModelMatcher):
    """Every target here is the model that served its requests."""

    def __init__(self) -> None:  # nothing to learn: every target served its requests
        pass

    def served_by(self, request: TokenizedRequest, contract: ContractTerms) -> bool:
        return True


@dataclass(slots=True)
class _Served:
    totals: TargetTotals
    policy: CachePolicy
    logged: set[str] = field(default_factory=set)
    summary: ReconciliationSummary = field(default_factory=ReconciliationSummary)
    within_tolerance: int = 0
    classes: Counter[str] = field(default_factory=Counter)


class _Replay:
    """The one pass: requests routed to their served model's cache, reconciled as they go."""

    def __init__(self, request: ReconcileRequest, store: ContractStore) -> None:
        self.request = request
        self.store = store
        self.reading = LogReading(request.log, None)
        self.history = PromptHistory()
        self.matcher = _OwnModel()
        self.contracts: dict[tuple[str, str, dt.date | None], ServedContract | str] = {}
        self.served: dict[tuple[str, str, dt.date], _Served] = {}
        self.rows: list[ReconciledRow] = []
        self.without_usage = 0
        self.first_without_usage: str | None = None  # where the first such request is
        self.contradictory: list[str] = []
        self.unpriced: Counter[str] = Counter()
        self.all = ReconciliationSummary()
        self.all_within = 0
        self.all_classes: Counter[str] = Counter()

    def contract_for(self, request: TokenizedRequest) -> ServedContract | str:
        provider, model = request.provider, request.logged_model or request.model
        if provider is not None and model is None:
            return self.default_contract(provider, request)
        if provider is None and model is not None:
            # A plain log that names the model only: its family names the provider
            # (docs/log-formats.md, "Provider names"), as the format adapters infer it.
            provider = infer_provider(model)
        if provider is None and model is not None and request.gateway is not None:
            # A gateway slug whose first segment names no vendor we price
            # (``meta-llama/llama-3.3-8b-instruct:free``): the host was known, the model's
            # maker is not (docs/log-formats.md, "Canonical records"). The gateway's own
            # contract prices it where one is stored (OpenRouter's ``:free`` variants, free
            # of charge: docs/contracts.md, "contracts-v25").
            found_at_gateway = self.gateway_contract(request.gateway, model, request)
            if found_at_gateway is not None:
                return found_at_gateway
            return (
                f"{request.gateway}:{model}: sent through {request.gateway}, and neither the"
                " model's name nor the record says which vendor serves it; no contract prices"
                " it (give --provider to price it as a vendor's model)"
            )
        if provider is None or model is None:
            return unnamed_reason(provider, model)
        day = self.request.at or _day_of(request.timestamp)
        key = (provider.lower(), model.lower(), day)  # a log can span a price change
        found = self.contracts.get(key)
        if found is None:
            try:
                found = served_contract(self.store, key[0], key[1], day, _today())
            except UnknownContractError as error:
                found = unknown_reason(key[0], key[1], error.message)
                if request.gateway is not None and not self.stores_model(key[0], key[1]):
                    # Open weights the vendor's own API does not serve
                    # (``qwen/qwen-2.5-vl-7b-instruct``): the gateway's listed price, where a
                    # contract of its own states one (docs/contracts.md, "contracts-v27").
                    at_gateway = self.gateway_contract(request.gateway, key[1], request)
                    if at_gateway is not None:
                        found = at_gateway
                    else:
                        found += (
                            f"; sent through {request.gateway}, which also routes models that"
                            f" {key[0]}'s own API does not serve (open weights hosted by third"
                            " parties at their own prices): no contract prices it"
                        )
            self.contracts[key] = found
        return found

    def default_contract(self, provider: str, request: TokenizedRequest) -> ServedContract | str:
        """The contract of the default model a request that names none was served by, as
        the provider's API reference stated it on the request's day (Cohere's v1 ``/chat``:
        docs/contracts.md, "contracts-v29"), with a note saying it was assumed; else why
        it cannot be named. A model the record names always wins: this is asked only of
        requests that name none (nor ``--model``)."""
        day = self.request.at or _day_of(request.timestamp)
        found = documented_default(
            provider, day, lambda model: self.launched(provider.lower(), model)
        )
        if isinstance(found, str):
            return found
        served = self.looked_up(provider.lower(), found.model, day)
        if isinstance(served, str):
            return f"{served} (the default model a request naming none was priced as)"
        note = found.note if served.note is None else f"{found.note}; {served.note}"
        return ServedContract(served.terms, note)

    def launched(self, provider: str, model: str) -> dt.date | None:
        """The launch day ``lifecycle.json`` gives a model (None: none given)."""
        life = packaged_lifecycle().get((provider, model))
        return None if life is None else life.launched_on

    def stores_model(self, provider: str, model: str) -> bool:
        """Whether the store holds any version of ``provider``'s ``model`` (asked of the
        store, not read from an error message)."""
        try:
            self.store.history(provider, model)
        except UnknownContractError:
            return False
        return True

    def gateway_contract(
        self, gateway: str, model: str, request: TokenizedRequest
    ) -> ServedContract | str | None:
        """The contract the gateway itself states for ``model`` on the request's day, or the
        reason it cannot apply (a day before its first version); None where the gateway has
        no contract for the model at all (the caller names the gateway and asks for
        ``--provider``)."""
        day = self.request.at or _day_of(request.timestamp)
        gateway, model = gateway.lower(), model.lower()
        if (gateway, model, day) not in self.contracts and not self.stores_model(gateway, model):
            return None  # the gateway states no contract for this model
        return self.looked_up(gateway, model, day)

    def looked_up(self, provider: str, model: str, day: dt.date | None) -> ServedContract | str:
        """The contract of ``provider``'s ``model`` in force on ``day``, or why there is none,
        asked of the store once per (provider, model, day) of a replay."""
        key = (provider, model, day)
        found = self.contracts.get(key)
        if found is None:
            try:
                found = served_contract(self.store, provider, model, day, _today())
            except UnknownContractError as error:
                found = unknown_reason(provider, model, error.message)
            self.contracts[key] = found
        return found

    def target(self, found: ServedContract, request: TokenizedRequest) -> _Served:
        contract = found.terms
        key = (contract.provider, contract.model, contract.effective_from)
        served = self.served.get(key)
        if served is None:
            tokenizer = request.tokenizer.split(", ", 1)[0]  # without how it was calibrated
            totals = TargetTotals(
                Target(contract.provider, contract.model),
                contract,
                tokenizer,
                tier_terms=tuple(self.store.batch_terms(contract.provider)),
                priced_on=self.request.at,
            )
            served = self.served[key] = _Served(totals, target_policy(totals, False))
        if found.note is not None:
            served.totals.notes[found.note] = served.totals.notes.get(found.note, 0) + 1
        return served

    def run(
        self, progress: Progress, sink: Callable[[PerRequestRow, ReconciledRow | None], None]
    ) -> None:
        pending = 0
        for request in self.reading.requests(cache_objects=True):
            sight = self.history.observe(request)
            contract = self.contract_for(request)
            pending += 1
            if pending >= PROGRESS_EVERY:
                progress.advance(pending)
                pending = 0
            if isinstance(contract, str):
                self.unpriced[contract] += 1
                continue
            served = self.target(contract, request)
            served.logged.add((request.logged_model or request.model or "").lower())
            row = price_request(request, served.totals, served.policy, self.matcher, sight, None)
            if row is None:
                continue
            verdict = None
            if row.reconciled is None:
                self.without_usage += 1
                observed = row.request.observed  # (as priced: below_minimum_flagged)
                if (
                    observed is not None
                    and observed.contradiction is not None
                    and len(self.contradictory) < MAX_LISTED_REQUESTS
                ):
                    self.contradictory.append(
                        f"{request.source}:{request.line}: {observed.contradiction}"
                    )
                elif observed is None and self.first_without_usage is None:
                    self.first_without_usage = f"{request.source}:{request.line}"
            else:
                verdict = self.judge(row, row.reconciled, served)
                # What the provider said it holds now feeds the later predictions (never
                # this one's: docs/predictions.md, "Warm caches the log shows").
                assert request.observed is not None
                served.policy.learn(request, request.observed)
            sink(row, verdict)
        if pending:
            progress.advance(pending)
        for served in self.served.values():
            for note, count in served.policy.notes.items():
                served.totals.notes[note] = served.totals.notes.get(note, 0) + count

    def judge(
        self, row: PerRequestRow, reconciled: ReconciledRequest, served: _Served
    ) -> ReconciledRow:
        request = row.request
        within = within_tolerance(reconciled)
        verdict, why = (None, "predicted exactly")
        if not reconciled.reads_reported:
            verdict, why = READ_NOT_REPORTED, read_not_reported_reason(reconciled)
        elif not reconciled.exact_match:
            # The calibration as learned so far (streaming), for approximated requests only.
            stats = None
            if not request.exact:
                model = (request.logged_model or "").lower()
                stats = self.reading.calibration.get(model)
            verdict, why = classify_mismatch(
                request, reconciled, row.misses, served.totals.contract, stats
            )
            if verdict == UNEXPLAINED and within:
                # Within tolerance and no rule names a cause: the prediction's own margin, not
                # a mismatch to explain (as on agent sessions, whose rows within tolerance
                # carry no class; docs/predictions.md).
                verdict = None
                error = reconciled.token_error
                why = f"within tolerance ({error} token{'' if error == 1 else 's'} off): {why}"
        served.summary.add(reconciled)
        self.all.add(reconciled)
        served.within_tolerance += within
        self.all_within += within
        if verdict is not None:
            served.classes[verdict] += 1
            self.all_classes[verdict] += 1
        contract = served.totals.contract
        return ReconciledRow.read(
            reconciled,  # request_id, line, the costs, token_error, exact_match
            source=request.source,
            timestamp=request.timestamp,
            target=f"{contract.provider}:{contract.model}",
            exact_tokens=request.exact,
            input_tokens=reconciled.observed_input,
            predicted_cache_read_tokens=reconciled.predicted_read,
            observed_cache_read_tokens=reconciled.observed_read,
            predicted_cache_write_tokens=reconciled.predicted_write,
            observed_cache_write_tokens=reconciled.observed_write,
            within_tolerance=within,
            classification=verdict,
            explanation=why,
            miss_causes=row.misses,
        )


EPOCH_FLOOR = 1e9  # 2001-09-09: smaller timestamps are trace-relative or absent, not dates


def _day_of(timestamp: float) -> dt.date | None:
    """The UTC day of an epoch timestamp; None for a log whose times are not dates."""
    if timestamp < EPOCH_FLOOR:
        return None
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).date()


def _today() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


def within_tolerance(reconciled: ReconciledRequest) -> bool:
    """The predicted reads, and the predicted writes where the provider reports them, each
    within max(8 tokens, 1% of the prompt) of the observed ones: the same tolerance as the
    agent sessions' (docs/predictions.md), whatever the tokenizer; a match to the token is
    counted apart (``exact_match``)."""
    if reconciled.observed_read is None:
        return False  # not judged on reads: neither within tolerance nor outside a class
    allowed = max(TOLERANCE_TOKENS, reconciled.observed_input / 100)
    if abs(reconciled.predicted_read - reconciled.observed_read) > allowed:
        return False
    written = reconciled.observed_write
    return written is None or abs(reconciled.predicted_write - written) <= allowed


def read_not_reported_reason(reconciled: ReconciledRequest) -> str:
    """Why a request whose usage carries no cache-read field is not judged on reads."""
    written = reconciled.observed_write
    writes = (
        ""
        if written is None
        else f"; writes predicted {reconciled.predicted_write:,}, observed {written:,}"
    )
    return (
        f"the usage reports no cache read (the field is absent, which is not a read of 0):"
        f" not judged on reads (predicted {reconciled.predicted_read:,}){writes}; the observed"
        " bill counts the whole reported prompt as uncached input, its reads (if any) unknown"
    )


def reads_not_reported_note(requests: int) -> str:
    """A report's word on its requests whose usage reports no cache read (the CLI's headline
    and the HTML page say it the same)."""
    return (
        f"{requests:,} request(s) report no cache read where one is predicted (the field is"
        " absent, not 0): not judged on reads (never exact or within tolerance; their reads are"
        " in neither sum), their observed bill counts the whole prompt as uncached input"
    )


def classify_mismatch(
    request: TokenizedRequest,
    reconciled: ReconciledRequest,
    spans: tuple[MissSpan, ...],
    contract: ContractTerms,
    stats: RatioStats | None,
) -> tuple[str, str]:
    """The classification of a mismatch and a sentence saying why (module docstring)."""
    predicted, observed = reconciled.predicted_read, reconciled.observed_read
    assert observed is not None  # (a read not reported is never classified here)
    error = reconciled.token_error
    if not contract.offers_caching:
        # Nothing else explains it: the prediction (0 cached) holds whatever the tokenizer.
        where = f"request {request.request_id} ({request.source}:{request.line})"
        written = reconciled.observed_write or 0
        return CONTRACT_DISPUTED, f"{where}: {no_caching_dispute(observed, written, contract)}"
    if not request.exact:
        spread = stats.relative_spread if stats is not None else 0.0
        allowed = max(TOLERANCE_TOKENS, reconciled.observed_input / 100)
        allowed = max(allowed, spread * reconciled.observed_input)
        if error <= allowed:
            return TOKENIZER_APPROXIMATION, (
                f"{error} tokens off, within the approximate tokenizer's tolerance of"
                f" {allowed:g} tokens (calibration spread {spread:.4%})"
            )
    if observed > predicted and _all_new(spans, predicted, observed):
        return WARM_CACHE, (
            f"the cache was warm before the log began: the provider read {observed} tokens"
            f" (predicted {predicted}) of a prefix no earlier request of the log cached"
            f"{_built_in_note(request)}"
        )
    disputed = dispute(request, reconciled, spans, contract)
    if disputed is not None:
        return CONTRACT_DISPUTED, disputed
    if observed < predicted and contract.mode is CacheMode.AUTOMATIC:
        return BEST_EFFORT_MISS, (
            f"{predicted - observed} tokens of a prefix the log shows cached and alive were"
            f" not read: {contract.provider}'s automatic cache is best effort"
        )
    if observed < predicted and contract.storage_per_mtok_hour is not None:
        return BEST_EFFORT_MISS, (
            f"{predicted - observed} tokens of a prefix the log shows cached were not read:"
            f" {contract.provider}'s implicit cache has no documented lifetime"
        )
    figures = (
        f"predicted read {predicted} / write {reconciled.predicted_write}, observed read"
        f" {observed} / write {reconciled.observed_write}"
    )
    calls = request.observed.server_tool_calls if request.observed is not None else 0
    if calls:
        # docs/predictions.md, "Server tools": the sum is documented, its parts are not.
        return UNEXPLAINED, (
            f"{figures}: the usage sums the {calls + 1} sampling iterations of {calls} server"
            " tool call(s), whose results (encrypted in the response) are input to the later"
            " iterations; where the tool loop writes the cache is not documented"
            f"{_built_in_note(request)}"
        )
    return UNEXPLAINED, figures + _built_in_note(request)


def _built_in_note(request: TokenizedRequest) -> str:
    """What a request using provider-defined tools hides from a prediction (docs/predictions.md,
    "Server tools"); empty for the others."""
    tools = request.controls.built_in_tools
    if not tools:
        return ""
    return (
        f"; the request uses the provider's built-in tool(s) {', '.join(tools)}, whose own"
        " prompt the body does not hold (its length and place are not documented)"
    )


# Tokens new to the log at their position, and tokens no earlier breakpoint of the log
# cached: a read that covers some of the first, and only those two kinds, came from an entry
# written before the log begins. (A gap of uncached-but-seen tokens alone may be a breakpoint
# the provider placed elsewhere than we did: not warm.)
_NEW_TO_LOG = (FIRST_SIGHT, PREFIX_NOT_IN_LOG, PREFIX_DIVERGED)
_NOT_CACHED_BY_LOG = (*_NEW_TO_LOG, NO_BREAKPOINT)


def _all_new(spans: tuple[MissSpan, ...], start: int, end: int) -> bool:
    """Whether no entry the log shows held the tokens [start, end) we did not read: some
    are new to the log and the others were cached by no earlier breakpoint."""
    covered = 0
    new = False
    for span in spans:
        low, high = max(span.start, start), min(span.start + span.tokens, end)
        if high <= low:
            continue
        if span.cause not in _NOT_CACHED_BY_LOG:
            return False
        new = new or span.cause in _NEW_TO_LOG
        covered += high - low
    return new and covered == end - start


def no_caching_dispute(read: int, written: int, contract: ContractTerms) -> str:
    """Why cached tokens on a day whose contract offers no prompt caching dispute it (agent
    sessions say it in the same words, ``usecases.session_reconcile``)."""
    version = f"{contract.provider}/{contract.model}@{contract.effective_from.isoformat()}"
    return (
        f"the log shows {read + written} cached tokens (read {read}, written {written}) on a"
        f" day the contract in force, {version}, offers no prompt caching (from its source,"
        f" {contract.source}): the caching start date may be wrong"
    )


def dispute(
    request: TokenizedRequest,
    reconciled: ReconciledRequest,
    spans: tuple[MissSpan, ...],
    contract: ContractTerms,
) -> str | None:
    """A stored term the observation contradicts, named with the contract and request."""
    version = f"{contract.provider}/{contract.model}@{contract.effective_from.isoformat()}"
    where = f"request {request.request_id} ({request.source}:{request.line})"
    read = reconciled.observed_read or 0
    written = reconciled.observed_write or 0
    cached = read + written
    if cached and cached < contract.min_cacheable_tokens:
        return (
            f"{version} min_cacheable_tokens = {contract.min_cacheable_tokens}, but {where}"
            f" cached a prefix of {cached} tokens (read {read}, written {written})"
        )
    step = contract.increment_tokens
    minimum = contract.min_cacheable_tokens
    if step and read > minimum and (read - minimum) % step:
        return (
            f"{version} increment_tokens = {step}: {where} read {read} tokens, not"
            f" {minimum} + a multiple of {step}"
        )
    expired = [s for s in spans if s.cause == TTL_EXPIRED and s.start < read]
    if expired:
        return (
            f"{version} ttl_options: {where} read {read} tokens of a prefix whose entry had"
            f" expired ({expired[0].detail})"
        )
    if contract.mode is CacheMode.EXPLICIT and not request.breakpoints and cached:
        if not request.prompt_complete:
            # Breakpoints are marked in the prompt: a log that does not hold all of it (an
            # OTel span with content capture off, a transcript without its system prompt)
            # cannot show that none was marked.
            return None
        return (
            f"{version} mode = explicit: {where} marks no breakpoint, yet the provider"
            f" cached {cached} tokens"
        )
    return None


RECONCILE_COLUMNS: dict[str, str] = {
    **COLUMN_TYPES,
    "within_tolerance": "boolean",
    "classification": "string",
}


def reconcile(
    request: ReconcileRequest,
    store: ContractStore,
    *,
    progress: Progress | None = None,
    on_row: Callable[[PerRequestRow, ReconciledRow | None], None] | None = None,
) -> ReconcileReport:
    """Replay and reconcile the log (module docstring). ``on_row`` gets every replayed
    request with its verdict (None for a request without usage)."""
    request.log.check_sources()
    # Imported here: both import this module.
    from cachecast.usecases import mixed_reconcile
    from cachecast.usecases import session_reconcile as sessions

    if request.client is not None:
        named = profile_named(request.client)
        return sessions.reconcile_sessions(
            request, store, named, "client option", progress=progress
        )
    groups = file_groups(request.log)
    if len(groups) > 1:
        # Sessions of a client beside other logs (or another client's): each group the way
        # its files are predicted, one report (docs/predictions.md, "Logs that mix clients").
        return mixed_reconcile.reconcile_groups(request, store, groups, progress, on_row)
    if groups and (profile := groups[0].profile) is not None:
        return sessions.reconcile_sessions(request, store, profile, "log format", progress=progress)
    return replay_log(request, store, progress, on_row).report


def replay_log(
    request: ReconcileRequest,
    store: ContractStore,
    progress: Progress | None = None,
    on_row: Callable[[PerRequestRow, ReconciledRow | None], None] | None = None,
    *,
    refuse_empty: bool = True,
) -> ReconciledPart:
    """Replay and reconcile a log that is no agent session (module docstring). A log of
    which nothing is reconciled is refused unless ``refuse_empty`` is False (a part of a log
    that mixes clients: the whole is judged)."""
    if request.per_request is not None:
        check_table_path(request.per_request)
    progress = progress or NoProgress()
    progress.start("reconciling requests", None)  # counted as read, not lines
    replay = _Replay(request, store)
    table = None
    if request.per_request is not None:
        table = PerRequestTable(request.per_request, columns=RECONCILE_COLUMNS, record=_record)

    def sink(row: PerRequestRow, verdict: ReconciledRow | None) -> None:
        if verdict is not None:
            replay.rows.append(verdict)
            if len(replay.rows) > 4 * MAX_LISTED_REQUESTS:
                _trim(replay.rows)
        if table is not None:
            table((row, verdict))
        if on_row is not None:
            on_row(row, verdict)

    try:
        replay.run(progress, sink)
        reading = replay.reading
        check_reading(
            request.log,
            reading.errors,
            reading.requests_by_source,
            elsewhere=reading.counted_elsewhere,
        )
        if table is not None:
            table.close()
    except BaseException:
        if table is not None:
            table.discard()
        raise
    if replay.all.requests == 0 and refuse_empty:
        _refuse_nothing_reconciled(replay)
    errors = replay.reading.errors
    calibration = replay.reading.calibration
    targets = [_target_report(served, calibration) for served in replay.served.values()]
    _trim(replay.rows)
    report = ReconcileReport(
        at=request.at,
        sources=request.log.source_names,
        skipped_lines=bad_line_count(errors),
        errors=issues_of(errors),
        summary=ReconcileSummary.of(replay.all, replay.all_within, replay.all_classes),
        targets=targets,
        requests=replay.rows,
        requests_listed=len(replay.rows),
        requests_without_usage=replay.without_usage,
        contradictory_observations=replay.contradictory,
        unpriced=dict(replay.unpriced.most_common()),
    )
    return ReconciledPart(report, replay.all, replay.all_within, replay.all_classes)


def _refuse_nothing_reconciled(replay: _Replay) -> None:
    """A reconciliation that compared nothing is bad input, said with why (no contract for
    the log's models on its dates, no usage in the log, only contradictory usage): never a
    table of zeros with exit 0 (docs/errors.md)."""
    reasons = [f"{count} request(s): {reason}" for reason, count in replay.unpriced.most_common(5)]
    if replay.contradictory:
        reasons.append(
            f"{len(replay.contradictory)} request(s) report contradictory usage, first"
            f" {replay.contradictory[0]}"
        )
    without = replay.without_usage - len(replay.contradictory)
    if without > 0:
        first = replay.first_without_usage
        reasons.append(
            f"{without} request(s) carry no usage"
            + (
                f", first {first}: its response reports no token counts (nothing observed to"
                " compare a prediction with)"
                if first is not None
                else ""
            )
        )
    raise BadInputError(
        "nothing to reconcile: no request was priced against usage it reported ("
        + "; ".join(reasons or ["the log holds no request"])
        + ")",
        location=Location(field="log"),
    )


def _trim(rows: list[ReconciledRow]) -> None:
    """Keep the mismatches first (in log order), then the matches, at most the limit."""
    rows.sort(key=lambda row: (row.exact_match, row.source, row.line))
    del rows[MAX_LISTED_REQUESTS:]


def _record(item: tuple[PerRequestRow, ReconciledRow | None]) -> dict[str, Any]:
    row, verdict = item
    record = row.as_record()
    record["within_tolerance"] = verdict.within_tolerance if verdict is not None else None
    record["classification"] = verdict.classification if verdict is not None else None
    return record


def _target_report(served: _Served, calibration: dict[str, RatioStats]) -> ReconcileTarget:
    totals = served.totals
    bill = totals.totals
    own = {name: stats for name, stats in calibration.items() if name in served.logged}
    return ReconcileTarget.read(
        bill,  # requests, input_tokens, cache_read_tokens, hit_rate
        provider=totals.target.provider,
        model=totals.target.model,
        logged_models=sorted(served.logged),
        contract=ContractReference.of(totals.contract),
        tokenizer=totals.tokenizer,
        cache_write_tokens=bill.cache_write_total,
        cost=_exact_total(bill),
        summary=ReconcileSummary.of(served.summary, served.within_tolerance, served.classes),
        miss_causes=miss_causes_of(totals),
        calibration=calibration_of(own),
        timeline=timeline_of(totals),
        notes=notes_of(totals),
    )


def _exact_total(bill: BillTotals) -> Decimal:
    with localcontext(EXACT):  # the default context would round at 28 digits
        return bill.cost.total
