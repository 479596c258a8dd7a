"""Log work out of the API's process: a small pool of work processes with a memory limit and
a deadline, stopped when the client goes away (docs/limits.md, "Isolation").

A heavy request (an estimate, inspection, reconciliation, simulation, comparison, layout
check or usage report) reads its body in the API process, builds the use case's typed
request there, and hands it to :func:`run_isolated`, which runs the use case (the same
library function the CLI calls) in a work process and returns its typed report. The API
process only waits: its event loop keeps answering ``/healthz`` and everything else
whatever a request's log makes the work process do.

Each work process (``service.work_process``, started with ``spawn``) has its address space
capped at ``request_memory_mb``. A request that needs more gets 413 ``memory-budget``
naming the part of the request that was being worked on; one that runs past
``request_deadline_seconds`` (waiting for a free work process included) gets 408
``deadline-exceeded``; one whose client disconnects is stopped at once. In all three the
work process is killed (or has exited) and a fresh one replaces it, so the next request
starts clean. ``request_workers`` processes at most run per API process; a request waits
for a free one.

Pools are shared by every app of one process with the same settings (tests build many
apps; a server builds one), so their processes are started once, on first use.
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

import anyio
from fastapi import Request

from cachecast.core.limits import current as current_limits
from cachecast.service import work_process
from cachecast.service.jobs import JobInputError
from cachecast.service.problems import FieldError, Problem, ProblemError

logger = logging.getLogger(__name__)

Result = TypeVar("Result")

# How often a waiting request looks at its client and its deadline.
_TICK_SECONDS = 0.1
# The answers after which a work process serves the next task (after "memory" it exits).
_KEEPING = ("ok", "problem", "crash")
# How long a new work process may take to import what its tasks need (a second or two).
_START_SECONDS = 60.0


class WorkProblem(ProblemError):
    """A problem document answered by the work process, passed on as it is."""

    def __init__(self, problem: dict[str, Any], headers: dict[str, str]) -> None:
        super().__init__(
            int(problem.get("status", 500)),
            str(problem.get("title", "Error")),
            str(problem.get("detail", "")),
            headers=headers or None,
        )
        self.problem = problem

    def to_problem(self, instance: str | None) -> Problem:
        return Problem.model_validate({**self.problem, "instance": instance})


class WorkProcessError(Exception):
    """A bug in the work process (its traceback is in the server log)."""


@dataclass(frozen=True)
class Subject:
    """What a request's log work is about, as its errors name it: the body field (``log``
    for an upload, ``records`` for inline records) and the uploads' file names."""

    field: str
    names: tuple[str, ...] = ()

    def __str__(self) -> str:
        shown = ", ".join(repr(name) for name in self.names[:4])
        more = f" and {len(self.names) - 4} more" if len(self.names) > 4 else ""
        return f"{self.field} ({shown}{more})" if shown else self.field


def memory_problem(subject: Subject, memory_mb: int) -> ProblemError:
    return _work_problem(
        subject,
        413,
        "Memory budget exceeded",
        "memory-budget",
        f"the request exceeded the service's memory budget of {memory_mb} MB"
        " (setting request_memory_mb) while its log was read",
        limit_mb=memory_mb,
    )


def deadline_problem(subject: Subject, seconds: float) -> ProblemError:
    return _work_problem(
        subject,
        408,
        "Deadline exceeded",
        "deadline-exceeded",
        f"the request's log work took longer than the service's deadline of {seconds:g} s"
        " (setting request_deadline_seconds) and was stopped",
        # RFC 9110 (15.5.9): a 408 closes the connection.
        headers={"Connection": "close"},
        limit_seconds=seconds,
    )


def _work_problem(
    subject: Subject,
    status: int,
    title: str,
    slug: str,
    what: str,
    headers: dict[str, str] | None = None,
    **extensions: Any,
) -> ProblemError:
    """A request stopped by its work process's bounds, naming the field it was about."""
    message = f"{what}; send a smaller log, or use the command line"
    return ProblemError(
        status,
        title,
        f"{subject}: {message}",
        slug=slug,
        errors=[FieldError(field=subject.field, message=message)],
        headers=headers,
        **extensions,
    )


class ClientGoneError(Exception):
    """The client disconnected while its work ran: the work was stopped."""


