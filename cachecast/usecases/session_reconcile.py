"""``reconcile`` on agent sessions (Claude Code, Codex CLI): every request predicted from what
the log says before it, under the client's profile, and held against its observed usage.

Chosen by ``reconcile`` when the log's format belongs to a client profile or the request
names one (``client``). No tokenizer runs: a session's prompts lack the system prompt and
tools, so the prediction works on the provider's own counts (docs/predictions.md,
``sessions.predictor``). A request is within tolerance when its predicted reads and writes
are each within max(8 tokens, 1% of its prompt) of the observed ones; every other request
gets a cause in words (``sessions.causes``). Costs are billed under the dated contract of
the model that served the request; a log of which nothing can be priced is bad input.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal, localcontext

from cachecast.contracts import ContractStore
from cachecast.contracts.model import NO_CACHING, ContractTerms
from cachecast.contracts.served import ServedContract
from cachecast.core.errors import (
    BadInputError,
    CachecastError,
    Location,
    LogRecordError,
    UnknownContractError,
)
from cachecast.logs.errors import LogFileError, bad_line_count
from cachecast.logs.providers import infer_provider
from cachecast.passes.log_input import UNREADABLE_FIELD, LogFile, check_reading
from cachecast.passes.per_request import PerRequestTable, check_table_path
from cachecast.passes.progress import NoProgress, Progress
from cachecast.sessions.causes import within
from cachecast.sessions.headless import PER_UNIT
from cachecast.sessions.predictor import Prediction
from cachecast.sessions.profiles import ClientProfile
from cachecast.sessions.reading import (
    ModelDefaults,
    SessionRequest,
    native_format,
    no_request_reason,
    record_requests,
    session_requests,
)
from cachecast.sessions.replay import predict_sessions
from cachecast.simulator.billing import EXACT
from cachecast.simulator.reconcile import (
    ReconciledRequest,
    ReconciliationSummary,
    reconcile_request,
)
from cachecast.simulator.types import RequestUsage
from cachecast.usecases.reconcile import (
    CONTRACT_DISPUTED,
    MAX_LISTED_REQUESTS,
    WARM_CACHE,
    ReconciledPart,
    ReconciledRow,
    ReconcileReport,
    ReconcileRequest,
    ReconcileSummary,
    ReconcileTarget,
    no_caching_dispute,
    unknown_reason,
    unnamed_reason,
)
from cachecast.usecases.reports import ContractReference, issues_of
from cachecast.usecases.session_reports import SessionFileReport, client_report

TOLERANCE = "each of reads and writes within max(8 tokens, 1% of the prompt)"
# ``--per-request`` on sessions: one row per predicted and priced request.
SESSION_COLUMNS: dict[str, str] = {
    "target": "string",
    "source": "string",
    "line": "int64",
    "request_id": "string",
    "timestamp": "float64",
    "input_tokens": "int64",
    "predicted_cache_read_tokens": "int64",
    "observed_cache_read_tokens": "int64",
    "predicted_cache_write_tokens": "int64",
    "observed_cache_write_tokens": "Int64",
    "predicted_cost": "string",
    "observed_cost": "string",
    "within_tolerance": "bool",
    "classification": "string",
    "explanation": "string",
}


@dataclass(slots=True)
class _Served:
    contract: ContractTerms
    logged: set[str] = field(default_factory=set)
    summary: ReconciliationSummary = field(default_factory=ReconciliationSummary)
    within: int = 0
    classes: Counter[str] = field(default_factory=Counter)
    read: int = 0
    written: int = 0
    prompt: int = 0
    notes: dict[str, None] = field(default_factory=dict)  # what was assumed, in order


@dataclass(slots=True)
class _File:
    requests: int = 0
    within: int = 0
    exact: int = 0
    causes: Counter[str] = field(default_factory=Counter)


def reconcile_sessions(
    request: ReconcileRequest,
    store: ContractStore,
    profile: ClientProfile,
    chosen_by: str,
    *,
    progress: Progress | None = None,
) -> ReconcileReport:
    """Predict and reconcile every request of the sessions (module docstring)."""
    return session_part(request, store, profile, chosen_by, progress=progress).report


def session_part(
    request: ReconcileRequest,
    store: ContractStore,
    profile: ClientProfile,
    chosen_by: str,
    *,
    progress: Progress | None = None,
    refuse_empty: bool = True,
) -> ReconciledPart:
    """:func:`reconcile_sessions`, with the figures its summary was made of; with
    ``refuse_empty`` False, sessions of which nothing is priced are not refused (a part of a
    log that mixes clients: the whole is judged)."""
    progress = progress or NoProgress()
    errors: list[LogRecordError] = []
    per_source: dict[str, int] = {}
    requests: list[SessionRequest] = []
    skipped: dict[str, Counter[str]] = {}  # per file: the lines read that are no request
    for item in _items(request, skipped):
        if isinstance(item, LogRecordError):
            if request.log.on_bad_record == "stop":
                raise item
            errors.append(item)
            continue
        per_source[item.facts.source] = per_source.get(item.facts.source, 0) + 1
        requests.append(item)
    for name in request.log.source_names:
        per_source.setdefault(name, 0)
    # A file read without a bad line that gave no request: why (a session cut before its
    # first response, usage in a shape not read), said where the run refuses it.
    bad = {error.location.source for error in errors}
    empty = {
        name: no_request_reason(_format_of(file), skipped[name])
        for file in request.log.files
        if per_source.get(name := file.display_name) == 0 and name not in bad
    }
    check_reading(request.log, errors, per_source, empty)
    progress.start("reconciling", len(requests))
    table = None
    if request.per_request is not None:
        check_table_path(request.per_request)
        table = PerRequestTable(
            request.per_request,
            columns=SESSION_COLUMNS,
            record=lambda row: row.model_dump(mode="json", include=set(SESSION_COLUMNS)),
        )
    contracts: dict[tuple[str, str, dt.date], ServedContract | str] = {}
    served: dict[tuple[str, str, dt.date], _Served] = {}
    files: dict[str, _File] = {}
    rows: list[ReconciledRow] = []
    unpriced: Counter[str] = Counter()
    overall = ReconciliationSummary()
    overall_within = 0
    overall_classes: Counter[str] = Counter()
    versions: set[str] = set()

    def minimum(each: SessionRequest) -> int:
        found = _contract(contracts, store, request, each)
        return 0 if isinstance(found, str) else found.terms.min_cacheable_tokens

    try:
        for judged in predict_sessions(requests, profile, minimum):
            each, predicted = judged.request, judged.predicted
            facts, observed = each.facts, each.observed
            progress.advance(1)
            if each.client_version:
                versions.add(each.client_version)
            ok, verdict, why = judged.within_tolerance, judged.cause, judged.why
            found = _contract(contracts, store, request, each)
            if not isinstance(found, str) and not found.terms.offers_caching:
                predicted, ok, verdict, why = _without_caching(each, found.terms)
            # A file's figures count every prediction, priced or not (a prediction needs no price).
            figures = files.setdefault(facts.source, _File())
            figures.requests += 1
            figures.within += ok
            figures.exact += predicted.read == observed.read and (
                not observed.writes_reported or predicted.write == observed.write
            )
            if verdict is not None:
                figures.causes[verdict] += 1
            if isinstance(found, str):
                unpriced[found] += 1
                continue
            contract = found.terms
            reconciled = _reconciled(each, predicted, contract)
            key = (contract.provider, contract.model, contract.effective_from)
            target = served.get(key)
            if target is None:
                target = served[key] = _Served(contract)
            target.logged.add(facts.model)
            if found.note is not None:
                target.notes[found.note] = None
            target.summary.add(reconciled)
            overall.add(reconciled)
            target.within += ok
            overall_within += ok
            target.read += observed.read
            target.written += observed.write
            target.prompt += facts.prompt_tokens
            if verdict is not None:
                target.classes[verdict] += 1
                overall_classes[verdict] += 1
            row = _row(each, predicted, reconciled, contract, ok, verdict, why)
            if table is not None:
                table(row)
            rows.append(row)
        if requests and not served and refuse_empty:
            reasons = "; ".join(f"{why} ({count} requests)" for why, count in unpriced.items())
            raise BadInputError(f"nothing in the log can be priced: {reasons}")
        if table is not None:
            table.close()
    except BaseException:
        if table is not None:
            table.discard()  # no half-written table after an error
        raise
    rows.sort(key=lambda row: (row.within_tolerance, row.exact_match, row.source, row.line))
    del rows[MAX_LISTED_REQUESTS:]
    client = client_report(profile, versions, chosen_by)
    report = ReconcileReport(
        at=request.at,
        tolerance=TOLERANCE,
        sources=request.log.source_names,
        skipped_lines=bad_line_count(errors),
        errors=issues_of(errors),
        summary=summary_of_causes(overall, overall_within, overall_classes),
        targets=[_target(target) for target in served.values()],
        requests=rows,
        requests_listed=len(rows),
        requests_without_usage=0,
        unpriced=dict(unpriced.most_common()),
        client=client,
        clients=[client],
        files=[
            SessionFileReport(
                source=source,
                client=profile.name,
                requests=each.requests,
                within_tolerance=each.within,
                exact=each.exact,
                causes=dict(each.causes.most_common()),
            )
            for source, each in files.items()
        ],
    )
    return ReconciledPart(report, overall, overall_within, overall_classes)


def _format_of(file: LogFile) -> str:
    """The agent format a file was read as ("" where none: its reader raised already)."""
    try:
        return file.format or native_format(file.path) or ""
    except CachecastError:
        return ""


def _items(
    request: ReconcileRequest, skipped: dict[str, Counter[str]]
) -> Iterator[SessionRequest | LogRecordError]:
    log = request.log
    if log.inline:
        yield from record_requests(log._inline_records(), log.records_name)
        return
    # As every pass over several files does (passes.log_input): a file no format reads is
    # reported under the field "file" and the others are read; the command exits 2 after the
    # report (docs/errors.md).
    tolerant = log.skips_unreadable_files
    seen: set[str] = set()  # a response a resumed session repeats is counted once
    defaults = ModelDefaults(log.default_model, log.default_provider)
    for file in log.files:
        passed = skipped[file.display_name] = Counter()
        try:
            for item in session_requests(
                file.path,
                file.display_name,
                file.format,
                seen=seen,
                skipped=passed,
                defaults=defaults,
            ):
                if isinstance(item, SessionRequest) and item.unit != "request":
                    raise BadInputError(
                        f"its usage is stated per {item.unit} ({PER_UNIT[item.unit]}), not per"
                        " request: no request's read can be reconciled; `cachecast usage`"
                        " reports it",
                        location=Location(
                            source=file.display_name, line=item.facts.line, field="usage"
                        ),
                    )
                yield item
        except LogFileError as error:
            if not tolerant:
                raise
            yield LogRecordError(file.display_name, None, UNREADABLE_FIELD, error.reason)


def _contract(
    contracts: dict[tuple[str, str, dt.date], ServedContract | str],
    store: ContractStore,
    request: ReconcileRequest,
    each: SessionRequest,
) -> ServedContract | str:
    """The contract the request is priced under on its own day (a log can span a price
    change), as ``contracts.served`` finds it for a model that served the request."""
    provider = each.provider or request.log.default_provider
    model = each.facts.model or request.log.default_model
    if not provider and model:
        # A line that names the model only (a canonical record read with --client): its
        # family names the provider (docs/log-formats.md, "Provider names"), as
        # ``usecases.reconcile`` infers it for any other log.
        provider = infer_provider(model)
    if not provider or not model:
        return unnamed_reason(provider or None, model or None)
    # A log that gives no time (headless output): --at, else the version in force today,
    # as for any log whose times are not dates (docs/predictions.md).
    today = dt.datetime.now(dt.UTC).date()
    logged = dt.datetime.fromtimestamp(each.facts.timestamp, dt.UTC).date() if each.dated else today
    day = request.at or logged
    key = (provider.lower(), model.lower(), day)
    found = contracts.get(key)
    if found is None:
        try:
            found = store.served(key[0], key[1], day, dt.datetime.now(dt.UTC).date())
        except UnknownContractError as error:
            found = unknown_reason(key[0], key[1], error.message)
        contracts[key] = found
    return found


def _without_caching(
    each: SessionRequest, contract: ContractTerms
) -> tuple[Prediction, bool, str | None, str]:
    """The prediction, verdict and words for a request whose contract in force offers no
    prompt caching (mode none): nothing read or written, whatever the client's profile
    expects; cached tokens the log shows dispute the contract (``usecases.reconcile``)."""
    facts, observed = each.facts, each.observed
    predicted = Prediction(
        read=0, write=0, uncached=facts.prompt_tokens, ttl=None, basis=NO_CACHING
    )
    if not observed.read and not observed.write:
        return predicted, True, None, f"{NO_CACHING} under {contract.provider}/{contract.model}"
    why = no_caching_dispute(observed.read, observed.write, contract)
    return predicted, within(facts, predicted, observed), CONTRACT_DISPUTED, why


def _reconciled(
    each: SessionRequest, predicted: Prediction, contract: ContractTerms
) -> ReconciledRequest:
    facts, usage = each.facts, each.usage
    ttl = predicted.ttl if predicted.ttl in {o.name for o in contract.ttl_options} else None
    default_ttl = contract.default_ttl
    chosen = ttl or (default_ttl.name if default_ttl is not None else None)
    writes = {chosen: predicted.write} if predicted.write and chosen is not None else {}
    usage_predicted = RequestUsage(
        request_id=facts.request_id,
        line=facts.line,
        timestamp=facts.timestamp,
        scope=facts.lineage,
        input_tokens=facts.prompt_tokens,
        output_tokens=usage.output_tokens or 0,  # the same output on both sides
        cache_read_tokens=predicted.read,
        cache_write_tokens=writes,
        uncached_input_tokens=predicted.uncached,
    )
    # Sessions judge the read they learn from (``ObservedSplit.read``: an absent read is 0
    # there, sessions.native), so the summary sums the same read as the rows.
    observed = replace(usage, cache_read_tokens=each.observed.read)
    return reconcile_request(usage_predicted, observed, contract)


def _row(
    each: SessionRequest,
    predicted: Prediction,
    reconciled: ReconciledRequest,
    contract: ContractTerms,
    ok: bool,
    verdict: str | None,
    why: str,
) -> ReconciledRow:
    facts = each.facts
    return ReconciledRow.read(
        reconciled,
        source=facts.source,
        timestamp=facts.timestamp,
        target=f"{contract.provider}:{contract.model}",
        exact_tokens=False,
        input_tokens=facts.prompt_tokens,
        predicted_cache_read_tokens=predicted.read,
        observed_cache_read_tokens=each.observed.read,
        predicted_cache_write_tokens=predicted.write,
        observed_cache_write_tokens=each.observed.write if each.observed.writes_reported else None,
        within_tolerance=ok,
        classification=verdict,
        explanation=why,
        miss_causes=[],
    )


def summary_of_causes(
    summary: ReconciliationSummary, within_count: int, classes: Counter[str]
) -> ReconcileSummary:
    # The summary's warm-start figures count the requests the causes call warm (a cause is
    # only given outside tolerance); the causes replace the log-replay classes.
    warm = Counter({WARM_CACHE: classes[WARM_CACHE]})
    report = ReconcileSummary.of(summary, within_count, warm)
    return report.model_copy(update={"classes": dict(classes.most_common())})


def _target(target: _Served) -> ReconcileTarget:
    contract = target.contract
    with localcontext(EXACT):
        cost = target.summary.observed_cost_sum + Decimal(0)
    return ReconcileTarget(
        provider=contract.provider,
        model=contract.model,
        logged_models=sorted(target.logged),
        contract=ContractReference.of(contract),
        tokenizer="none: the provider's own counts from the log's usage",
        requests=target.summary.requests,
        input_tokens=target.prompt,
        cache_read_tokens=target.read,
        cache_write_tokens=target.written,
        hit_rate=target.read / target.prompt if target.prompt else 0.0,
        cost=cost,
        summary=summary_of_causes(target.summary, target.within, target.classes),
        miss_causes=[],
        calibration=[],
        timeline=[],
        notes=list(target.notes),
    )
