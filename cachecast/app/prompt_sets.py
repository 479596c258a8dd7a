"""Read one side of a check (a prompt log or a layout) from the working tree or a git revision.

Whatever the input, it ends as a JSONL log on disk (so the tokenizers' one reading path
applies to both sides) plus the raw records, which the divergence finder and the
suggestions read as text.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachecast.layouts.expand import SyntheticRequest, expand, iter_records, write_log
from cachecast.layouts.spec import (
    JINJA_SUFFIXES,
    LAYOUT_FORMAT_KEY,
    Layout,
    LayoutError,
    load_layout_text,
)

LAYOUT_SUFFIXES = (".yaml", ".yml", *JINJA_SUFFIXES)


class InputError(ValueError):
    """A side of the check that cannot be read (missing file, unknown revision, bad layout)."""


class MissingAtRevision(InputError):
    """The file does not exist at the requested git revision (a file added since)."""


@dataclass(frozen=True, slots=True)
class PromptSet:
    """One side of a check, ready to tokenize."""

    label: str  # e.g. 'prompts/agent.yaml@origin/main'
    log_path: Path  # JSONL the tokenizers read
    records: list[dict[str, Any]]  # the records of that log, as dicts
    layout: Layout | None  # set when the input was a layout
    synthetic: list[SyntheticRequest] | None

    @property
    def kind(self) -> str:
        return "layout" if self.layout is not None else "log"


class FileReader:
    """Reads files from the working tree, or as they were at a git revision."""

    def __init__(self, ref: str | None = None) -> None:
        self.ref = ref

    def read(self, path: Path) -> str:
        if self.ref is None:
            try:
                return path.read_text(encoding="utf-8")
            except OSError as error:
                raise InputError(f"{path}: cannot read: {error.strerror or error}") from error
        # 'REF:./NAME' is resolved against git's working directory, so run git where the file
        # lives; this keeps paths relative to the caller, as on the command line.
        directory = path.parent if str(path.parent) else Path(".")
        if not directory.is_dir():
            raise InputError(f"{path}: directory {directory} does not exist in the working tree")
        completed = subprocess.run(
            ["git", "show", f"{self.ref}:./{path.name}"],
            cwd=directory,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "LC_ALL": "C"},  # git's messages are matched below
        )
        if completed.returncode != 0:
            stderr = completed.stderr
            if "does not exist in" in stderr or "exists on disk, but not in" in stderr:
                raise MissingAtRevision(f"{path} does not exist at {self.ref}")
            raise InputError(f"{path}@{self.ref}: git show failed: {completed.stderr.strip()}")
        return completed.stdout

    def describe(self, path: Path) -> str:
        return f"{path}@{self.ref}" if self.ref else str(path)


def looks_like_layout(path: Path, text: str) -> bool:
    if path.suffix in LAYOUT_SUFFIXES:
        return True
    if path.suffix in (".jsonl", ".json", ".ndjson"):
        return False
    # No telling suffix: a layout names its format key near the top, a log starts with '{'.
    return not text.lstrip().startswith("{") and LAYOUT_FORMAT_KEY in text


def load_prompt_set(
    path: Path,
    workdir: Path,
    *,
    ref: str | None = None,
    values: Path | None = None,
    provider: str | None = None,
    model: str | None = None,
    name: str = "side",
) -> PromptSet:
    """Read ``path`` (at ``ref`` when given) into a PromptSet whose log is under ``workdir``."""
    reader = FileReader(ref)
    text = reader.read(path)
    label = reader.describe(path)
    workdir.mkdir(parents=True, exist_ok=True)
    if looks_like_layout(path, text):
        values_text = reader.read(values) if values is not None else None

        def read_relative(relative: str) -> str:
            try:
                return reader.read(path.parent / relative)
            except MissingAtRevision as error:  # the layout is there, its values are not
                raise InputError(str(error)) from error

        layout = load_layout_text(text, label, values_text=values_text, read_relative=read_relative)
        layout_provider = provider or layout.provider
        synthetic = expand(layout, model=model)
        log_path = write_log(synthetic, workdir / f"{name}.jsonl", provider=layout_provider)
        records = list(iter_records(synthetic, provider=layout_provider))
        return PromptSet(label, log_path, records, layout, synthetic)

    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(f"{label}: line {number}: not JSON: {error.msg}") from error
        if not isinstance(record, dict):
            raise InputError(f"{label}: line {number}: a record must be a JSON object")
        records.append(record)
    if not records:
        raise InputError(f"{label}: no requests in this log")
    if ref is None:
        log_path = path
    else:
        log_path = workdir / f"{name}.jsonl"
        log_path.write_text(text, encoding="utf-8")
    return PromptSet(label, log_path, records, None, None)


__all__ = ["FileReader", "InputError", "LayoutError", "PromptSet", "load_prompt_set"]