class _Worker:
    """One work process and the parent's end of its pipe."""

    def __init__(self, memory_bytes: int) -> None:
        context = multiprocessing.get_context("spawn")
        parent_end, child_end = context.Pipe()
        self.process: BaseProcess = context.Process(
            target=work_process.serve,
            args=(child_end, memory_bytes),
            name="cachecast-work",
            daemon=True,  # ended with the API process; one killed by SIGKILL ends at EOF
        )
        self.process.start()
        child_end.close()
        self.connection: Connection = parent_end
        self.discarded = False

    def wait_ready(self, timeout: float) -> bool:
        """Wait for the process to say it has imported what tasks need; False when it died
        or did not say so within ``timeout`` seconds."""
        try:
            if not self.connection.poll(timeout):
                return False
            message = self.connection.recv()
        except (OSError, EOFError):
            return False
        return bool(message == ("ready", None))

    def kill(self, grace_seconds: float = 0.0) -> int | None:
        """Kill the process (if it still runs after ``grace_seconds``) and reap it; its exit
        code."""
        self.process.join(grace_seconds)
        if self.process.is_alive():
            self.process.kill()
        self.process.join(10)
        self.connection.close()
        return self.process.exitcode


class WorkPool:
    """At most ``size`` work processes, each capped at ``memory_mb``; see the module
    docstring. Thread-safe and loop-agnostic: requests of any event loop may share it."""

    def __init__(self, size: int, memory_mb: int) -> None:
        self.size = size
        self.memory_mb = memory_mb
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._count = 0  # idle, busy and starting
        self.warmed = False  # kept full: a discarded process is replaced at once

    @property
    def capacity(self) -> tuple[int, int]:
        """(work processes idle, work processes counted): both ``size`` when the pool is
        full and none is busy or starting."""
        with self._lock:
            return len(self._idle), self._count

    def warm(self) -> None:
        """Start every work process now, in the background (the service's start-up), and
        replace each one discarded later as soon as it is: a request then finds a process
        that has done its imports (``service.work_process``). Once per pool: apps sharing
        it warm it once."""
        with self._lock:
            if self.warmed:
                return
            self.warmed = True
        for _ in range(self.size):
            self._refill()

    def _refill(self) -> None:
        threading.Thread(target=self._start_idle, name="cachecast-work-start", daemon=True).start()

    def _start_idle(self) -> None:
        """Start one process into the idle list when the pool has a slot free."""
        with self._lock:
            if self._count >= self.size:
                return
            self._count += 1
        try:
            self._give_back(self._start())
        except Exception as error:  # one that cannot start: the next request tries again
            logger.warning("a work process did not start: %s", error)

    def _take(self) -> _Worker | bool:
        """An idle worker, True when the caller may start a new one, False when all are
        busy."""
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.process.is_alive():
                    return worker
                self._count -= 1  # died while idle (killed by an operator, say)
                worker.discarded = True
                worker.kill()
            if self._count < self.size:
                self._count += 1
                return True
            return False

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)

    def _start(self) -> _Worker:
        """A new work process, once it is ready (its slot was counted by :meth:`_take`; on
        failure the slot is freed)."""
        try:
            worker = _Worker(self.memory_mb * work_process.MEBIBYTE)
        except BaseException:
            with self._lock:
                self._count -= 1
            raise
        if not worker.wait_ready(_START_SECONDS):
            worker.discarded = True
            exit_code = worker.kill()
            with self._lock:
                self._count -= 1
            raise WorkProcessError(f"the work process did not start (exit code {exit_code})")
        return worker

    async def run(
        self,
        function: Callable[..., Any],
        args: tuple[Any, ...],
        *,
        database_url: str | None,
        deadline: float,
        client_gone: Callable[[], Awaitable[bool]],
    ) -> tuple[str, Any]:
        """Run ``function(*args)`` in a work process: the child's answer ``(kind,
        payload)`` (``service.work_process``), or ``("deadline", None)``; raises
        :class:`ClientGoneError` when ``client_gone()`` turns true first."""
        worker = await self._acquire(deadline, client_gone)
        if worker is None:
            return ("deadline", None)
        if time.monotonic() >= deadline:  # spent waiting: the process is fresh, keep it
            self._give_back(worker)
            return ("deadline", None)
        answer: tuple[str, Any] = ("", None)
        handed = False  # the process got the task (else it is as fresh as it was taken)
        try:
            task = (function, args, database_url, current_limits(), False)
            if not await anyio.to_thread.run_sync(self._send, worker, task):
                # Reaped in a thread: the event loop never waits on a process.
                exit_code = await anyio.to_thread.run_sync(self._discard_once, worker, 1.0)
                return _died(exit_code)
            handed = True
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return ("deadline", None)
                ready = await anyio.to_thread.run_sync(
                    worker.connection.poll, min(_TICK_SECONDS, remaining)
                )
                if ready:
                    break
                if await client_gone():
                    raise ClientGoneError
            answer = await anyio.to_thread.run_sync(self._receive, worker)
            return answer
        finally:
            # Cancelled before the task was handed over: the process is kept.
            self._settle(worker, answer if handed else ("ok", None))

    def run_job(
        self,
        function: Callable[..., Any],
        args: tuple[Any, ...],
        progress: Callable[[int], None],
        *,
        database_url: str,
    ) -> tuple[str, Any]:
        """Run a background job's ``function(*args, store, progress=...)`` in a work process,
        in this thread: the child's answer as :meth:`run`'s. Its progress reports are passed
        to ``progress``, which is also called with 0 every tick: when it raises (the job was
        cancelled, the server is stopping) the work process is killed and the error goes
        on."""
        while not isinstance(taken := self._take(), _Worker):
            if taken:
                taken = self._start()
                break
            time.sleep(_TICK_SECONDS)
        worker = taken
        answer: tuple[str, Any] = ("", None)
        try:
            if not self._send(worker, (function, args, database_url, current_limits(), True)):
                return _died(self._discard_once(worker, grace_seconds=1.0))
            while True:
                if not worker.connection.poll(_TICK_SECONDS):
                    progress(0)
                    continue
                answer = self._receive(worker)
                if answer[0] != "progress":
                    return answer
                progress(answer[1])
        finally:
            self._settle(worker, answer)

    @staticmethod
    def _send(worker: _Worker, task: tuple[Any, ...]) -> bool:
        """Hand the task over; False when the work process is gone."""
        try:
            worker.connection.send(task)
        except (OSError, EOFError):
            return False
        return True

    def _receive(self, worker: _Worker) -> tuple[str, Any]:
        """The work process's next message; one that closed its pipe is reaped and its end
        said as an answer (:func:`_died`)."""
        try:
            message: tuple[str, Any] = worker.connection.recv()
        except (OSError, EOFError):
            return _died(self._discard_once(worker, grace_seconds=1.0))
        return message

    def _settle(self, worker: _Worker, answer: tuple[str, Any]) -> None:
        """After a task: the process back to the pool when its answer leaves it usable, else
        discarded (and replaced in a warm pool). Runs on every path out of a task, a
        cancelled wait included, once per task."""
        if worker.discarded:
            return
        if answer[0] in _KEEPING:
            self._give_back(worker)
        else:
            self._discard_once(worker)

    def _discard_once(self, worker: _Worker, grace_seconds: float = 0.0) -> int | None:
        """Discard a worker once, however many paths reach it (a process that closed its
        pipe gets ``grace_seconds`` to exit by itself, so that its own exit code is read)."""
        if worker.discarded:
            return worker.process.exitcode
        worker.discarded = True
        exit_code = worker.kill(grace_seconds)
        with self._lock:
            self._count -= 1
        if self.warmed:
            self._refill()
        return exit_code

    async def _acquire(
        self, deadline: float, client_gone: Callable[[], Awaitable[bool]]
    ) -> _Worker | None:
        while True:
            taken = self._take()
            if isinstance(taken, _Worker):
                return taken
            if taken:
                return await self._start_for_request()
            if time.monotonic() >= deadline:
                return None
            if await client_gone():
                raise ClientGoneError
            await anyio.sleep(_TICK_SECONDS)

    async def _start_for_request(self) -> _Worker:
        """Start a work process for a request, its slot already counted by :meth:`_take`.
        A cancellation (the client gone, the server stopping, a deadline of the caller's)
        can land before the thread runs (anyio checks for one first: the slot is freed) or
        while it runs (it is delivered once the thread is done: the process started goes
        back to the pool); either way no slot stays counted for a process nobody holds."""
        ran = False

        def start() -> _Worker:
            nonlocal ran
            ran = True
            return self._start()  # frees the slot itself when the start fails

        try:
            worker = await anyio.to_thread.run_sync(start)
        except BaseException:
            if not ran:
                with self._lock:
                    self._count -= 1
            raise
        return worker

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
            self._count -= len(idle)
        for worker in idle:
            worker.kill()


