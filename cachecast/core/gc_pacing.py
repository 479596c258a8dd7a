"""Pacing of Python's cyclic garbage collector while a pass reads and replays a log.

Why: a pass allocates container objects in bursts (every JSON record parses into dicts and
lists, every request into tuples and segments) and frees nearly all of them by reference
counting a moment later. The collector's default first threshold (700 net allocations)
fires inside each burst, and every collection walks the survivors, and now and then the
whole heap (in a Ray worker, Ray's own modules too): on the benchmark's agent log that was
about a quarter of a one-thread ``estimate`` (docs/capacity-plan.md, "Garbage collector").
Raising the first threshold while a pass runs lets the bursts come and go between
collections. Reference cycles are still collected, only later: at most
:data:`PASS_FIRST_THRESHOLD` young objects wait for it (a few MB), nothing grows with the
log.

The thresholds are process-wide: :func:`paced_collection` counts its holders (threads and
nested passes), raises the first threshold while any is inside and puts back what it found
when the last one leaves.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

PASS_FIRST_THRESHOLD = 50_000  # net container allocations between youngest-generation runs

_lock = threading.Lock()
_holders = 0
_saved: tuple[int, int, int] | None = None


@contextmanager
def paced_collection() -> Iterator[None]:
    """Collect rarely inside (see the module); the thresholds found are restored after."""
    global _holders, _saved
    with _lock:
        if _holders == 0:
            _saved = found = gc.get_threshold()
            if found[0] != 0:  # 0: collection is off (the caller's choice): leave it so
                gc.set_threshold(max(found[0], PASS_FIRST_THRESHOLD), found[1], found[2])
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None
