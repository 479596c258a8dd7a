"""cachecast.logs: the logs users already keep, read as canonical request records.

``open_log(path)`` detects a file's format (observability exports, agent transcripts, batch
files, recorded HTTP traffic, cachecast's own JSON lines) and streams its records in the
wrapper shape the tokenizer's reader takes (the "log" stage, before tokenization);
``pair_batch_files`` pairs batch requests with their results. docs/log-formats.md
describes each format and every usage convention.
"""

from cachecast.logs.errors import LogFileError, LogRecordError, UnknownLogFormatError
from cachecast.logs.formats import FORMATS, detect_format, format_names, open_log, pair_batch_files
from cachecast.logs.stream import MAX_DOCUMENT_BYTES, MAX_YAML_BYTES, LogStream

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