def _died(exit_code: int | None) -> tuple[str, Any]:
    """The answer of a work process that ended without one. Killed by a signal: native code
    that failed to allocate aborts the process (Rust's allocator does), which under the
    address-space cap is the budget; Python's own exit with an error is a bug."""
    if exit_code is not None and exit_code > 0:
        return ("crash", ("WorkProcessExit", f"the work process exited with code {exit_code}"))
    return ("died", exit_code)


_pools: dict[tuple[int, int], WorkPool] = {}
_pools_lock = threading.Lock()


def shared_pool(size: int, memory_mb: int) -> WorkPool:
    """The pool of this process for these settings (see the module docstring); jobs have
    their own (``size`` 0 here: each runner thread gets a work process)."""
    with _pools_lock:
        pool = _pools.get((size, memory_mb))
        if pool is None:
            pool = _pools[(size, memory_mb)] = WorkPool(size or JOB_PROCESSES, memory_mb)
        return pool


# Work processes for jobs at most per process: more than any runner has threads.
JOB_PROCESSES = 64


def run_job_isolated(
    function: Callable[..., dict[str, Any]],
    payload: Mapping[str, Any],
    progress: Callable[[int], None],
    *,
    database_url: str,
    memory_mb: int,
) -> dict[str, Any]:
    """A background job's ``function(payload, store, progress=...)`` in a work process
    capped at ``memory_mb`` (the handler of ``service.worker``): its result, or the job's
    error as :class:`JobInputError` (the budget is a 413 ``memory-budget`` problem)."""
    pool = shared_pool(0, memory_mb)
    kind, answer = pool.run_job(function, (dict(payload),), progress, database_url=database_url)
    if kind == "ok":
        result: dict[str, Any] = answer
        return result
    if kind == "problem":
        raise JobInputError(answer[0])
    if kind == "crash":
        error_type, text = answer
        logger.error("unhandled error in the work process of a job:\n%s", text)
        raise WorkProcessError(f"{error_type} in the work process")
    if kind == "died":
        logger.warning("the work process of a job stopped without an answer (exit code %s)", answer)
    message = (
        f"the job exceeded the service's memory budget of {memory_mb} MB"
        " (setting request_memory_mb); split the log, or use the command line"
    )
    problem = memory_problem(Subject("records"), memory_mb).to_problem(None)
    raise JobInputError(
        problem.model_copy(update={"detail": message}).model_dump(mode="json", exclude_none=True)
    )


