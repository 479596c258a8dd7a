"""``reconcile`` on a log that mixes clients, or agent sessions with other logs: each group of
files predicted the way its files are, one report.

A folder such as a home or project directory can hold Claude Code transcripts, Codex rollouts
and recorded HTTP traffic side by side. Each file's format says which client profile reads it
(``usecases.session_reports.file_groups``); every group of one client is reconciled as that
client's sessions (``usecases.session_reconcile``), the other files by the replay
(``usecases.reconcile``), each group exactly as if it were reconciled alone
(docs/predictions.md, "Logs that mix clients"). The report sums the groups: its summary over
every request, its targets and requests those of every group, and ``files`` names each
file's client profile ("none" for the replayed files).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence
from decimal import localcontext

from cachecast.contracts import ContractStore
from cachecast.core.errors import BadInputError, Location
from cachecast.passes.log_input import UNREADABLE_FIELD
from cachecast.passes.progress import Progress
from cachecast.simulator.billing import EXACT
from cachecast.simulator.pricing import PerRequestRow
from cachecast.simulator.reconcile import ReconciliationSummary
from cachecast.usecases.reconcile import (
    MAX_LISTED_REQUESTS,
    ReconciledPart,
    ReconciledRow,
    ReconcileReport,
    ReconcileRequest,
    replay_log,
)
from cachecast.usecases.reports import InputIssue
from cachecast.usecases.session_reconcile import session_part, summary_of_causes
from cachecast.usecases.session_reports import ClientReport, FileGroup, SessionFileReport

# The client a replayed file's entry in ``files`` names: no client profile read it.
NO_CLIENT = "none"


def reconcile_groups(
    request: ReconcileRequest,
    store: ContractStore,
    groups: Sequence[FileGroup],
    progress: Progress | None = None,
    on_row: Callable[[PerRequestRow, ReconciledRow | None], None] | None = None,
) -> ReconcileReport:
    """Reconcile every group of files as it would be alone and sum them in one report
    (module docstring). ``on_row`` gets the replayed groups' requests."""
    if request.per_request is not None:
        # The replay's table and the sessions' have different columns (SESSION_COLUMNS).
        raise BadInputError(
            "--per-request on a log that mixes "
            + " and ".join(_group_name(group) for group in groups)
            + ": the tables' columns differ; give each kind's files in a run of its own",
            location=Location(field="per_request"),
        )
    tolerant = request.log.skips_unreadable_files
    parts: list[ReconciledPart] = []
    failed: list[InputIssue] = []
    first_error: BadInputError | None = None
    plain_files: dict[str, _FileFigures] = {}
    for group in groups:
        alone = request.model_copy(
            update={"log": request.log.model_copy(update={"files": list(group.files)})}
        )
        try:
            if group.profile is not None:
                part = session_part(
                    alone, store, group.profile, "log format", progress=progress, refuse_empty=False
                )
            else:
                sink = _counting(plain_files, on_row)
                part = replay_log(alone, store, progress, sink, refuse_empty=False)
        except BadInputError as error:
            # As a file no format reads in a run over many files (docs/errors.md): the
            # group's files are reported and the other groups go on; a run where no group
            # gave a report is refused with the first group's error.
            if not tolerant:
                raise
            first_error = first_error or error
            failed.extend(
                InputIssue(
                    file=file.display_name,
                    line=None,
                    field=UNREADABLE_FIELD,
                    reason=_not_reconciled(error, file.display_name),
                )
                for file in group.files
            )
            continue
        parts.append(part)
    if not parts:
        assert first_error is not None
        raise first_error
    report = _merged(request, parts, failed, plain_files)
    if report.summary.requests == 0:
        # As for one kind of log (docs/errors.md, "Nothing priced"): never a table of zeros.
        reasons = [f"{count} request(s): {why}" for why, count in list(report.unpriced.items())[:5]]
        if report.requests_without_usage:
            reasons.append(f"{report.requests_without_usage} request(s) carry no usable usage")
        raise BadInputError(
            "nothing to reconcile: no request of any file was priced against usage it reported ("
            + ("; ".join(reasons) or "the log holds no request")
            + ")",
            location=Location(field="log"),
        )
    return report


