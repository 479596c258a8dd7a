"""The child side of ``service.isolation``: one work process, serving one task at a time.

A spawned child starts from a fresh interpreter and imports this module only: the standard
library at the top. Its address space is capped (``RLIMIT_AS``, the ``request_memory_mb``
setting) before it imports anything, so a request that would need more gets a
``MemoryError`` (or, from native code, an abort) in this process, never in the API's. Then
it imports the use cases the service's heavy routes run (:data:`PRELOADED`: a second or
two, about 90 MB) and says ``("ready", None)``: the parent hands it no task before, so the
first request a fresh process serves does not spend its deadline on imports.

Protocol on the pipe: after ``ready``, the parent sends ``(function, args, database_url, limits,
reports_progress)``; the child answers one message, ``(kind, payload)``, after any number
of ``("progress", count)`` when ``reports_progress`` (a background job: the function gets a
``progress`` callable, whose counts are sent at most every ``PROGRESS_SECONDS``):

- ``("ok", result)``: the function's return value;
- ``("problem", (problem, headers))``: a foreseeable error (cachecast's error tree, or a
  problem the service raised), as the problem document the API answers with;
- ``("memory", None)``: the memory budget was hit; the child exits after sending it (its
  heap is in no state to be trusted with the next request);
- ``("crash", (error type, traceback text))``: a bug; the parent logs the traceback.

With ``database_url`` the function gets the contract store of that database as its last
argument (one store per database, kept for the life of the process).
"""

from __future__ import annotations

import importlib
import os
import resource
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

MEBIBYTE = 1024 * 1024

# Native libraries that start one thread per core reserve address space for each (stacks,
# allocator arenas): on a large machine that alone could eat the budget. The log work is
# single-threaded; these are read when such a library is first imported, after this.
_ONE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS")

PROGRESS_SECONDS = 0.2

# The modules of the functions the heavy routes hand over (service.routers), and what their
# answers are built with: imported at start-up, before the process says it is ready.
PRELOADED = (
    "cachecast.core.limits",
    "cachecast.contracts",
    "cachecast.service.problems",
    "cachecast.service.jobs",
    "cachecast.usecases.estimate",
    "cachecast.usecases.inspect",
    "cachecast.usecases.reconcile",
    "cachecast.usecases.simulate",
    "cachecast.usecases.compare",
    "cachecast.usecases.check",
    "cachecast.usecases.usage",
)

_stores: dict[str, Any] = {}


def serve(connection: Connection, memory_bytes: int) -> None:
    """The child's main loop: cap the address space, then answer tasks until the parent
    closes the pipe (it goes away, or kills this process)."""
    for name in _ONE_THREAD:
        os.environ.setdefault(name, "1")
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    _preload()
    if _send(connection, ("ready", None)) is None:
        return
    while True:
        try:
            task = connection.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        except MemoryError:  # the task alone is over the budget
            _send(connection, ("memory", None))
            return
        except Exception as error:  # a task that does not unpickle here (a bug)
            if _send(connection, _crash(error)) is None:
                return
            continue
        if _send(connection, _answer(task, connection)) in (None, "memory"):
            return


def _preload() -> None:
    """Import :data:`PRELOADED`. One that fails here (a budget too small for it) is left to
    fail again, answered, in the task that needs it."""
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except Exception:  # MemoryError included
            continue


class _Progress:
    """A job's progress callback: counts summed, sent to the parent now and then."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.pending = 0
        self.sent_at = time.monotonic()

    def __call__(self, count: int) -> None:
        self.pending += count
        if time.monotonic() - self.sent_at >= PROGRESS_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.connection.send(("progress", self.pending))
            self.pending = 0
        self.sent_at = time.monotonic()


Task = tuple[Callable[..., Any], tuple[Any, ...], str | None, Any, bool]


def _answer(task: Task, connection: Connection) -> tuple[str, Any]:
    function, args, database_url, limits, reports_progress = task
    try:
        from cachecast.core.limits import limits_in_force
        from cachecast.tokenizers import local_tokenizer_directories

        # As the API's middlewares do for a request: its budgets, and no tokenizer
        # directory of this machine may be named by a client.
        with limits_in_force(limits), local_tokenizer_directories(False):
            if database_url is not None:
                args = (*args, _store(database_url))
            if not reports_progress:
                return ("ok", function(*args))
            progress = _Progress(connection)
            result = function(*args, progress=progress)
            progress.flush()
            return ("ok", result)
    except MemoryError:
        return ("memory", None)
    except Exception as error:  # every failure goes back to the parent as an answer
        return _failure(error)


def _store(database_url: str) -> Any:
    store = _stores.get(database_url)
    if store is None:
        from cachecast.contracts import ContractStore

        if len(_stores) >= 8:  # a test run opens many databases; a server one
            _stores.clear()
        store = _stores[database_url] = ContractStore(database_url)
    return store


def _failure(error: Exception) -> tuple[str, Any]:
    from cachecast.core.errors import CachecastError
    from cachecast.service.jobs import JobInputError
    from cachecast.service.problems import ProblemError, problem_of

    if isinstance(error, JobInputError):
        return ("problem", (error.problem, {}))
    if isinstance(error, ProblemError):
        problem = error.to_problem(None).model_dump(mode="json", exclude_none=True)
        return ("problem", (problem, dict(error.headers or {})))
    if isinstance(error, CachecastError):
        return ("problem", (problem_of(error).model_dump(mode="json", exclude_none=True), {}))
    return _crash(error)


def _crash(error: Exception) -> tuple[str, Any]:
    return ("crash", (type(error).__name__, "".join(traceback.format_exception(error))))


def _send(connection: Connection, message: tuple[str, Any]) -> str | None:
    """Send the answer: the kind of answer sent (a result too large to pickle within the
    budget is the budget's answer, one that does not pickle a bug's), None when the parent
    is gone."""
    try:
        connection.send(message)
        return message[0]
    except OSError:
        return None
    except MemoryError:
        message = ("memory", None)
    except Exception as error:  # a result that does not pickle
        message = _crash(error)
    try:
        connection.send(message)
    except (OSError, MemoryError):
        return None
    return message[0]
