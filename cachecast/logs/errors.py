"""Errors of the log readers: one bad record (file, line, field, reason) and one file whose
shape no reader knows (which formats were tried, and why each did not fit)."""

from __future__ import annotations


class LogError(ValueError):
    """A malformed log line: file, 1-based line number, the field at fault and why.

    For whole-document formats (one JSON or YAML document) ``line`` is the record's line in
    the file where the reader knows it, else its 1-based position, and ``field`` spells the
    path inside the document (``observations[3].usageDetails.input``)."""

    def __init__(self, file: str, line: int, field: str, reason: str) -> None:
        super().__init__(f"{file}:{line}: {field}: {reason}")
        self.file = file
        self.line = line
        self.field = field
        self.reason = reason


class UnknownLogFormatError(ValueError):
    """No reader fits the file: the message lists each format tried and why it did not fit."""

    def __init__(self, file: str, tried: list[tuple[str, str]]) -> None:
        self.file = file
        self.tried = tried
        reasons = "; ".join(f"{name}: {why}" for name, why in tried)
        super().__init__(
            f"{file}: not a log format cachecast reads (give --format to force one). "
            f"Tried {len(tried)} formats: {reasons}"
        )


class LogFileError(ValueError):
    """The file as a whole cannot be read (empty, over the size bound, not text, a format
    given that does not exist, a results file that does not match its requests)."""

    def __init__(self, file: str, reason: str) -> None:
        super().__init__(f"{file}: {reason}")
        self.file = file
        self.reason = reason
