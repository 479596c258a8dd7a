"""A log file as a stream of canonical records: ``(line, record | LogRecordError)`` pairs.

A record is a dict in the wrapper shape ``cachecast.tokenizers.records`` reads (timestamp,
scope, session, provider, model, request_id, request = a provider body, usage or the
normalized ``observed``, ``prompt_complete``); a line the reader could not turn into one is a
:class:`LogRecordError` in its place, so errors stay in line order between the records.

Reading helpers shared by the format adapters live here: JSON lines (streamed; bytes go
straight to orjson) and whole documents (one JSON document per file, or one per line),
which are loaded whole under :data:`MAX_DOCUMENT_BYTES`, checked before parsing.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from cachecast.core.errors import LimitExceededError, Location, RecordFieldError
from cachecast.core.limits import current
from cachecast.logs.errors import LogFileError, LogRecordError
from cachecast.logs.sanitize import check_nesting, checked_size

Record = dict[str, Any] | LogRecordError
Item = tuple[int, Record]

# Whole-document formats (one OTLP/JSON document, a Langfuse export, a HAR file) are parsed
# at once; a file above this size is refused before it is read, so that an oversized export
# cannot take the machine's memory (orjson needs a few times the text's size). Export such
# logs as JSON lines (one document per line), which are streamed, or split them.
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024
# YAML (VCR cassettes) costs far more memory and time per byte than JSON.
MAX_YAML_BYTES = 64 * 1024 * 1024
# A large buffer: agent-log lines are long (whole conversations), and iterating lines over
# the default 8 KiB buffer costs several times the JSON parsing.
READ_BUFFER_BYTES = 1 << 20


class LogStream:
    """One log file read as canonical records, once.

    ``format`` names the detected (or forced) format and ``source`` the file. Iterating
    yields ``(line, record | LogRecordError)``; afterwards ``records`` and ``errors`` count what
    came out and ``skipped`` counts, by reason, the entries the format holds that are not
    billed requests (a failed batch request, a Claude Code line repeating a response, a
    recorded call to an endpoint that is not a model call). A stream with ``records == 0``
    after reading holds no readable request: callers stop there instead of billing nothing.
    """

    def __init__(
        self,
        path: Path,
        format: str,
        reader: Callable[[LogStream], Iterator[Item]],
        *,
        results: Path | None = None,
        counts_itself: bool = False,
        preloaded: Any = None,
    ) -> None:
        self.path = path
        self.source = str(path)
        self.format = format
        self.results = results
        self.records = 0
        self.errors = 0
        self.skipped: Counter[str] = Counter()
        self.preloaded = preloaded  # a document parsed while detecting the format
        # Set by documents(): the file is one document, so records are numbered by their
        # position in it rather than by line.
        self.whole_document = False
        # Set before reading by a caller that needs each request's usage, model, time and
        # session but not its prompt (agent sessions' reports): a reader may then leave the
        # prompt unbuilt, so that what it keeps per session stays a few numbers.
        self.usage_only = False
        # The keys of the requests counted in the other files of the same read, for a format
        # whose files copy each other's requests (a Codex fork starts with its parent's
        # token counts): a caller reading several files shares one set across their streams,
        # so that each request is counted once (``logs.codex.TokenCounts``).
        self.seen: set[str] = set()
        # Requests of this file passed over because another file of the read counted them
        # (``seen``): a file holding only those is no unreadable one.
        self.counted_elsewhere = 0
        self._reader = reader
        self._counts_itself = counts_itself
        self._started = False
        # (record, the record before it, leading request.input items the two share), told by
        # a reader just before it yields ``record`` (``continues``); and the last record the
        # sanitizer passed with its checked size.
        self._continuing: tuple[dict[str, Any], dict[str, Any], int] | None = None
        self._passed: tuple[dict[str, Any], int] | None = None

    def __iter__(self) -> Iterator[Item]:
        if self._started:
            raise RuntimeError(f"{self.source}: a log stream is read once")
        self._started = True
        return self._sanitized(self._reader(self))

    def _sanitized(self, items: Iterator[Item]) -> Iterator[Item]:
        """Every record through the one sanitizer (``logs.sanitize``): a record it refuses
        comes as its LogRecordError; a limit crossed stops the read, naming the line."""
        try:
            yield from self._checked_items(items)
        except LimitExceededError as exc:
            # A limit a format's reader met on its own (a claimed count): the error names
            # this file at least, where the reader did not place it at its line.
            if exc.location.source is None:
                raise exc.named(self.source) from None
            raise

    def _checked_items(self, items: Iterator[Item]) -> Iterator[Item]:
        counts = not self._counts_itself
        for line, record in items:
            if not isinstance(record, LogRecordError):
                record = self._checked(record, line)
                if not counts and isinstance(record, LogRecordError):
                    self.records -= 1  # the reader counted it as a record
                    self.errors += 1
            if counts:
                if isinstance(record, LogRecordError):
                    self.errors += 1
                else:
                    self.records += 1
            yield line, record

    def continues(self, record: dict[str, Any], earlier: dict[str, Any], items: int) -> None:
        """Say, just before yielding ``record``, that its ``request.input`` opens with the
        first ``items`` items of ``earlier``'s (the very objects): where ``earlier`` is the
        record the sanitizer passed last, only the rest of ``record`` is checked again (a
        Responses chain of N requests is then checked in N steps, not N histories)."""
        self._continuing = (record, earlier, items)

    def _checked(self, record: dict[str, Any], line: int) -> dict[str, Any] | LogRecordError:
        continuing, self._continuing = self._continuing, None
        passed, self._passed = self._passed, None
        taken = 0
        earlier_size = 0
        if (
            continuing is not None
            and passed is not None
            and continuing[0] is record
            and continuing[1] is passed[0]
        ):
            taken, earlier_size = continuing[2], passed[1]
        result = checked_size(record, self.source, line, taken, earlier_size)
        if isinstance(result, LogRecordError):
            return result
        self._passed = (record, result)
        return record

    def error(self, line: int, field: str, reason: str, file: str | None = None) -> LogRecordError:
        return LogRecordError(file or self.source, line, field, reason)

    def skip(self, reason: str, count: int = 1) -> None:
        self.skipped[reason] += count

    def take_preloaded(self) -> Any:
        document, self.preloaded = self.preloaded, None
        return document


def bounded_lines(
    handle: BinaryIO, source: str, first_line: int = 1, size: int | None = None
) -> Iterator[tuple[int, bytes]]:
    """The lines of ``handle`` (of its next ``size`` bytes, which end at a line start) with
    their numbers from ``first_line``. A line longer than ``max_line_bytes`` is refused
    (LimitExceededError naming the file and line) once that many bytes of it are read, never
    read whole: a 200 MB line costs no more memory than the limit."""
    limit = current().max_line_bytes
    number = first_line - 1
    while size is None or size > 0:
        text = handle.readline(limit + 1)
        if not text:
            return
        number += 1
        if len(text) > limit and not (len(text) == limit + 1 and text.endswith(b"\n")):
            raise LimitExceededError(
                f"a line longer than {limit:,} bytes is over the limit (setting max_line_bytes;"
                " docs/limits.md); refused before it is read whole",
                location=Location(source=source, line=number, field="<line>"),
            )
        if size is not None:
            size -= len(text)
        yield number, text


def json_lines(path: Path, source: str | None = None) -> Iterator[Item]:
    """The JSON objects of a JSONL file with their 1-based line numbers (blank lines
    skipped; a line that is not a JSON object comes as its LogRecordError)."""
    name = source or str(path)
    with open(path, "rb", buffering=READ_BUFFER_BYTES) as handle:
        for number, text in bounded_lines(handle, name):
            if text.isspace():
                continue
            try:
                record = orjson.loads(text)
            except orjson.JSONDecodeError as exc:
                yield number, LogRecordError(name, number, "<line>", f"invalid JSON: {exc}")
                continue
            if not isinstance(record, dict):
                yield number, LogRecordError(name, number, "<line>", "expected a JSON object")
                continue
            try:
                check_nesting(record)  # before an adapter (Claude Code, Codex, batch) reads it
            except RecordFieldError as exc:
                yield number, LogRecordError(name, number, exc.field, exc.reason)
                continue
            yield number, record


def check_size(path: Path, bound: int, what: str) -> None:
    size = os.path.getsize(path)
    if size > bound:
        raise LogFileError(
            str(path),
            f"{size:,} bytes, over the {bound // (1024 * 1024)} MiB bound for {what} read "
            "whole (setting max_document_bytes; docs/limits.md); export it as JSON lines (one "
            "document per line, streamed) or split it",
        )


def load_document(path: Path) -> Any:
    """One whole JSON document, refused above MAX_DOCUMENT_BYTES, and above the limit
    ``max_document_bytes`` in force, before it is read. Pretty-printed objects written one
    after another (:func:`concatenated_objects`) are read as the list of them."""
    check_size(path, min(MAX_DOCUMENT_BYTES, current().max_document_bytes), "a JSON document")
    data = path.read_bytes()
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        objects = concatenated_objects(data)
        if objects is not None:
            return objects
        raise LogFileError(str(path), f"one JSON document ({exc})") from None


# A top-level object of a pretty-printed dump opens at the start of a line; its inner lines
# are indented, and a raw newline never occurs inside a JSON string.
_OBJECT_START = re.compile(rb"\r?\n(?=\{)")


def concatenated_objects(data: bytes) -> list[dict[str, Any]] | None:
    """The objects of a file of pretty-printed JSON objects written one after another (each
    opening with ``{`` at the start of a line, blank lines or none between them), as a list;
    None where the file is not that. OpenTelemetry Python's ``ConsoleSpanExporter`` writes
    this: each span's ``to_json()`` (indented 4) and a newline (docs/log-formats.md,
    "Detection"); a program's stdout redirected to a file keeps it so."""
    parts = [part for part in _OBJECT_START.split(data) if part.strip()]
    if len(parts) < 2:
        return None
    objects: list[dict[str, Any]] = []
    for part in parts:
        try:
            value = orjson.loads(part)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(value, dict):
            return None
        objects.append(value)
    return objects


