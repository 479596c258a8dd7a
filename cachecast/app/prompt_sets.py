"""A prompt set: the requests of one side of ``check`` or of ``suggest``'s input.

A side is a file (a prompt log or a layout) in the working tree or as it was at a git
revision, or a document given inline (a layout's text, or log records). Whatever it is, it
ends as records in memory (a layout expanded into its synthetic requests), which the
divergence finder and the suggestions read as text and :meth:`PromptSet.log` hands to the
one log reader (``app.logs``) for tokenization. Nothing is written to disk.

Errors name the side as its user knows it: the file (``prompts/agent.yaml@origin/main``) with
its line, or the inline document (``candidate.records`` with the record index, or whatever
name the front end gives it, such as ``body.candidate.records``) and the field.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

from cachecast.app.logs import LogInput, OnBadRecord, check_regular_file
from cachecast.errors import (
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

LAYOUT_SUFFIXES = (".yaml", ".yml", ".j2", ".jinja", ".jinja2")
LOG_SUFFIXES = (".jsonl", ".json", ".ndjson")


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
        if (self.ref is not None or self.values_path is not None) and self.path is None:
            raise ValueError("'ref' and 'values_path' go with a 'path'")
        return self


@dataclass(frozen=True, slots=True)
class PromptSet:
    """One side, ready to tokenize: its records and, for a layout, the parsed layout."""

    label: str  # what reports call it, e.g. 'prompts/agent.yaml@origin/main'
    source: str  # what errors about its records call it
    records: list[dict[str, Any]]  # one per request, in the log's (or arrival) order
    record_lines: list[int] | None  # for a log file: the line each record is on
    layout: Layout | None  # set when the side is a layout

    def log(self, on_bad_record: OnBadRecord) -> LogInput:
        """The records as the log the use cases read."""
        return LogInput(
            records=self.records,
            record_lines=self.record_lines,
            records_name=self.source,
            on_bad_record=on_bad_record,
        )

    def changed(self, records: list[dict[str, Any]]) -> PromptSet:
        """The same side with its requests changed (a suggestion applied)."""
        return replace(self, records=records, record_lines=None)


# ---------------------------------------------------------------------------------------------
# Reading files, from the working tree or a git revision.


class FileReader:
    """Reads text files from the working tree, or as they were at a git revision."""

    def __init__(self, ref: str | None = None) -> None:
        self.ref = ref

    def describe(self, path: Path) -> str:
        return f"{path}@{self.ref}" if self.ref else str(path)

    def read(self, path: Path) -> str:
        name = self.describe(path)
        data = self._read_bytes(path, name) if self.ref is None else self._git_show(path, name)
        return _text(data, name)

    @staticmethod
    def _read_bytes(path: Path, name: str) -> bytes:
        check_regular_file(path, name, "a prompt log or layout file")
        try:
            return path.read_bytes()
        except OSError as error:
            raise BadInputError(
                f"cannot read: {error.strerror}", location=Location(source=name)
            ) from None

    def _git_show(self, path: Path, name: str) -> bytes:
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
                capture_output=True,
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
        return completed.stdout


def _text(data: bytes, name: str) -> str:
    """The file's text; a binary file (a NUL byte, or not UTF-8) is named as such."""
    if b"\x00" in data:
        raise BadInputError(
            "is a binary file, not a prompt log or layout", location=Location(source=name)
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadInputError(
            f"is not UTF-8 text (byte {error.start}): a binary file, not a prompt log or layout",
            location=Location(source=name),
        ) from None


def looks_like_layout(path: Path, text: str) -> bool:
    if path.suffix in LAYOUT_SUFFIXES:
        return True
    if path.suffix in LOG_SUFFIXES:
        return False
    # No telling suffix: a layout names its format key near the top, a log starts with '{'.
    return not text.lstrip().startswith("{") and LAYOUT_FORMAT_KEY in text


def parse_log_text(text: str, name: str) -> tuple[list[dict[str, Any]], list[int]]:
    """The records of a JSONL text and the line of each; every bad line is reported."""
    records: list[dict[str, Any]] = []
    lines: list[int] = []
    errors: list[CachecastError] = []
    # Split on newlines only: a JSON string may hold U+2028 and other line separators.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            errors.append(LogRecordError(name, number, "<line>", f"invalid JSON: {error}"))
            continue
        if not isinstance(record, dict):
            errors.append(LogRecordError(name, number, "<line>", "expected a JSON object"))
            continue
        records.append(record)
        lines.append(number)
    if errors:
        raise input_errors(errors, "malformed log lines", location=Location(source=name))
    if not records:
        raise BadInputError("no requests in this log", location=Location(source=name))
    return records, lines


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
        return PromptSet(label, f"{inline}.records", list(source.records), None, None)
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
    text = reader.read(path)
    name = reader.describe(path)
    label = source.name or name
    if not looks_like_layout(path, text):
        records, lines = parse_log_text(text, name)
        return PromptSet(label, name, records, lines, None)
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
    return PromptSet(label, name, records, None, layout)
