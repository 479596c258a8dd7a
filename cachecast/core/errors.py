"""The one error tree of cachecast: every error a user can cause or meet, and what it means.

Every error carries a structured :class:`Location` (source, line or record index, field) and
belongs to exactly one family below. The family fixes, once, the command-line exit code and
the HTTP status and problem type (``application/problem+json``, RFC 9457) the service
answers with; front ends never choose them case by case (docs/errors.md lists them).

====================  =========  ======  ========================  ==========================
family                exit code  HTTP    problem type              meaning
====================  =========  ======  ========================  ==========================
BadInputError         2          422     invalid-input             a log line, record, file,
                                                                   option or body field is wrong
LimitExceededError    2          422     limit-exceeded            a size bound was crossed
NotFoundError         2          404     not-found (or narrower)   an unknown contract, model,
                                                                   accelerator, job ...
ConflictError         2          409     conflict                  the change clashes with
                                                                   stored state; nothing written
ConfigurationError    2          500     misconfigured             settings, a missing optional
                                                                   extra, an output path
NotMigratedError      2          503     not-migrated              the database lacks tables
UnavailableError      2          503     unavailable               an engine or service we must
                                                                   reach did not answer
InternalError         3          500     internal-error            a bug: never the user's fault
====================  =========  ======  ========================  ==========================

Exit code 1 is not an error: it is ``check``'s "regression found" answer.

Messages never contain secrets: an error about a setting names the setting, not its value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

EXIT_OK = 0
EXIT_REGRESSION = 1  # ``check`` only: the candidate regresses; not an error
EXIT_BAD_INPUT = 2  # bad input or configuration (every CachecastError but InternalError)
EXIT_INTERNAL = 3  # a bug or an unforeseen failure

# An error that lists the problems it found (every bad line of a log, say) keeps at most this
# many; ``total_problems`` still counts them all, so an error never dwarfs its request.
MAX_LISTED_PROBLEMS = 100

PROBLEM_TYPE_BASE = "https://cachecast.dev/problems/"


@dataclass(frozen=True, slots=True)
class Location:
    """Where an error is: a source (file, ``request``, a setting or option), the 1-based line
    in it or the 0-based record index of inline records, and the field (a JSON path such as
    ``messages[2].content``, an option such as ``--at``)."""

    source: str | None = None
    line: int | None = None
    record: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        place = self.source or ""
        if self.line is not None:
            place = f"{place}:{self.line}" if place else f"line {self.line}"
        elif self.record is not None:
            place = f"{place}: record {self.record}" if place else f"record {self.record}"
        parts = [part for part in (place, self.field) if part]
        return ": ".join(parts)

    @property
    def is_empty(self) -> bool:
        return (
            self.source is None
            and self.line is None
            and self.record is None
            and (self.field is None)
        )


class CachecastError(Exception):
    """Base of every error cachecast raises on purpose. Subclass a family, never this.

    ``message`` says what is wrong and, where it helps, what to do; ``location`` says where.
    ``problems`` are further errors of the same cause (the bad lines of one log), at most
    :data:`MAX_LISTED_PROBLEMS`; ``total_problems`` counts all of them. ``close_matches``
    suggests what the user may have meant (unknown contracts and models).
    """

    exit_code: ClassVar[int] = EXIT_INTERNAL
    http_status: ClassVar[int] = 500
    problem_slug: ClassVar[str] = "internal-error"
    title: ClassVar[str] = "Internal error"

    def __init__(
        self,
        message: str,
        *,
        location: Location | None = None,
        problems: Sequence[CachecastError] = (),
        total_problems: int | None = None,
        close_matches: Sequence[str] = (),
    ) -> None:
        self.message = message
        self.location = location or Location()
        self.problems: list[CachecastError] = list(problems[:MAX_LISTED_PROBLEMS])
        self.total_problems = len(problems) if total_problems is None else total_problems
        self.close_matches = list(close_matches)
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """``location: message`` (one line, as the CLI prints it)."""
        where = str(self.location)
        text = f"{where}: {self.message}" if where else self.message
        return " ".join(text.split("\n"))

    @property
    def problem_type(self) -> str:
        return PROBLEM_TYPE_BASE + self.problem_slug

    def located(self, source: str, line: int) -> CachecastError:
        """The same error placed at ``line`` of ``source``, its field kept."""
        self.location = Location(source=source, line=line, field=self.location.field)
        self.args = (self.one_line(),)
        return self

    def named(self, source: str) -> CachecastError:
        """The same error with its source called ``source`` (a file known to the user by
        another name than its path: an upload, a temporary copy)."""
        self.location = replace(self.location, source=source)
        self.args = (self.one_line(),)
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        # Subclasses take constructor arguments of their own, so the default (calling the
        # class with ``args``) fails; rebuild from the state instead, so that an error
        # crosses a process boundary whole (a distributed worker's bad lines).
        return (_rebuilt, (type(self), self.args, self.__dict__))


def _rebuilt(
    kind: type[CachecastError], args: tuple[Any, ...], state: dict[str, Any]
) -> CachecastError:
    error = kind.__new__(kind)
    error.args = args
    error.__dict__.update(state)
    return error


class BadInputError(CachecastError):
    """Input that cannot be used as given: a log line, a record, a file, an option, a field."""

    exit_code = EXIT_BAD_INPUT
    http_status = 422
    problem_slug = "invalid-input"
    title = "Invalid input"


class LogRecordError(BadInputError):
    """One malformed log line or record: its file (or ``request``), line or record index,
    the field at fault and why (``reason``)."""

    title = "Malformed log record"

    def __init__(
        self,
        source: str,
        line: int | None,
        field: str,
        reason: str,
        *,
        record: int | None = None,
    ) -> None:
        self.reason = reason
        super().__init__(
            reason, location=Location(source=source, line=line, record=record, field=field)
        )

    # The names the log readers have always used.
    @property
    def file(self) -> str:
        return self.location.source or ""

    @property
    def line(self) -> int:
        return self.location.line or 0

    @property
    def field(self) -> str:
        return self.location.field or ""


class RecordFieldError(BadInputError):
    """A field of one record is missing or malformed. Raised where the record is read without
    knowing its file; the log reader turns it into a :class:`LogRecordError` with file and
    line."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(reason, location=Location(field=field))


