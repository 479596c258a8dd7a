"""A prompt set: the requests of one side of ``check`` or of ``suggest``'s input.

A side is a file (a prompt log or a layout) in the working tree or as it was at a git
revision, or a document given inline (a layout's text, or log records). Whatever it is, its
records are read afresh on every pass (:class:`~cachecast.passes.log_input.RecordStream`): a log
file is checked line by line once when it is opened (every bad line reported) and parsed
again by each pass, so that no pass holds the log; a layout is expanded once into its
synthetic requests (bounded by ``max_layout_requests``); inline records are the request's
own. The divergence finder and the suggestions read the records as text and
:meth:`PromptSet.log` hands them to the one log reader (``passes.log_input``) for tokenization. A
file at a git revision is spooled to an anonymous temporary file, removed with the set.

Errors name the side as its user knows it: the file (``prompts/agent.yaml@origin/main``) with
its line, or the inline document (``candidate.records`` with the record index, or whatever
name the front end gives it, such as ``body.candidate.records``) and the field.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import weakref
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

from cachecast.core.errors import (
    BadInputError,
    CachecastError,
    ConfigurationError,
    LimitExceededError,
    Location,
    LogRecordError,
    input_errors,
)
from cachecast.layouts.expand import expand, iter_records
from cachecast.layouts.spec import LAYOUT_FORMAT_KEY, Layout, is_jinja_name, load_layout_text
from cachecast.logs.stream import bounded_lines
from cachecast.passes.log_input import LogInput, OnBadRecord, RecordStream, check_regular_file
from cachecast.passes.log_records import ConvertedLogRecords, is_own_format, is_recognised_log

LAYOUT_SUFFIXES = (".yaml", ".yml", ".j2", ".jinja", ".jinja2")
LOG_SUFFIXES = (".jsonl", ".json", ".ndjson")
SNIFF_BYTES = 4096  # read to tell a log from a layout when the suffix does not say

RecordsTransform = Callable[[Iterator[dict[str, Any]]], Iterator[dict[str, Any]]]


class MissingAtRevisionError(BadInputError):
    """The file does not exist at the git revision asked for (a file added since)."""


class PromptSource(BaseModel):
    """Where a prompt set comes from: exactly one of ``path`` (a log or layout file, read at
    ``ref`` when given, with ``values_path`` for a layout's sample values), ``layout`` (a
    layout's text, with ``values`` text; ``jinja`` for a whole-file Jinja2 template) or
    ``records`` (log records, one per request)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path | None = None
    ref: str | None = Field(default=None, description="read ``path`` at this git revision")
    values_path: Path | None = None
    layout: str | None = None
    values: str | None = None
    jinja: bool = False
    records: list[dict[str, Any]] | None = Field(default=None, min_length=1)
    format: str | None = Field(
        default=None,
        description="read ``path`` as this log format (default: detected); see format_names",
    )
    results: Path | None = Field(
        default=None, description="the results file of a batch requests file at ``path``"
    )
    name: str | None = Field(
        default=None,
        description="what reports call this side; default: the path (PATH@REF), or the"
        " side's role (baseline, candidate, input)",
    )
    inline_name: str | None = Field(
        default=None,
        description="what errors call an inline document (its layout is INLINE_NAME.layout,"
        " its records INLINE_NAME.records); default: the name",
    )

    @model_validator(mode="after")
    def _one_source(self) -> PromptSource:
        given = [self.path is not None, self.layout is not None, self.records is not None]
        if sum(given) != 1:
            raise ValueError("give exactly one of 'path', 'layout' or 'records'")
        if self.values is not None and self.layout is None:
            raise ValueError("'values' go with a 'layout'")
        if (
            self.ref is not None
            or self.values_path is not None
            or self.format is not None
            or self.results is not None
        ) and self.path is None:
            raise ValueError("'ref', 'values_path', 'format' and 'results' go with a 'path'")
        return self


class ListedRecords:
    """Records held in a list (inline records, a layout's expansion)."""

    def __init__(self, records: list[dict[str, Any]], lines: Sequence[int] | None = None):
        self.records = records
        self.lines = lines

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.records)

    def line_of(self, position: int) -> int | None:
        if self.lines is None or not 0 <= position < len(self.lines):
            return None
        return self.lines[position]


class LogFileRecords:
    """The records of a JSON-lines file, parsed afresh on every iteration. Opening reads the
    file once and refuses it (every bad line named) unless every non-blank line is a JSON
    object; only the line number of each record is kept. ``spooled``: the file is a
    temporary copy (a git revision's), removed when this object goes."""

    def __init__(self, path: Path, name: str, *, spooled: bool = False) -> None:
        self.path = path
        self.name = name
        if spooled:
            weakref.finalize(self, _remove, path)
        self.lines = _checked_lines(path, name)

    def __len__(self) -> int:
        return len(self.lines)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        with self.path.open("rb") as handle:
            # Split on newlines only: a JSON string may hold U+2028 and other separators.
            for _, line in bounded_lines(handle, self.name):
                if line.strip():
                    record: dict[str, Any] = orjson.loads(line)
                    yield record

    def line_of(self, position: int) -> int | None:
        return self.lines[position] if 0 <= position < len(self.lines) else None


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)


