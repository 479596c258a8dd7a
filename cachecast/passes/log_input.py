"""The log a use case reads: files, or records given inline; one way to read either.

Every use case that takes a log takes a :class:`LogInput`: the CLI fills ``files``, the API
fills ``records`` (a JSON body) or ``files`` (an upload kept in a temporary file, named by
its upload name). :class:`LogReading` is one pass over it, tokenized as one model: requests in
replay order (files merged by timestamp, then placed within the reorder window), and every
line or record that could not be read.

What happens to a bad line is the request's ``on_bad_record``:

- ``skip``: it is listed in the report and the rest is used (the CLI's default);
- ``stop``: the first one is raised at once (``--strict``);
- ``reject``: everything is read, then all of them are raised together and nothing is
  priced (the API's default: a rejected request changes nothing).

A source that yields no request at all is bad input whatever the setting: a log nobody can
read must never come out as a $0 bill.
"""

from __future__ import annotations

import heapq
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from cachecast.core.errors import (
    BadInputError,
    CachecastError,
    LimitExceededError,
    Location,
    LogRecordError,
    input_errors,
)
from cachecast.core.gc_pacing import paced_collection
from cachecast.core.limits import check_count
from cachecast.logs.errors import BadRecords, LogFileError, bad_records_of
from cachecast.logs.formats import open_log
from cachecast.tokenizers import read_log, read_records

if TYPE_CHECKING:
    from cachecast.logs import LogStream
    from cachecast.tokenizers.calibration import Calibrator, RatioStats
    from cachecast.tokenizers.types import TokenizedRequest

# The replay order and the calibration are imported where a log is read: a request model
# that only names a LogInput (every use case's) does not load them (start-up time).

OnBadRecord = Literal["skip", "stop", "reject"]
_Merged = TypeVar("_Merged")
# The ``field`` of the error that reports a whole file as unreadable (no line).
UNREADABLE_FIELD = "file"
DEFAULT_RECORDS_NAME = "request"


class RecordStream(Protocol):
    """Records read afresh on every pass (``check``'s and ``suggest``'s prompt sets: a log
    file parsed line by line, or its requests after a change), so that no pass holds them
    all. The same records, in the same order, on every iteration."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[dict[str, Any]]: ...

    def line_of(self, position: int) -> int | None:
        """The line of the file the record at 0-based ``position`` is on (None: no file)."""
        ...


class LogFile(BaseModel):
    """A log file, and the name errors and reports call it by (default: its path)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path
    name: str | None = None
    format: str | None = Field(default=None, description="force a format (default: detected)")
    results: Path | None = Field(
        default=None, description="a batch's results file, joined to its requests"
    )
    results_name: str | None = None

    @property
    def display_name(self) -> str:
        return self.name or str(self.path)


