"""The contract store's answers, remembered between runs of a command that reads sessions.

``cachecast usage`` asks the store one question per (provider, model, day) of the sessions
it reads: which version was in force. Opening the store costs more than reading a day of
sessions (SQLAlchemy and the migration check load in about half a second), and the answers
do not change while the database does not. :class:`RememberedAnswers` keeps each answer (the
terms, or why there are none) in a small JSON file in the user's cache folder, valid while
the SQLite database file (and its write-ahead log) has the same size and modification time,
under the same cachecast version, migrations and contract modules (a rule edited in an
editable install changes no version number); on any question it has no answer to, it
opens the store (``open_store``, which checks the database as every read command does),
asks, and remembers. Any other database (PostgreSQL, a URL with options) is asked every
time. The store stays the one source of contracts: nothing here resolves a name or a date.
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson
import platformdirs

from cachecast.contracts.model import ContractTerms
from cachecast.contracts.served import ServedContract, served_contract
from cachecast.core.db_location import migrations_dir, plain_sqlite_file
from cachecast.core.errors import UnknownContractError

if TYPE_CHECKING:
    from cachecast.contracts.store import ContractStore

MAX_ANSWERS = 100_000  # a file past this many is started afresh


class ContractLookup(Protocol):
    """What a report needs of the store: the version in force on a day, and the one a
    logged request that served on a day is priced under (``contracts.served``)."""

    def as_of(self, provider: str, model: str, day: dt.date) -> ContractTerms: ...

    def served(self, provider: str, model: str, day: dt.date, today: dt.date) -> ServedContract: ...


def _identity(database: Path) -> dict[str, Any] | None:
    from cachecast import __version__

    try:
        stat = database.stat()
    except OSError:
        return None
    identity: dict[str, Any] = {
        "database": str(database.resolve()),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "version": __version__,
        "migrations": _migrations(),
        "code": _code(),
    }
    # Writes in WAL mode land in the -wal file first (reads leave it, and -shm, as they are).
    wal = Path(f"{database}-wal")
    if wal.exists() and wal.stat().st_size:
        identity["wal"] = [wal.stat().st_size, wal.stat().st_mtime_ns]
    return identity


def _code() -> list[list[Any]]:
    """Size and modification time of each module and packaged data file that decides an
    answer: a rule changed in an editable install (same version number) must not be answered
    from the old rule, nor a served model's launch or reason read from an older
    ``data/lifecycle.json``."""
    folder = Path(__file__).parent
    paths = [*sorted(folder.glob("*.py")), *sorted((folder / "data").glob("*.json"))]
    stats = ((path.name, path.stat()) for path in paths)
    return [[name, stat.st_size, stat.st_mtime_ns] for name, stat in stats]


def _migrations() -> list[str]:
    return sorted(path.name for path in (migrations_dir() / "versions").glob("*.py"))


class RememberedAnswers:
    """The store's answers for ``url``'s database, remembered (module docstring)."""

    def __init__(
        self,
        url: str,
        open_store: Callable[[], ContractStore],
        cache_dir: Path | None = None,
    ) -> None:
        self._open_store = open_store
        self._store: ContractStore | None = None
        database = plain_sqlite_file(url)
        self._identity = _identity(database) if database is not None else None
        folder = cache_dir or Path(platformdirs.user_cache_dir("cachecast", appauthor=False))
        self._file = folder / "contract-answers.json"
        self._database = database
        self._answers: dict[str, Any] = {}
        self._changed = False
        if self._identity is not None:
            self._load()

    def _load(self) -> None:
        try:
            data = orjson.loads(self._file.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return
        if isinstance(data, dict) and data.get("identity") == self._identity:
            answers = data.get("answers")
            if isinstance(answers, dict):
                self._answers = answers

    def as_of(self, provider: str, model: str, day: dt.date) -> ContractTerms:
        key = f"{provider}\t{model}\t{day.isoformat()}"
        found = self._answer(key, lambda store: ServedContract(store.as_of(provider, model, day)))
        return found.terms

    def served(self, provider: str, model: str, day: dt.date, today: dt.date) -> ServedContract:
        key = f"served\t{provider}\t{model}\t{day.isoformat()}\t{today.isoformat()}"
        return self._answer(key, lambda store: served_contract(store, provider, model, day, today))

    def _answer(self, key: str, ask: Callable[[ContractStore], ServedContract]) -> ServedContract:
        """The remembered answer for ``key``, else the store's (``ask``), remembered: the
        terms and note, or the error's message."""
        known = self._answers.get(key)
        if isinstance(known, dict):
            if "terms" in known:
                note = known.get("note")
                return ServedContract(
                    ContractTerms.model_validate(known["terms"]),
                    note if isinstance(note, str) else None,
                )
            if isinstance(known.get("error"), str):
                raise UnknownContractError(known["error"])
        if self._store is None:
            self._store = self._open_store()
        try:
            found = ask(self._store)
        except UnknownContractError as error:
            self._remember(key, {"error": error.message})
            raise
        self._remember(key, {"terms": found.terms.model_dump(mode="json"), "note": found.note})
        return found

    def _remember(self, key: str, answer: dict[str, Any]) -> None:
        if self._identity is None:
            return
        if len(self._answers) >= MAX_ANSWERS:
            self._answers = {}
        self._answers[key] = answer
        self._changed = True

    def save(self) -> None:
        """Write the answers (atomically; a cache folder that cannot be written is no error:
        the next run asks the store again)."""
        if not self._changed or self._database is None:
            return
        # The database as the store left it (opening it may have set up its journal).
        identity = _identity(self._database)
        if identity is None:
            return
        payload = orjson.dumps({"identity": identity, "answers": self._answers})
        try:
            self._file.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                dir=self._file.parent, prefix=".contract-answers-", delete=False
            ) as handle:
                handle.write(payload)
            os.replace(handle.name, self._file)
        except OSError:
            return
        self._changed = False
