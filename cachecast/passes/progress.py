"""How a use case reports progress: the CLI draws a bar, a service job updates its row."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar


class Progress(Protocol):
    """Receives a unit of work's size once, then increments as it is done."""

    def start(self, label: str, total: int | None) -> None: ...

    def advance(self, count: int) -> None: ...


class NoProgress:
    """Progress nobody watches."""

    def start(self, label: str, total: int | None) -> None:
        return None

    def advance(self, count: int) -> None:
        return None


T = TypeVar("T")


def progress_events(
    work: Callable[[Callable[[int], None]], T], every_seconds: float
) -> Iterator[int | T]:
    """Run ``work(progress)`` on a thread of its own and yield, about every
    ``every_seconds``, the count it reported since the last yield, then its result (its
    exception is raised here). For a generator that must hand progress on while the work
    runs: a remote task streaming its progress to the caller (a generator cannot yield from
    inside the work's progress callback)."""
    events: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()

    def run() -> None:
        try:
            events.put(("done", work(lambda count: events.put(("count", count)))))
        except BaseException as error:  # handed to the generator, which raises it
            events.put(("error", error))

    worker = threading.Thread(target=run, name="cachecast-work", daemon=True)
    worker.start()
    counted, reported_at = 0, time.monotonic()
    while True:
        kind, value = events.get()
        if kind == "count":
            counted += value
            if time.monotonic() - reported_at >= every_seconds:
                yield counted
                counted, reported_at = 0, time.monotonic()
            continue
        worker.join()
        if kind == "error":
            raise value
        if counted:
            yield counted
        yield value
        return