class LogInput(BaseModel):
    """Where a use case reads its log from, and how it treats what it cannot read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    files: list[LogFile] = Field(default_factory=list)
    records: list[dict[str, Any]] | None = Field(
        default=None, description="records given inline, one per request"
    )
    record_lines: list[int] | None = Field(
        default=None, description="for inline records: the line each came from, if any"
    )
    records_name: str = DEFAULT_RECORDS_NAME
    default_model: str | None = Field(
        default=None, description="the model of records that name none"
    )
    default_provider: str | None = Field(
        default=None, description="the provider of records that name none"
    )
    on_bad_record: OnBadRecord = "skip"
    # Records streamed instead of held (``of_stream``): read like inline records, named
    # ``records_name`` with the line each is on. Not part of any request body.
    _stream: RecordStream | None = PrivateAttr(default=None)

    @classmethod
    def of_stream(cls, stream: RecordStream, **options: Any) -> LogInput:
        """A log of records read from ``stream`` on every pass, as inline records are."""
        log = cls(**options)
        log._stream = stream
        return log

    @property
    def inline(self) -> bool:
        """Whether the log is records (given inline, or streamed) rather than files."""
        return self.records is not None or self._stream is not None

    def _inline_records(self) -> RecordStream | list[dict[str, Any]]:
        if self._stream is not None:
            return self._stream
        return self.records or []

    @classmethod
    def of_paths(
        cls,
        paths: Sequence[Path | str],
        *,
        format: str | None = None,
        results: Path | None = None,
        **options: Any,
    ) -> LogInput:
        """The files at ``paths``. ``format`` forces one format for all; ``results`` is the
        results file of a batch requests file among them. Without either, a batch requests
        file and its results file given side by side are paired (``logs.pair_batch_files``)
        and read as one log."""
        files = expand_log_paths(paths)
        if format is not None or results is not None:
            return cls(
                files=[LogFile(path=path, format=format, results=results) for path in files],
                **options,
            )
        readable = [path for path in files if path.is_file()]
        from cachecast.logs import pair_batch_files

        paired = dict(pair_batch_files(readable))
        chosen = [
            LogFile(path=path, results=paired.get(path))
            for path in files
            if path in paired or path not in readable
        ]
        return cls(files=chosen, **options)

    @property
    def skips_unreadable_files(self) -> bool:
        """Whether a file no format reads is reported and the run goes on (several sources,
        bad lines skipped; docs/errors.md "Runs over many files"), rather than stopping it."""
        return len(self.source_names) > 1 and self.on_bad_record == "skip"

    @property
    def source_names(self) -> list[str]:
        names = [file.display_name for file in self.files]
        return names + ([self.records_name] if self.inline else [])

    def check_sources(self) -> None:
        """Refuse before any work what cannot be a log: a missing path, a directory, a
        device or pipe; no source at all."""
        if not self.files and not self.inline:
            raise BadInputError("no log given", location=Location(field="log"))
        if self.inline:
            records = len(self._inline_records())
            check_count("max_log_records", records, "records", what="a log of records")
        stored = 0
        for file in self.files:
            check_regular_file(file.path, file.display_name)
            stored += file.path.stat().st_size
        # The whole pass's bytes, before any is read (docs/limits.md: max_log_bytes).
        check_count("max_log_bytes", stored, "log", what="a log (all its files) of", unit="bytes")


# What a folder given as a log contributes: files of the kinds logs are kept in, compressed
# or not (docs/log-formats.md, "Files, folders, globs").
# (.json5: talkback's tapes; .zhar: mitmproxy's zlib-compressed HAR; .httprr: Go httprr
# traces, langchaingo's testdata folders of them; .rec: dd-trace-java's HTTP records, a
# folder of them per endpoint; .txtar: Go txtar archives of a request and its replies,
# coder/aibridge's fixtures folders of them.)
LOG_SUFFIXES = (
    ".jsonl",
    ".ndjson",
    ".json",
    ".json5",
    ".yaml",
    ".yml",
    ".har",
    ".zhar",
    ".httprr",
    ".rec",
    ".txtar",
    ".log",
    ".txt",
    ".jsonl.out",  # Bedrock batch inference output (its manifest.json.out is no log)
)
# Folders that hold no recording of their own: WireMock's response bodies, which the
# mappings beside them name (``cachecast.logs.wiremock``).
BODY_FOLDERS = ("__files",)
# What Claude Code keeps beside its transcripts under ~/.claude/projects that is no log
# (docs/clients.md, "Format variants"): large tool results and background shells' output as
# text, the project's session index, and each sub-agent's type beside its transcript.
CLIENT_SIDE_FOLDERS = ("tool-results", "bash-outputs")
CLIENT_SIDE_FILES = ("sessions-index.json",)
SUBAGENT_SIDE_SUFFIX = ".meta.json"  # ``subagents/agent-<id>.meta.json``
COMPRESSED_SUFFIXES = (".gz", ".gzip", ".zst", ".zstd", ".bz2", ".xz")
GLOB_CHARACTERS = "*?["


def expand_log_paths(paths: Sequence[Path | str]) -> list[Path]:
    """The files ``paths`` name: a folder stands for every log file under it (recursively,
    hidden entries skipped, in name order), a glob that names no file for its matches (in
    name order; ``**`` descends). A folder without any log file is refused, naming it."""
    import glob

    found: list[Path] = []
    for given in paths:
        path = Path(given)
        text = str(given)
        if not path.exists() and any(char in text for char in GLOB_CHARACTERS):
            matches = sorted(glob.glob(text, recursive=True))
            if matches:
                for match in map(Path, matches):
                    found.extend(_folder_logs(match) if match.is_dir() else [match])
                continue
        if path.is_dir():
            inside = _folder_logs(path)
            if not inside:
                raise BadInputError(
                    "a folder without log files (looked for "
                    + ", ".join(LOG_SUFFIXES)
                    + ", each optionally compressed)",
                    location=Location(source=text),
                )
            found.extend(inside)
        else:
            found.append(path)
    return found


def _folder_logs(folder: Path) -> list[Path]:
    logs: list[Path] = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).parts
        if any(part.startswith(".") for part in relative) or not path.is_file():
            continue
        if any(part in BODY_FOLDERS or part in CLIENT_SIDE_FOLDERS for part in relative[:-1]):
            continue
        name = path.name.lower()
        if name in CLIENT_SIDE_FILES or (
            name.endswith(SUBAGENT_SIDE_SUFFIX) and path.parent.name == "subagents"
        ):
            continue
        for suffix in COMPRESSED_SUFFIXES:
            name = name.removesuffix(suffix)
        if name.endswith(LOG_SUFFIXES):
            logs.append(path)
    return logs


def check_regular_file(path: Path, name: str, what: str = "a log file") -> None:
    """``path`` (called ``name``) exists and is a regular file: not a directory, device, pipe
    or socket, each named as such (``what`` says what it should have been)."""
    where = Location(source=name)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise BadInputError("no such file", location=where) from None
    except OSError as error:
        raise BadInputError(f"cannot read: {error.strerror}", location=where) from None
    if stat.S_ISDIR(mode):
        raise BadInputError(f"is a directory, not {what}", location=where)
    if not stat.S_ISREG(mode):
        raise BadInputError("is not a regular file (a device, pipe or socket)", location=where)


class LogReading:
    """One pass over a :class:`LogInput`, every request tokenized as ``tokenize_as`` (None:
    each record's own model). Iterate :meth:`requests`, then call :meth:`finish`."""

    def __init__(self, log: LogInput, tokenize_as: str | None) -> None:
        self.log = log
        self.tokenize_as = tokenize_as
        self.errors = BadRecords()
        self.requests_by_source: dict[str, int] = dict.fromkeys(log.source_names, 0)
        # Running totals for the per-log limits (docs/limits.md), over every source.
        self.records_read = 0
        self.tokens_read = 0
        # Approximate tokenizations are calibrated per cache (tokenizers.calibration, "Equal
        # content, equal length"): the sources that share the run's cache share one
        # calibrator (key None), a file that keeps a cache of its own (no timestamps, in a
        # run over several sources) has its own (key: its index), chosen as its first record
        # is read. Whoever reads the sources (one process, a distributed worker) reads those
        # that share one in the same order, so that they read the same everywhere.
        self.calibrators: dict[int | None, Calibrator] = {}
        self.own_cache: dict[int, bool] = {}  # per file, decided by its first record
        # The requests counted so far in the pass's files, shared by the streams it opens
        # (``LogStream.seen``: a Codex fork's copy of its parent's requests counted once).
        self.seen: set[str] = set()
        # Per file: its requests that another file of the pass counted (a Codex parent read
        # with its fork), so that a file holding only those is not refused as unreadable.
        self.counted_elsewhere: dict[str, int] = {}

    def _count(self, request: TokenizedRequest, bad_lines: int) -> None:
        """Count one request (and the bad lines met so far) against the per-log limits,
        before the next request is read."""
        self.records_read += 1
        self.tokens_read += request.input_tokens + request.output_tokens
        where = Location(source=request.source, line=request.line)
        checks = (
            # tokens a record carries, not claims (claims are checked as they are read)
            ("max_request_tokens", request.input_tokens, "a prompt of"),
            ("max_request_tokens", request.output_tokens, "an output of"),
            ("max_log_records", self.records_read + bad_lines, "a log of records"),
            ("max_log_tokens", self.tokens_read, "a log of tokens"),
        )
        try:
            for name, value, what in checks:
                check_count(name, value, None, what, location=where)
        except LimitExceededError as error:
            raise self.relocated(error) from None

    def calibrator(self, index: int | None = None) -> Calibrator:
        """The calibrator of the run's shared cache (``index`` None) or of the source at
        ``index`` that keeps a cache of its own."""
        found = self.calibrators.get(index)
        if found is None:
            from cachecast.tokenizers.calibration import Calibrator

            found = self.calibrators[index] = Calibrator(self.tokenize_as)
        return found

    @property
    def calibration(self) -> dict[str, RatioStats]:
        """What the calibration of every source read so far learned, per logged model."""
        from cachecast.tokenizers.calibration import merged

        return merged([calibrator.models for calibrator in self.calibrators.values()])

    def requests(
        self,
        prepare: Callable[[TokenizedRequest], TokenizedRequest] | None = None,
        *,
        cache_objects: bool = False,
    ) -> Iterator[TokenizedRequest]:
        """Every readable request of every source, in replay order. ``prepare`` is applied
        to each request before the reorder window holds it (``simulator.compact``: keys
        instead of token ids, so that the window costs little memory). Records that only
        create a cache object (Gemini ``cachedContents``: no inference call) come only with
        ``cache_objects`` (priced replays bill them; hit statistics would count them)."""
        streams: list[Iterator[TokenizedRequest]] = [
            self.source_requests(index) for index in range(len(self.log.source_names))
        ]
        if prepare is not None:
            streams = [map(prepare, stream) for stream in streams]
        # Requests that keep their ids (no prepare, or one that needs them) are held by the
        # window as their new tokens only (ordering.PromptPacker).
        from cachecast.simulator.ordering import (
            DEFAULT_REORDER_WINDOW,
            PromptPacker,
            in_timestamp_order,
        )

        packer = PromptPacker()
        streams = [map(packer.pack, stream) for stream in streams]
        arriving = merged_sources(streams, lambda request: request.timestamp)
        window = in_timestamp_order(arriving, DEFAULT_REORDER_WINDOW, weigh=packer.held_bytes)
        ordered = map(packer.unpack, window)
        if cache_objects:
            return ordered
        return (request for request in ordered if request.controls.creates is None)

    def source_requests(
        self, index: int, opened: LogStream | None = None, first_timestamp: float = 0.0
    ) -> Iterator[TokenizedRequest]:
        """The requests of one source (a file, or the inline records) in file order.

        ``opened``: the file's records from a stream opened by the caller (a part of the
        file: ``logs.ranges``); ``first_timestamp``: see ``tokenizers.read_log``. While it
        is read, the garbage collector runs rarely (``gc_pacing``: the pass allocates in
        bursts that reference counting frees)."""
        with paced_collection():
            yield from self._source_requests(index, opened, first_timestamp)

    def _source_requests(
        self, index: int, opened: LogStream | None, first_timestamp: float
    ) -> Iterator[TokenizedRequest]:
        log = self.log
        name = log.source_names[index]
        strict = log.on_bad_record == "stop"
        if index < len(log.files):
            yield from self._file_requests(index, name, opened, first_timestamp)
            return
        records = log._inline_records()
        found = BadRecords()
        try:
            for request in read_records(
                records,
                name,
                model=self.tokenize_as,
                default_model=log.default_model,
                default_provider=log.default_provider,
                strict=strict,
                errors=found,
                settled=True,  # a LogInput's records are complete and frozen with it
                calibrator=self.calibrator(),  # inline records share the run's cache
            ):
                self.requests_by_source[name] += 1
                self._count(request, found.total)
                yield request
        except LogRecordError as error:
            raise self._located(error) from None
        except LimitExceededError as error:
            raise self.relocated(error) from None
        finally:
            self.errors.merge(found, self._located)

    def _file_requests(
        self, index: int, name: str, opened: LogStream | None, first_timestamp: float
    ) -> Iterator[TokenizedRequest]:
        """One file's requests. In a run over several files (bad lines skipped), a file that
        cannot be read at all is reported (``field`` "file", no line) and the run goes on
        with the others (docs/errors.md, "Runs over many files"); a file whose first record
        has no timestamp keeps a cache of its own (its scope names the file), since nothing
        says when its requests ran next to the other files', and a calibration of its own."""
        log = self.log
        file = log.files[index]
        found = BadRecords()
        several = len(log.source_names) > 1
        tolerant = log.skips_unreadable_files

        def choose(first: float) -> Calibrator:
            # Decided by the file's first record, before any of its requests is calibrated.
            own = self.own_cache[index] = several and first == first_timestamp == 0.0
            return self.calibrator(index if own else None)

        own_scope: bool | None = None
        source: LogStream | None = opened
        try:
            if source is None:
                source = open_log(file.path, format=file.format, results=file.results, name=name)
                source.seen = self.seen
            stream = read_log(
                source,
                name=name,
                model=self.tokenize_as,
                default_model=log.default_model,
                default_provider=log.default_provider,
                strict=log.on_bad_record == "stop",
                errors=found,
                format=file.format,
                results=file.results,
                calibrator=choose,
                first_timestamp=first_timestamp,
            )
            for request in stream:
                if own_scope is None:
                    own_scope = self.own_cache.get(index, False)
                if own_scope:
                    request = replace(request, scope=f"{request.scope} [{name}]")
                self.requests_by_source[name] += 1
                self._count(request, found.total)
                yield request
        except LogFileError as error:
            if not tolerant:
                raise
            found.append(LogRecordError(name, None, UNREADABLE_FIELD, error.reason))
        finally:
            elsewhere = source.counted_elsewhere if source is not None else 0
            if elsewhere:
                self.counted_elsewhere[name] = elsewhere
            empty = (
                self.requests_by_source[name] == 0
                and not elsewhere
                and not any(e.field == UNREADABLE_FIELD for e in found)
            )
            # A file read without a bad record that gave no request says what it held
            # instead (calls to other endpoints, failed calls), so that "no readable record"
            # always comes with a reason (docs/log-formats.md, "Recorded HTTP").
            held = skipped_text(source) if empty and not found and source is not None else ""
            if empty and tolerant:
                first = f": {found[0].one_line()}" if found else (f": {held}" if held else "")
                found.append(
                    LogRecordError(name, None, UNREADABLE_FIELD, f"no readable record{first}")
                )
            elif held:
                found.append(LogRecordError(name, None, UNREADABLE_FIELD, held))
            self.errors.merge(found)

    def _located(self, error: LogRecordError) -> LogRecordError:
        """An inline record named by its index (and the line of the upload it came from,
        where known) rather than by its position."""
        line, position = self._record_place(error.line)
        return LogRecordError(
            self.log.records_name, line, error.field, error.reason, record=position
        )

    def _record_place(self, position_line: int) -> tuple[int | None, int]:
        """(upload line or None, 0-based index) of the inline record at 1-based position."""
        position = position_line - 1
        stream = self.log._stream
        if stream is not None:
            return (stream.line_of(position) if position >= 0 else None), position
        lines = self.log.record_lines
        line = lines[position] if lines is not None and 0 <= position < len(lines) else None
        return line, position

    def relocated(self, error: CachecastError) -> CachecastError:
        """``error``, raised about one request of this reading (its source and line), named
        the way the reader names bad records: an inline record by its index. Errors about
        files, or already located by record, are returned as they are."""
        where = error.location
        if (
            not self.log.inline
            or where.source != self.log.records_name
            or where.line is None
            or where.record is not None
        ):
            return error
        line, position = self._record_place(where.line)
        error.location = Location(
            source=where.source, line=line, record=position, field=where.field
        )
        error.args = (error.one_line(),)
        return error

    def finish(self) -> None:
        """After the pass: see :func:`check_reading`."""
        check_reading(
            self.log, self.errors, self.requests_by_source, elsewhere=self.counted_elsewhere
        )


def skipped_text(stream: LogStream) -> str:
    """What a log held that was not a billed request, by reason and count ("" if nothing):
    the reason given for a file that yielded no request and no bad record."""
    if not stream.skipped:
        return ""
    return "no request among " + ", ".join(
        f"{count:,} {why}" for why, count in stream.skipped.most_common()
    )


def merged_sources(
    streams: Sequence[Iterator[_Merged]], timestamp: Callable[[_Merged], float]
) -> Iterator[_Merged]:
    """The sources' requests merged by timestamp (ties: the earlier source first), each
    source read as far as the merge needs: the order in which the sources that share a
    calibration are read, here and on a distributed worker (``passes.ray.shipping``)."""
    if len(streams) == 1:
        return streams[0]
    return heapq.merge(*streams, key=timestamp)


def check_reading(
    log: LogInput,
    errors: Sequence[LogRecordError],
    requests_by_source: dict[str, int],
    reasons: Mapping[str, str] | None = None,
    *,
    elsewhere: Mapping[str, int] | None = None,
) -> None:
    """Refuse a source that yielded no readable request and, under ``reject``, any bad record
    at all. Every pass over a log reads the same lines, so this runs once per use case.
    ``reasons`` says, for a source read without a bad line, why it gave no request (an agent
    session that recorded none: ``sessions.reading.no_request_reason``). ``elsewhere``: per
    source, its requests that another source of the run counted (``LogReading.counted_elsewhere``:
    a Codex parent read with its fork), so that a source holding only those is not refused.
    In a run over several files with bad lines skipped, an unreadable file is reported (its
    error has ``field`` "file") and the others are used, as long as one of them is readable.
    """
    tolerant = (
        len(requests_by_source) > 1
        and log.on_bad_record == "skip"
        and any(requests_by_source.values())
    )
    for name, count in requests_by_source.items():
        if count == 0 and not tolerant and not (elsewhere or {}).get(name):
            own = [error for error in errors if error.location.source == name]
            counted = bad_records_of(errors, name)  # (every one: more than those kept)
            why = (reasons or {}).get(name)
            detail = f"; {own[0].one_line()}" if own else (f": {why}" if why else "")
            more = f" (and {counted - 1} more bad lines)" if counted > 1 else ""
            raise BadInputError(
                f"no readable record{detail}{more}",
                location=Location(source=name),
                problems=own,
            )
    if errors and log.on_bad_record == "reject":
        problems: Sequence[CachecastError] = errors
        raise input_errors(problems, "malformed log records")