async def run_isolated(
    request: Request,
    function: Callable[..., Result],
    *args: Any,
    subject: Subject,
    contracts: bool = True,
) -> Result:
    """``function(*args)`` (with the service's contract store appended when ``contracts``)
    run in a work process of the service's pool, its return value back; the answers of
    the module docstring otherwise. ``function`` must be a module-level function and its
    arguments picklable (a use case and its typed request are)."""
    state = request.app.state.service
    settings = state.settings
    pool = shared_pool(settings.request_workers, settings.request_memory_mb)
    # One deadline per request, from its first log work: an upload read in a work process,
    # then estimated in another run, shares it (each had its own: 8 s and 8 s more).
    deadline = getattr(request.state, "work_deadline", None)
    if deadline is None:
        deadline = request.state.work_deadline = (
            time.monotonic() + settings.request_deadline_seconds
        )
    try:
        kind, payload = await pool.run(
            function,
            args,
            database_url=state.database_url if contracts else None,
            deadline=deadline,
            client_gone=request.is_disconnected,
        )
    except ClientGoneError:
        logger.info("client left %s %s: its work was stopped", request.method, request.url.path)
        raise ProblemError(
            408, "Client gone", "the client closed the connection; the work was stopped"
        ) from None
    if kind == "ok":
        result: Result = payload
        return result
    if kind == "problem":
        problem, headers = payload
        if int(problem.get("status", 500)) >= 500:
            logger.error("error on %s %s: %s", request.method, request.url.path, problem)
        raise WorkProblem(problem, headers)
    if kind == "crash":
        error_type, text = payload
        logger.error("unhandled error in the work process of %s:\n%s", request.url.path, text)
        raise WorkProcessError(f"{error_type} in the work process")
    if kind == "deadline":
        raise deadline_problem(subject, settings.request_deadline_seconds)
    if kind == "died":
        # No answer and no MemoryError: native code that failed to allocate aborts the
        # process (Rust's allocator does); under the address-space cap that is the budget.
        logger.warning(
            "the work process of %s %s stopped without an answer (exit code %s); answered as"
            " over the memory budget",
            request.method,
            request.url.path,
            payload,
        )
    raise memory_problem(subject, settings.request_memory_mb)