@dataclasses.dataclass(slots=True)
class _FileFigures:
    requests: int = 0
    within: int = 0
    exact: int = 0
    causes: Counter[str] = dataclasses.field(default_factory=Counter)


def _counting(
    figures: dict[str, _FileFigures],
    on_row: Callable[[PerRequestRow, ReconciledRow | None], None] | None,
) -> Callable[[PerRequestRow, ReconciledRow | None], None]:
    """A replay's row sink that also counts each file's reconciled requests."""

    def sink(row: PerRequestRow, verdict: ReconciledRow | None) -> None:
        if verdict is not None:
            each = figures.setdefault(verdict.source, _FileFigures())
            each.requests += 1
            each.within += verdict.within_tolerance
            each.exact += verdict.exact_match
            if verdict.classification is not None:
                each.causes[verdict.classification] += 1
        if on_row is not None:
            on_row(row, verdict)

    return sink


def _not_reconciled(error: BadInputError, name: str) -> str:
    """Why a file of a group that could not be reconciled was not: the group's error, with
    where it is (the file's own name left out)."""
    where = error.location
    place = [where.source] if where.source and where.source != name else []
    place += [f"line {where.line}"] if where.line is not None else []
    place += [where.field] if where.field and where.field != UNREADABLE_FIELD else []
    return "not reconciled: " + "".join(f"{part}: " for part in place) + error.message


def _group_name(group: FileGroup) -> str:
    return group.profile.title if group.profile is not None else "logs of requests"


def _merged(
    request: ReconcileRequest,
    parts: list[ReconciledPart],
    failed: list[InputIssue],
    plain_files: dict[str, _FileFigures],
) -> ReconcileReport:
    order = {name: index for index, name in enumerate(request.log.source_names)}

    def place(name: str) -> int:
        return order.get(name, len(order))

    summary = ReconciliationSummary()
    within = 0
    classes: Counter[str] = Counter()
    for part in parts:
        _add(summary, part.summary)
        within += part.within_tolerance
        classes += part.classes
    reports = [part.report for part in parts]
    rows = [row for report in reports for row in report.requests]
    # As on sessions: outside tolerance first, then the inexact, each in log order.
    rows.sort(key=lambda row: (row.within_tolerance, row.exact_match, place(row.source), row.line))
    del rows[MAX_LISTED_REQUESTS:]
    clients: list[ClientReport] = [client for report in reports for client in report.clients]
    files = [entry for report in reports for entry in report.files]
    files += [
        SessionFileReport(
            source=source,
            client=NO_CLIENT,
            requests=each.requests,
            within_tolerance=each.within,
            exact=each.exact,
            causes=dict(each.causes.most_common()),
        )
        for source, each in plain_files.items()
    ]
    files.sort(key=lambda entry: place(entry.source))
    errors = [issue for report in reports for issue in report.errors] + failed
    errors.sort(key=lambda issue: place(issue.file))  # (stable: each file's lines in order)
    unpriced: Counter[str] = Counter()
    for report in reports:
        unpriced.update(report.unpriced)
    return ReconcileReport(
        at=request.at,
        sources=request.log.source_names,
        skipped_lines=sum(report.skipped_lines for report in reports),
        errors=errors,
        # The warm-start figures count the requests either kind calls warm; the classes are
        # the replay's classes and the sessions' causes together (``session_reconcile``).
        summary=summary_of_causes(summary, within, classes),
        targets=[target for report in reports for target in report.targets],
        requests=rows,
        requests_listed=len(rows),
        requests_without_usage=sum(report.requests_without_usage for report in reports),
        contradictory_observations=[
            line for report in reports for line in report.contradictory_observations
        ][:MAX_LISTED_REQUESTS],
        unpriced=dict(unpriced.most_common()),
        client=clients[0] if len(clients) == 1 else None,
        clients=clients,
        files=files,
    )


def _add(total: ReconciliationSummary, part: ReconciliationSummary) -> None:
    """``total`` plus ``part``: every field of the running summary is a sum."""
    with localcontext(EXACT):  # sums of exact costs stay exact
        for each in dataclasses.fields(ReconciliationSummary):
            setattr(total, each.name, getattr(total, each.name) + getattr(part, each.name))
