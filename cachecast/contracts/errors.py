"""Errors of the contract store, on the one error tree (``cachecast.core.errors``); each message is
one line a user can act on. An unknown contract and an unmigrated database are the tree's own
``UnknownContractError`` and ``NotMigratedError``."""

from __future__ import annotations

from collections.abc import Sequence

from cachecast.core import errors


class ContractConflictError(errors.ConflictError):
    """A new version would overlap an existing one; nothing was written."""


class ContractFormatError(errors.BadInputError):
    """A contract document is malformed; names the file, the entry and the field."""

    def __init__(self, file: str, entry: str, field: str, reason: str) -> None:
        self.file = file
        self.entry = entry
        self.field = field
        self.reason = reason
        where = f"{entry}: {field}" if entry and field else (entry or field or None)
        super().__init__(reason, location=errors.Location(source=file or None, field=where))


class ContractKeyError(ContractFormatError):
    """A version the store's rules refuse (``contracts.rules``, a decimal its columns cannot
    hold): the field is named as the version's own (``model``, ``aliases[0]``), so the API
    reports it as ``body.model``."""

    def __init__(
        self, message: str, *, field: str, problems: Sequence[errors.CachecastError] = ()
    ) -> None:
        self.file = ""
        self.entry = ""
        self.field = field
        self.reason = message
        errors.BadInputError.__init__(
            self, message, location=errors.Location(field=field), problems=problems
        )
