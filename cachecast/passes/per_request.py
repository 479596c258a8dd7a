"""``--per-request FILE``: every billed request of every target as one table row.

Written with pandas in chunks so that memory stays bounded: CSV by appending each chunk,
Parquet as one row group per chunk. Money columns are exact decimal strings (a float column
would round them). The path is checked before any work starts (:func:`check_table_path`), and
a run that fails leaves no half-written table behind.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cachecast.core.errors import ConfigurationError, Location
from cachecast.simulator.pricing import PerRequestRow

PER_REQUEST_FORMATS = (".csv", ".parquet")
COLUMN_TYPES: dict[str, str]
_COLUMN_TYPES: dict[str, str] = {
    "target": "string",
    "source": "string",
    "line": "int64",
    "request_id": "string",
    "timestamp": "float64",
    "scope": "string",
    "exact_tokens": "bool",
    "input_tokens": "int64",
    "cache_read_tokens": "int64",
    "cache_write_tokens": "int64",
    "cache_write_by_ttl": "string",
    "uncached_input_tokens": "int64",
    "output_tokens": "int64",
    "cost_input": "string",
    "cost_cache_write": "string",
    "cost_cache_read": "string",
    "cost_output": "string",
    "cost_storage": "string",
    "cost_total": "string",
    "cost_without_cache": "string",
    "observed_cache_read_tokens": "Int64",
    "observed_cache_write_tokens": "Int64",
    "observed_cost": "string",
    "miss_causes": "string",
    "miss_details": "string",
}
COLUMN_TYPES = _COLUMN_TYPES


def check_table_path(path: Path, field: str = "per_request") -> None:
    """A table can be written at ``path``: a known suffix, an existing writable folder, and
    not a folder itself."""
    check_suffixed_path(path, PER_REQUEST_FORMATS, field, "a .csv or .parquet")


def check_suffixed_path(path: Path, suffixes: tuple[str, ...], field: str, kind: str) -> None:
    """:func:`check_output_path`, and the name ends in one of ``suffixes`` (``kind`` names
    them)."""
    suffix = path.suffix.lower()
    if suffix not in suffixes:
        raise ConfigurationError(
            f"use {kind} file name, not {suffix or 'no suffix'!r}",
            location=Location(source=str(path), field=field),
        )
    check_output_path(path, field)


def check_output_path(path: Path, field: str) -> None:
    """A file can be written at ``path`` (an output the user named with ``field``): an
    existing writable folder, and not a folder itself. Checked before the work starts."""
    where = Location(source=str(path), field=field)
    if path.is_dir():
        raise ConfigurationError("is a directory", location=where)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ConfigurationError(f"the folder {folder} does not exist", location=where)
    if not os.access(folder, os.W_OK):
        raise ConfigurationError(f"the folder {folder} is not writable", location=where)
    if path.exists() and not os.access(path, os.W_OK):
        raise ConfigurationError("the file exists and is not writable", location=where)


class PerRequestTable:
    """Writes billed requests with pandas in chunks, so memory stays bounded. ``columns``:
    the column types (default: estimate's columns); a row is what ``record`` makes of it
    (default: ``PerRequestRow.as_record``)."""

    def __init__(
        self,
        path: Path,
        chunk_rows: int = 20_000,
        *,
        columns: dict[str, str] | None = None,
        record: Callable[[Any], dict[str, Any]] | None = None,
    ) -> None:
        check_table_path(path)
        self.path = path
        self._columns = columns or _COLUMN_TYPES
        self._record = record or (lambda row: row.as_record())
        self.rows_written = 0
        self._parquet = path.suffix.lower() == ".parquet"
        self._chunk_rows = chunk_rows
        self._buffer: list[dict[str, Any]] = []
        self._writer: Any = None
        path.unlink(missing_ok=True)

    def __call__(self, row: PerRequestRow | Any) -> None:
        self._buffer.append(self._record(row))
        if len(self._buffer) >= self._chunk_rows:
            self._flush()

    def _flush(self) -> None:
        import pandas as pd

        frame = pd.DataFrame(self._buffer, columns=list(self._columns)).astype(self._columns)
        self._buffer = []
        if self._parquet:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            if self._writer is None:
                self._writer = pq.ParquetWriter(self.path, table.schema)
            self._writer.write_table(table)
        else:
            frame.to_csv(self.path, mode="a", header=self.rows_written == 0, index=False)
        self.rows_written += len(frame)

    def close(self) -> None:
        if self._buffer or self.rows_written == 0:
            self._flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def discard(self) -> None:
        """Close and remove the file (the run that wrote it failed)."""
        self._buffer = []
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self.path.unlink(missing_ok=True)