def _checked_lines(path: Path, name: str) -> array[int]:
    """The line number of every record of the JSON-lines file at ``path``; every bad line is
    reported together; a binary file (a NUL byte, or not UTF-8) is named as such."""
    lines: array[int] = array("q")
    errors: list[CachecastError] = []
    offset = 0
    with path.open("rb") as handle:
        for number, raw in bounded_lines(handle, name):
            _check_text(raw, offset, name)
            offset += len(raw)
            if not raw.strip():
                continue
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError as error:
                errors.append(LogRecordError(name, number, "<line>", f"invalid JSON: {error}"))
                continue
            if not isinstance(record, dict):
                errors.append(LogRecordError(name, number, "<line>", "expected a JSON object"))
                continue
            lines.append(number)
    if errors:
        raise input_errors(errors, "malformed log lines", location=Location(source=name))
    if not lines:
        raise BadInputError("no requests in this log", location=Location(source=name))
    return lines


def _check_text(data: bytes, offset: int, name: str) -> None:
    """``data`` (at byte ``offset`` of the file) is text: no NUL byte, valid UTF-8."""
    if b"\x00" in data:
        raise BadInputError(
            "is a binary file, not a prompt log or layout", location=Location(source=name)
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadInputError(
            f"is not UTF-8 text (byte {offset + error.start}): a binary file, not a prompt"
            " log or layout",
            location=Location(source=name),
        ) from None


class ChangedRecords:
    """Records of another stream with a change applied to each, on every iteration (a
    change maps each request to one request: the count is the original's)."""

    def __init__(self, original: RecordStream, transform: RecordsTransform) -> None:
        self.original = original
        self.transform = transform

    def __len__(self) -> int:
        return len(self.original)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.transform(iter(self.original))

    def line_of(self, position: int) -> int | None:
        # A change maps each request to one: errors about a changed request name the line
        # of the request it was made from.
        return self.original.line_of(position)


@dataclass(frozen=True, slots=True)
class PromptSet:
    """One side, ready to tokenize: its records (read afresh on every iteration) and, for a
    layout, the parsed layout."""

    label: str  # what reports call it, e.g. 'prompts/agent.yaml@origin/main'
    source: str  # what errors about its records call it
    records: RecordStream  # one per request, in the log's (or arrival) order
    layout: Layout | None  # set when the side is a layout

    def log(self, on_bad_record: OnBadRecord) -> LogInput:
        """The records as the log the use cases read."""
        return LogInput.of_stream(
            self.records, records_name=self.source, on_bad_record=on_bad_record
        )

    def changed(self, transform: RecordsTransform) -> PromptSet:
        """The same side with its requests changed (a suggestion applied)."""
        return replace(self, records=ChangedRecords(self.records, transform))


# ---------------------------------------------------------------------------------------------
# Reading files, from the working tree or a git revision.


class FileReader:
    """Reads text files from the working tree, or as they were at a git revision."""

    def __init__(self, ref: str | None = None) -> None:
        self.ref = ref

    def describe(self, path: Path) -> str:
        return f"{path}@{self.ref}" if self.ref else str(path)

    def read(self, path: Path) -> str:
        """The whole text of a (small) file: a layout, its values."""
        local, spooled = self.local(path)
        try:
            return _text(local, self.describe(path))
        finally:
            if spooled:
                _remove(local)

    def local(self, path: Path) -> tuple[Path, bool]:
        """A path this process can read the file at, and whether it is a temporary copy
        (a git revision's, spooled; the caller removes it)."""
        name = self.describe(path)
        if self.ref is None:
            check_regular_file(path, name, "a prompt log or layout file")
            return path, False
        handle, temporary = tempfile.mkstemp(prefix="cachecast-revision-")
        spool = Path(temporary)
        try:
            with os.fdopen(handle, "wb") as out:
                self._git_show(path, name, out)
        except BaseException:
            _remove(spool)
            raise
        return spool, True

    def _git_show(self, path: Path, name: str, out: IO[bytes]) -> None:
        where = Location(source=name)
        # 'REF:./NAME' is resolved against git's working directory, so run git where the file
        # lives; this keeps paths relative to the caller, as on the command line.
        directory = path.parent if str(path.parent) else Path(".")
        if not directory.is_dir():
            raise BadInputError(
                f"the folder {directory} does not exist in the working tree", location=where
            )
        try:
            completed = subprocess.run(
                ["git", "show", f"{self.ref}:./{path.name}"],
                cwd=directory,
                stdout=out,
                stderr=subprocess.PIPE,
                check=False,
                env={**os.environ, "LC_ALL": "C"},  # git's messages are matched below
            )
        except FileNotFoundError:
            raise ConfigurationError(
                "reading a file at a git revision needs git, which is not installed",
                location=Location(field="ref"),
            ) from None
        if completed.returncode != 0:
            message = completed.stderr.decode("utf-8", "replace").strip()
            if "does not exist in" in message or "exists on disk, but not in" in message:
                raise MissingAtRevisionError(f"does not exist at {self.ref}", location=where)
            raise BadInputError(f"git show failed: {message}", location=where)


def _text(path: Path, name: str) -> str:
    """The file's text; a binary file (a NUL byte, or not UTF-8) is named as such."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise BadInputError(
            f"cannot read: {error.strerror}", location=Location(source=name)
        ) from None
    _check_text(data, 0, name)
    return data.decode("utf-8")


def looks_like_log(path: Path, local: Path) -> bool:
    """Whether the file (called ``path``, read at ``local``) is a prompt log rather than a
    layout: by its suffix, else by its text (a log starts with '{', a layout names its
    format key near the top)."""
    if path.suffix in LAYOUT_SUFFIXES:
        # A YAML file is a layout, unless it is a recorded log (a VCR cassette).
        try:
            if LAYOUT_FORMAT_KEY.encode() in local.read_bytes():
                return False
        except OSError:
            return False
        return is_recognised_log(local)
    if path.suffix in LOG_SUFFIXES:
        return True
    try:
        with local.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
        if head.lstrip().startswith(b"{"):
            return True
        return LAYOUT_FORMAT_KEY.encode() not in local.read_bytes()
    except OSError:
        return True  # the reader names the failure


# ---------------------------------------------------------------------------------------------


def load_prompt_set(
    source: PromptSource,
    role: str,
    *,
    model: str | None = None,
    max_layout_requests: int | None = None,
) -> PromptSet:
    """Read ``source`` (named ``role`` where it has no name of its own) into a PromptSet.

    ``model`` is written into the requests a layout expands to (the model a check tokenizes
    self-hosted targets with); ``max_layout_requests`` bounds what a layout may expand to
    (checked before the expansion). A YAML file that is not a layout raises
    :class:`~cachecast.layouts.spec.NotALayoutError`; a file missing at the revision asked
    for, :class:`MissingAtRevisionError`.
    """
    if source.path is not None:
        return _load_file(source, source.path, role, model, max_layout_requests)
    inline = source.inline_name or source.name or role
    label = source.name or role
    if source.records is not None:
        return PromptSet(label, f"{inline}.records", ListedRecords(list(source.records)), None)
    assert source.layout is not None
    layout_name = f"{inline}.layout"
    layout = load_layout_text(
        source.layout,
        layout_name,
        values_text=source.values,
        values_name=f"{inline}.values",
        jinja=source.jinja,
    )
    return _expanded(layout, label, layout_name, model, max_layout_requests)


def _load_file(
    source: PromptSource,
    path: Path,
    role: str,
    model: str | None,
    max_layout_requests: int | None,
) -> PromptSet:
    reader = FileReader(source.ref)
    name = reader.describe(path)
    label = source.name or name
    local, spooled = reader.local(path)
    if source.format is not None or source.results is not None or looks_like_log(path, local):
        if source.format is None and source.results is None and is_own_format(local):
            # A spooled copy now belongs to the records, removed with them.
            return PromptSet(label, name, LogFileRecords(local, name, spooled=spooled), None)
        records = ConvertedLogRecords(
            local, name, format=source.format, results=source.results, spooled=spooled
        )
        return PromptSet(label, name, records, None)
    try:
        text = _text(local, name)
    finally:
        if spooled:
            _remove(local)
    values_text = None
    values_name = None
    if source.values_path is not None:
        values_text = reader.read(source.values_path)
        values_name = reader.describe(source.values_path)

    def read_relative(relative: str) -> str:
        try:
            return reader.read(path.parent / relative)
        except MissingAtRevisionError as error:  # the layout is there, its values are not
            raise BadInputError(error.message, location=error.location) from None

    layout = load_layout_text(
        text,
        name,
        values_text=values_text,
        values_name=values_name,
        read_relative=read_relative,
        jinja=is_jinja_name(path.name),
    )
    return _expanded(layout, label, name, model, max_layout_requests)


def _expanded(
    layout: Layout, label: str, name: str, model: str | None, max_requests: int | None
) -> PromptSet:
    arrival = layout.arrival
    if max_requests is not None and arrival.requests > max_requests:
        raise LimitExceededError(
            f"{arrival.sessions} sessions x {arrival.turns_per_session} turns ="
            f" {arrival.requests:,} synthetic requests; at most {max_requests:,} here",
            location=Location(source=name, field="arrival"),
        )
    records = list(iter_records(expand(layout, model=model), provider=layout.provider))
    return PromptSet(label, name, ListedRecords(records), layout)
