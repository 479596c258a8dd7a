"""What a log holds, per file: the report a user reads first on a new file.

:func:`inspect_logs` reads each file the way every command does (format detection, then the
tokenizer's reader), so what it reports is what an estimate will see: the billed requests,
their models and providers, the time span, the observed usage totals and how many requests
carried usage, whether the prompts are complete, what the format holds that is not a billed
request (``skipped``, by reason), and every line that could not be read
(``file:line: field: reason``; the first :data:`MAX_REPORTED_ERRORS` are listed, all are
counted). Batch requests and results files given together are paired
(:func:`pair_batch_files`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from pydantic import BaseModel, Field

from cachecast.logs.errors import LogError
from cachecast.logs.formats import detect_format, open_log

# A file with a million bad lines lists this many; error_count says how many there were.
MAX_REPORTED_ERRORS = 100


class ObservedTotals(BaseModel):
    """Sums of the usage the requests reported (requests without usage add nothing)."""

    input_tokens: int = Field(0, description="prompt tokens, cached tokens included")
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = Field(0, description="output tokens, reasoning included where billed")
    cost: Decimal | None = Field(None, description="cost a gateway reported (OpenRouter)")


class FileInspection(BaseModel):
    path: str
    format: str
    results_path: str | None = None
    requests: int = Field(description="billed requests read from the file")
    models: dict[str, int] = Field(default_factory=dict, description="model -> requests")
    providers: dict[str, int] = Field(default_factory=dict, description="provider -> requests")
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


class InspectReport(BaseModel):
    files: list[FileInspection]


def inspect_logs(
    paths: Sequence[str | Path], *, format: str | None = None, results: str | Path | None = None
) -> InspectReport:
    """Inspect each log. ``format`` forces one format for every file; ``results`` is the
    results file of the (one) batch requests file among ``paths``. Without ``results``,
    batch requests and results files among ``paths`` are paired by
    :func:`pair_batch_files`."""
    if results is not None or format is not None:
        pairs = [(Path(path), Path(results) if results is not None else None) for path in paths]
    else:
        pairs = pair_batch_files(paths)
    return InspectReport(files=[inspect_file(path, format=format, results=r) for path, r in pairs])


def inspect_file(
    path: str | Path, *, format: str | None = None, results: str | Path | None = None
) -> FileInspection:
    from cachecast.tokenizers.records import read_log  # (that module imports this package)

    stream = open_log(path, format=format, results=results)
    errors: list[LogError] = []
    models: Counter[str] = Counter()
    providers: Counter[str] = Counter()
    totals = ObservedTotals()
    cost: Decimal | None = None
    first: float | None = None
    last: float | None = None
    count = with_usage = incomplete = 0
    for request in read_log(stream, errors=errors):
        count += 1
        models[request.model or "(none)"] += 1
        providers[request.provider or "(none)"] += 1
        first = request.timestamp if first is None else min(first, request.timestamp)
        last = request.timestamp if last is None else max(last, request.timestamp)
        if not request.prompt_complete:
            incomplete += 1
        observed = request.observed
        if observed is None:
            continue
        with_usage += 1
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
    return FileInspection(
        path=str(stream.path),
        format=stream.format,
        results_path=None if stream.results is None else str(stream.results),
        requests=count,
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
        error_count=len(errors),
    )


def _moment(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, tz=UTC)


def _common_prefix(a: str, b: str) -> int:
    """Characters two file names share at their start (``run.jsonl`` / ``run_results.jsonl``)."""
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def pair_batch_files(paths: Sequence[str | Path]) -> list[tuple[Path, Path | None]]:
    """Each path with the results file it pairs with (None for the others): a batch
    requests file (openai-batch, anthropic-batch) and a results file of its kind among
    ``paths`` are paired; with several of a kind, by the longest common file-name prefix.
    A results file left without requests is inspected alone."""
    files = [Path(path) for path in paths]
    kinds = {path: detect_format(path)[0] for path in files}
    requests = [p for p in files if kinds[p].batch == "requests"]
    results = [p for p in files if kinds[p].batch == "results"]
    paired: dict[Path, Path] = {}
    taken: set[Path] = set()
    for request in requests:
        candidates = [r for r in results if r not in taken and kinds[r].name == kinds[request].pair]
        if not candidates:
            continue
        best = max(candidates, key=lambda r: _common_prefix(r.name, request.name))
        paired[request] = best
        taken.add(best)
    out: list[tuple[Path, Path | None]] = []
    for path in files:
        if path in taken:
            continue
        out.append((path, paired.get(path)))
    return out


__all__ = [
    "MAX_REPORTED_ERRORS",
    "FileInspection",
    "InspectReport",
    "ObservedTotals",
    "inspect_file",
    "inspect_logs",
    "pair_batch_files",
]
