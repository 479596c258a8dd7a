"""Two real processes writing the same SQLite file at once corrupt nothing."""

from __future__ import annotations

import datetime as dt
import itertools
import multiprocessing
import sqlite3
from decimal import Decimal
from multiprocessing.synchronize import Barrier
from typing import Any

from cachecast.contracts import CacheMode, ContractConflictError, ContractStore, ContractTerms
from tests.contracts.builders import terms

MONTHS_PER_WRITER = 12
CONTESTED_ROUNDS = 8


def version(model: str, start: dt.date, end: dt.date | None, read: str) -> ContractTerms:
    return terms(
        model,
        start,
        end,
        read=read,
        provider="race",
        mode=CacheMode.EXPLICIT,
        source="https://race.example/terms",
    )


def _writer(url: str, writer: int, barrier: Barrier, results: Any) -> None:
    store = ContractStore(url)
    # Round 1: writer 0 adds the even months of 2026-2027, writer 1 the odd ones, at the
    # same time; the ranges never overlap, so every write must succeed.
    barrier.wait()
    for index in range(MONTHS_PER_WRITER):
        month = 2 * index + writer  # 0..23
        start = dt.date(2026 + month // 12, month % 12 + 1, 1)
        end = dt.date(2026 + (month + 1) // 12, (month + 1) % 12 + 1, 1)
        store.add_version(version("shared", start, end, read=f"0.{writer + 1}"))
    # Then rounds in which both add overlapping closed ranges of one model at once
    # (May-June against June-July): in either order the second overlaps the first, and no
    # unique key catches it, so only the write lock keeps one of them out.
    for round_number in range(CONTESTED_ROUNDS):
        barrier.wait()
        start = dt.date(2026, 5 + writer, 1)
        end = dt.date(2026, 7 + writer, 1)
        try:
            store.add_version(version(f"contested-{round_number}", start, end, read="0.1"))
            results.put("added")
        except ContractConflictError:
            results.put("conflict")


def _integrity(url: str) -> str:
    with sqlite3.connect(url.removeprefix("sqlite:///")) as connection:
        return str(connection.execute("PRAGMA integrity_check").fetchone()[0])


def test_two_processes_writing_at_once(empty_url: str) -> None:
    context = multiprocessing.get_context("spawn")  # real, separate interpreters
    barrier = context.Barrier(2)
    results = context.Queue()
    writers = [
        context.Process(target=_writer, args=(empty_url, number, barrier, results))
        for number in (0, 1)
    ]
    for process in writers:
        process.start()
    outcomes = [results.get(timeout=120) for _ in range(CONTESTED_ROUNDS * len(writers))]
    for process in writers:
        process.join(timeout=60)
        assert process.exitcode == 0

    store = ContractStore(empty_url)
    # Every month of both writers is there: 24 consecutive, non-overlapping versions.
    history = store.history("race", "shared")
    assert len(history) == 2 * MONTHS_PER_WRITER
    for earlier, later in itertools.pairwise(history):
        assert earlier.effective_to == later.effective_from
    assert [v.read_multiplier for v in history[:2]] == [Decimal("0.1"), Decimal("0.2")]

    # The write lock serialises each contested pair: one stored, the other refused.
    assert sorted(outcomes) == ["added"] * CONTESTED_ROUNDS + ["conflict"] * CONTESTED_ROUNDS
    for round_number in range(CONTESTED_ROUNDS):
        assert len(store.history("race", f"contested-{round_number}")) == 1

    assert _integrity(empty_url) == "ok"
