"""cachecast.logs: the logs users already keep, read as canonical request records.

``open_log(path)`` detects a file's format (observability exports, agent transcripts, batch
files, recorded HTTP traffic, cachecast's own JSON lines) and streams its records in the
wrapper shape the tokenizer's reader takes (the "log" stage, before tokenization);
``pair_batch_files`` pairs batch requests with their results. docs/log-formats.md
describes each format and every usage convention.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cachecast.core.lazy import lazy_exports

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

# Each name is imported on first use (cachecast.core.lazy).
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


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())

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
