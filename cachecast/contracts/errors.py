"""Errors of the contract store; each message is one line a user can act on."""

from __future__ import annotations


class ContractStoreError(Exception):
    """Base of every error the contract store raises on purpose."""


class UnknownContractError(ContractStoreError, LookupError):
    """No contract for this provider/model (or none in force on the date asked)."""

    def __init__(self, message: str, close_matches: list[str] | None = None) -> None:
        self.close_matches: list[str] = list(close_matches or [])
        if self.close_matches:
            message = f"{message}; close matches: {', '.join(self.close_matches)}"
        super().__init__(message)


class ContractConflictError(ContractStoreError, ValueError):
    """A new version would overlap an existing one; nothing was written."""


class DatabaseNotMigratedError(ContractStoreError):
    """The database lacks the contract tables."""


class ContractFormatError(ContractStoreError, ValueError):
    """A contract document is malformed; names the file, the entry and the field."""

    def __init__(self, file: str, entry: str, field: str, reason: str) -> None:
        self.file = file
        self.entry = entry
        self.field = field
        self.reason = reason
        location = ", ".join(
            part for part in (file, entry, f"field {field!r}" if field else "") if part
        )
        super().__init__(f"{location}: {reason}")
