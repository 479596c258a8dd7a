"""cachecast.logs: the logs users already keep, read as canonical request records.

``open_log(path)`` detects a file's format (observability exports, agent transcripts, batch
files, recorded HTTP traffic, cachecast's own JSON lines) and streams its records in the
wrapper shape the tokenizer's reader takes (the "log" stage, before tokenization);
``pair_batch_files`` pairs batch requests with their results. docs/log-formats.md
describes each format and every usage convention.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cachecast.logs.errors import LogFileError, LogRecordError, UnknownLogFormatError
    from cachecast.logs.formats import (
        FORMATS,
        detect_format,
        format_names,
        open_log,
        pair_batch_files,
    )
    from cachecast.logs.stream import MAX_DOCUMENT_BYTES, MAX_YAML_BYTES, LogStream

# Each name is imported on first use (PEP 562), so that importing one submodule, or
# this package for one name, does not load every other (start-up time of commands).
_EXPORTS = {
    "LogFileError": "cachecast.logs.errors",
    "LogRecordError": "cachecast.logs.errors",
    "UnknownLogFormatError": "cachecast.logs.errors",
    "FORMATS": "cachecast.logs.formats",
    "detect_format": "cachecast.logs.formats",
    "format_names": "cachecast.logs.formats",
    "open_log": "cachecast.logs.formats",
    "pair_batch_files": "cachecast.logs.formats",
    "MAX_DOCUMENT_BYTES": "cachecast.logs.stream",
    "MAX_YAML_BYTES": "cachecast.logs.stream",
    "LogStream": "cachecast.logs.stream",
}


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        if not name.startswith("_"):  # a submodule not imported yet
            try:
                return importlib.import_module(f"{__name__}.{name}")
            except ModuleNotFoundError as error:
                if error.name != f"{__name__}.{name}":
                    raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "FORMATS",
    "MAX_DOCUMENT_BYTES",
    "MAX_YAML_BYTES",
    "LogFileError",
    "LogRecordError",
    "LogStream",
    "UnknownLogFormatError",
    "detect_format",
    "format_names",
    "open_log",
    "pair_batch_files",
]