def documents(
    stream: LogStream,
    check: Callable[[Any], bool] | None = None,
    missing: tuple[str, str] = ("<document>", ""),
) -> Iterator[tuple[int, Any]]:
    """The documents of a whole-document format: the file as one document (line 1), or
    one document per line (JSON lines). A line that is not JSON, or (given ``check``) a
    document ``check`` refuses, comes as its LogRecordError (``missing``: field and reason)."""
    for line, document in _documents(stream):
        if not isinstance(document, LogRecordError):
            document = _nesting_checked(stream, line, document)
        if check is not None and not isinstance(document, LogRecordError) and not check(document):
            document = stream.error(line, *missing)
        yield line, document


def _nesting_checked(stream: LogStream, line: int, document: Any) -> Any:
    """The document, or the LogRecordError of its nesting (``logs.sanitize``), before any
    adapter reads it."""
    try:
        check_nesting(document)
    except RecordFieldError as exc:
        return stream.error(line, exc.field, exc.reason)
    return document


def each_record(
    stream: LogStream,
    parse: Callable[[int, Any], dict[str, Any] | None],
    unwrap: Callable[[Any], Any] = lambda document: document,
) -> Iterator[Item]:
    """Formats of one record per JSON line or a JSON list of records: ``parse(line,
    value)`` builds each record (None: not a request, counted by ``parse`` itself); its
    RecordFieldError becomes the record's LogRecordError. ``line`` is the JSON line, or the record's
    position in a whole document."""
    for line, document in documents(stream):
        if isinstance(document, LogRecordError):
            yield line, document
            continue
        document = unwrap(document)
        values = document if isinstance(document, list) else [document]
        for index, value in enumerate(values):
            at = index + 1 if stream.whole_document else line
            try:
                built = parse(at, value)
            except RecordFieldError as exc:
                yield at, stream.error(at, exc.field, exc.reason)
                continue
            if built is not None:
                yield at, built