class LimitExceededError(BadInputError):
    """A claimed or computed size is over its bound; checked before any work starts."""

    problem_slug = "limit-exceeded"
    title = "Limit exceeded"


class NotFoundError(CachecastError):
    """Something named does not exist: a contract, a model's tokenizer, a job."""

    exit_code = EXIT_BAD_INPUT
    http_status = 404
    problem_slug = "not-found"
    title = "Not found"


class UnknownModelError(NotFoundError):
    """No tokenizer is known for a model name. ``known_patterns``: the model name patterns
    that are known, where the raiser lists them (the tokenizer registry does)."""

    problem_slug = "unknown-model"
    title = "Unknown model"

    def __init__(
        self,
        message: str,
        *,
        location: Location | None = None,
        known_patterns: Sequence[str] = (),
    ) -> None:
        super().__init__(message, location=location)
        self.known_patterns = list(known_patterns)


class UnknownContractError(NotFoundError):
    """No contract for a provider/model, or none in force on the day asked."""

    problem_slug = "unknown-contract"
    title = "Unknown contract"

    @classmethod
    def listing(cls, message: str, close_matches: Sequence[str]) -> UnknownContractError:
        """The error with its close matches named at the end of the message too (the
        contract store's form: its callers may show the message alone)."""
        matches = list(close_matches)
        if matches:
            message = f"{message}; close matches: {', '.join(matches)}"
        return cls(message, close_matches=matches)


class ContractNotYetInForceError(UnknownContractError):
    """The day asked is before a contract's first version: the model had no published terms
    yet (it had not launched). The message names the first version's date; there are no
    close matches to offer, since the model named is the right one."""

    problem_slug = "contract-not-yet-in-force"
    title = "Contract not yet in force"


class ConflictError(CachecastError):
    """The change clashes with what is stored; nothing was written."""

    exit_code = EXIT_BAD_INPUT
    http_status = 409
    problem_slug = "conflict"
    title = "Conflict"


class ConfigurationError(CachecastError):
    """The setup is wrong: a setting, a missing optional extra, an unusable output path."""

    exit_code = EXIT_BAD_INPUT
    http_status = 500
    problem_slug = "misconfigured"
    title = "Misconfigured"


class MissingExtraError(ConfigurationError):
    """An optional dependency is not installed; names the extra that brings it."""

    def __init__(self, feature: str, extra: str, module: str) -> None:
        super().__init__(
            f"{feature} needs the optional package {module!r}: pip install 'cachecast[{extra}]'",
            location=Location(field=feature),
        )
        self.extra = extra


class NotMigratedError(ConfigurationError):
    """The database has not been migrated to the schema this version needs."""

    http_status = 503
    problem_slug = "not-migrated"
    title = "Database not migrated"


class UnavailableError(CachecastError):
    """A service we must reach (an inference engine, a Ray cluster) did not answer usably."""

    exit_code = EXIT_BAD_INPUT
    http_status = 503
    problem_slug = "unavailable"
    title = "Unavailable"


class InsufficientStorageError(CachecastError):
    """The machine we run on has no room left for work the input needs (the temporary copy
    of a compressed log): not the input's fault, and not a bug; free space or point
    ``TMPDIR`` elsewhere."""

    exit_code = EXIT_BAD_INPUT
    http_status = 507
    problem_slug = "insufficient-storage"
    title = "Insufficient storage"


class InternalError(CachecastError):
    """A bug: an invariant broke. Never the user's fault; exit 3, HTTP 500."""


def input_errors(
    errors: Sequence[CachecastError], summary: str, *, location: Location | None = None
) -> BadInputError:
    """One :class:`BadInputError` standing for several (the bad lines of a log): its message
    is the first problem plus how many more there are."""
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return BadInputError(
        f"{summary}: {first.one_line()}{more}",
        location=location,
        problems=errors,
    )
