"""``inspect``: what a log holds, per file: the report a user reads first on a new file.

:func:`inspect_logs` reads each file the way every command does (format detection, then the
tokenizer's reader), so what it reports is what an estimate will see: the billed requests,
their models and providers, the time span, the observed usage totals and how many requests
carried usage, whether the prompts are complete, what the format holds that is not a billed
request (``skipped``, by reason), and every line that could not be read
(``file:line: field: reason``; the first :data:`MAX_REPORTED_ERRORS` are listed, all are
counted). Batch requests and results files given together are paired
(``logs.pair_batch_files``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from pydantic import BaseModel, Field

from cachecast.logs import open_log, pair_batch_files
from cachecast.logs.canonical import service_tier_hint
from cachecast.logs.errors import BadRecords
from cachecast.logs.headless_names import REQUEST, RUN, RUN_MEANING, TURN, TURN_MEANING
from cachecast.passes.log_input import LogFile, LogInput
from cachecast.sessions.profiles import profile_for_format, profile_named
from cachecast.sessions.reading import ModelDefaults, SessionRecord, session_records
from cachecast.tokenizers.records import read_log
from cachecast.usecases.reports import Report
from cachecast.usecases.requests import Request
from cachecast.usecases.session_reports import ClientReport, client_report

# A file with a million bad lines lists this many; error_count says how many there were.
MAX_REPORTED_ERRORS = 100


class ObservedTotals(BaseModel):
    """Sums of the usage the requests reported (requests without usage add nothing)."""

    input_tokens: int = Field(0, description="prompt tokens, cached tokens included")
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = Field(0, description="output tokens, reasoning included where billed")
    cost: Decimal | None = Field(None, description="cost a gateway reported (OpenRouter)")


class FileInspection(Report):
    path: str
    format: str
    results_path: str | None = None
    requests: int = Field(description="billed requests read from the file")
    turns: int = Field(0, description=TURN_MEANING)
    runs: int = Field(0, description=RUN_MEANING)
    models: dict[str, int] = Field(
        default_factory=dict, description="model -> requests (and turns, runs)"
    )
    providers: dict[str, int] = Field(
        default_factory=dict, description="provider -> requests (and turns, runs)"
    )
    first_timestamp: datetime | None = None
    last_timestamp: datetime | None = None
    observed: ObservedTotals = Field(default_factory=ObservedTotals)
    requests_with_usage: int = 0
    prompt_complete: bool = Field(
        True, description="every request's whole prompt is in the log (false: transcripts)"
    )
    requests_prompt_incomplete: int = 0
    skipped: dict[str, int] = Field(
        default_factory=dict, description="entries that are not billed requests, by reason"
    )
    errors: list[str] = Field(default_factory=list, description="file:line: field: reason")
    error_count: int = 0
    contradictory: list[str] = Field(
        default_factory=list,
        description="file:line: usage that contradicts itself (cache reads and writes above"
        " the prompt): kept as reported, never billed or reconciled",
    )
    client: ClientReport | None = Field(
        default=None, description="agent sessions: the client that wrote them (docs/clients.md)"
    )
    service_tiers: dict[str, int] = Field(
        default_factory=dict,
        description="service tier -> requests run under it (batch: read from a batch file;"
        " flex, priority, scale as the responses report them): batch and flex are billed at"
        " the provider's dated batch term where one is in force (docs/contracts.md, Batch"
        " terms), the rest and those without a term at on-demand prices; a hint says which"
        " (docs/log-formats.md, Canonical records)",
    )
    hints: list[str] = Field(
        default_factory=list, description="what the user may want to do about this file"
    )


class InspectReport(Report):
    files: list[FileInspection]


class InspectRequest(Request):
    """The files to inspect. A file given without ``format`` and ``results`` is paired with
    a batch results file among the others (``logs.pair_batch_files``)."""

    files: list[LogFile] = Field(min_length=1)
    client: str | None = Field(
        default=None, description="the agent client (docs/clients.md; default: from the format)"
    )
    default_model: str | None = Field(
        default=None, description="the model of records that name none (a Cohere v1 body)"
    )


def inspect(request: InspectRequest) -> InspectReport:
    """What each file holds (see the module docstring)."""
    LogInput(files=request.files).check_sources()
    plain = [file for file in request.files if file.format is None and file.results is None]
    names = {file.path: file.display_name for file in request.files}
    paired = dict(pair_batch_files([file.path for file in plain]))
    inspections = []
    for file in request.files:
        if file in plain:
            if file.path not in paired:
                continue  # a results file paired with its requests
            results = paired[file.path]
        else:
            results = file.results
        inspection = inspect_file(
            file.path,
            format=file.format,
            results=results,
            name=names[file.path],
            client=request.client,
            default_model=request.default_model,
        )
        shown = names.get(results) if results is not None else None
        if file.results_name is not None:
            shown = file.results_name
        if shown is not None:
            inspection = inspection.model_copy(update={"results_path": shown})
        inspections.append(inspection)
    return InspectReport(files=inspections)


def inspect_logs(
    paths: Sequence[str | Path], *, format: str | None = None, results: str | Path | None = None
) -> InspectReport:
    """:func:`inspect` on paths: ``format`` forces one format for every file; ``results`` is
    the results file of the (one) batch requests file among ``paths``."""
    files = [
        LogFile(
            path=Path(path),
            format=format,
            results=Path(results) if results is not None else None,
        )
        for path in paths
    ]
    return inspect(InspectRequest(files=files))


def inspect_file(
    path: str | Path,
    *,
    format: str | None = None,
    results: str | Path | None = None,
    name: str | None = None,
    client: str | None = None,
    default_model: str | None = None,
) -> FileInspection:
    chosen = profile_named(client) if client is not None else None
    stream = open_log(path, format=format, results=results, name=name)
    errors = BadRecords()
    models: Counter[str] = Counter()
    providers: Counter[str] = Counter()
    totals = ObservedTotals()
    cost: Decimal | None = None
    first: float | None = None
    last: float | None = None
    count = with_usage = incomplete = 0
    tiers: Counter[str] = Counter()
    tier_notes: Counter[str] = Counter()
    units: Counter[str] = Counter()  # headless turns and runs: not requests (usecases.usage)
    contradictory: list[str] = []
    profile = chosen or profile_for_format(stream.format)
    versions: set[str] = set()
    # Agent sessions are read without a tokenizer (their prompts lack the system prompt and
    # tools, and their usage can claim millions of tokens): what inspect reports is in the
    # records, and nothing per request is kept.
    stream.usage_only = profile is not None
    requests = (
        read_log(stream, errors=errors, default_model=default_model)
        if profile is None
        else session_records(stream, errors, versions, ModelDefaults(default_model))
    )
    for request in requests:
        unit = request.unit if isinstance(request, SessionRecord) else REQUEST
        if unit == REQUEST:
            count += 1
        else:
            units[unit] += 1
        models[request.model or "(none)"] += 1
        providers[request.provider or "(none)"] += 1
        if not isinstance(request, SessionRecord) or request.dated:
            first = request.timestamp if first is None else min(first, request.timestamp)
            last = request.timestamp if last is None else max(last, request.timestamp)
        if not request.prompt_complete:
            incomplete += 1
        if not isinstance(request, SessionRecord) and request.service_tier is not None:
            tiers[request.service_tier] += 1
            note = service_tier_hint(request.service_tier, request.provider)
            if note is not None:
                tier_notes[note] += 1
        observed = request.observed
        if observed is None:
            continue
        with_usage += 1
        if observed.contradiction is not None and len(contradictory) < MAX_REPORTED_ERRORS:
            contradictory.append(f"{stream.source}:{request.line}: {observed.contradiction}")
        totals.input_tokens += observed.input_tokens or 0
        totals.cache_read_tokens += observed.cache_read_tokens or 0
        written = observed.cache_write_tokens
        totals.cache_write_tokens += (
            written if written is not None else sum(observed.cache_write_by_ttl.values())
        )
        totals.output_tokens += observed.output_tokens or 0
        if observed.cost is not None:
            cost = observed.cost if cost is None else cost + observed.cost
    totals.cost = cost
    hints = []
    if stream.format in BATCH_REQUEST_FORMATS and stream.results is None:
        # A batch's requests carry no times and no usage: those are in its results file.
        first = last = None
        hints.append(
            "a batch requests file without its results: no times and no usage; give the"
            " batch's results file with --results FILE (or both files)"
        )
    for note, requests_of_tier in tier_notes.most_common():
        # What reconcile and estimate bill these at (their targets' notes say the same).
        hints.append(f"{requests_of_tier} request(s) {note}")
    return FileInspection(
        path=stream.source,
        format=stream.format,
        results_path=None if stream.results is None else str(stream.results),
        requests=count,
        turns=units[TURN],
        runs=units[RUN],
        models=dict(models.most_common()),
        providers=dict(providers.most_common()),
        first_timestamp=_moment(first),
        last_timestamp=_moment(last),
        observed=totals,
        requests_with_usage=with_usage,
        prompt_complete=incomplete == 0,
        requests_prompt_incomplete=incomplete,
        skipped=dict(stream.skipped.most_common()),
        errors=[str(error) for error in errors[:MAX_REPORTED_ERRORS]],
        error_count=errors.total,
        contradictory=contradictory,
        client=None
        if profile is None
        else client_report(profile, versions, "client option" if chosen else "log format"),
        service_tiers=dict(tiers.most_common()),
        hints=hints,
    )


# Batch requests files: their times and usage are in the results file paired with them.
BATCH_REQUEST_FORMATS = ("openai-batch", "anthropic-batch", "bedrock-batch")


def _moment(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, tz=UTC)