class TimeOrdered:
    """The requests of one document, handed on in start-time order (the order the replay
    wants; exports list observations and spans grouped otherwise). Errors come first."""

    def __init__(self, stream: LogStream, not_a_request: str) -> None:
        self.stream = stream
        self.not_a_request = not_a_request
        self.found: list[tuple[float, int, Item]] = []

    def add(self, at: int, build: Callable[[], dict[str, Any] | None], prefix: str = "") -> None:
        position = len(self.found)
        try:
            built = build()
        except RecordFieldError as exc:
            field = exc.field
            if prefix and not field.startswith(prefix):
                field = f"{prefix}.{field}"
            error = self.stream.error(at, field, exc.reason)
            self.found.append((float("-inf"), position, (at, error)))
            return
        if built is None:
            self.stream.skip(self.not_a_request)
            return
        timestamp = built.get("timestamp")
        key = timestamp if isinstance(timestamp, float) else 0.0
        self.found.append((key, position, (at, built)))

    def __iter__(self) -> Iterator[Item]:
        self.found.sort(key=lambda entry: (entry[0], entry[1]))
        return (item for _, _, item in self.found)


def _documents(stream: LogStream) -> Iterator[tuple[int, Any]]:
    preloaded = stream.take_preloaded()
    if preloaded is not None:
        stream.whole_document = True
        yield 1, preloaded
        return
    if first_line_is_json(stream.path):
        yield from json_lines(stream.path, stream.source)
        return
    stream.whole_document = True
    yield 1, load_document(stream.path)


def first_line_is_json(path: Path) -> bool:
    with open(path, "rb", buffering=READ_BUFFER_BYTES) as handle:
        for _, text in bounded_lines(handle, str(path)):
            if text.isspace():
                continue
            try:
                return isinstance(orjson.loads(text), dict)
            except orjson.JSONDecodeError:
                return False
    return False
