"""cachecast.logs: the logs users already keep, read as canonical request records.

``open_log(path)`` detects a file's format (observability exports, agent transcripts, batch
files, recorded HTTP traffic, cachecast's own JSON lines) and streams its records in the
wrapper shape the tokenizer's reader takes (the "log" stage, before tokenization);
``inspect_logs(paths)`` reports what a file holds. docs/log-formats.md describes each format
and every usage convention.
"""

from typing import TYPE_CHECKING, Any

# The tokenizer package first: its reader imports this package's modules, which import
# tokenizer modules in turn; initializing it before them keeps that cycle ordered.
import cachecast.tokenizers  # noqa: F401

# isort: split
from cachecast.logs.errors import LogError, LogFileError, UnknownLogFormatError
from cachecast.logs.formats import FORMATS, detect_format, format_names, open_log
from cachecast.logs.stream import MAX_DOCUMENT_BYTES, MAX_YAML_BYTES, LogStream

if TYPE_CHECKING:
    from cachecast.logs.inspect import FileInspection, InspectReport, inspect_logs

_LAZY = ("FileInspection", "InspectReport", "inspect_logs")


def __getattr__(name: str) -> Any:
    # inspect imports pydantic: loaded on first use, not by every log read. (The log
    # reader's speed depends on how many objects the process holds: each garbage
    # collection walks them all.)
    if name in _LAZY:
        from cachecast.logs import inspect

        return getattr(inspect, name)
    raise AttributeError(f"module 'cachecast.logs' has no attribute {name!r}")


__all__ = [
    "FORMATS",
    "MAX_DOCUMENT_BYTES",
    "MAX_YAML_BYTES",
    "FileInspection",
    "InspectReport",
    "LogError",
    "LogFileError",
    "LogStream",
    "UnknownLogFormatError",
    "detect_format",
    "format_names",
    "inspect_logs",
    "open_log",
]
