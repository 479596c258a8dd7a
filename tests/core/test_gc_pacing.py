"""The collector runs rarely while a pass reads a log, and is as it was after."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cachecast.core.gc_pacing import PASS_FIRST_THRESHOLD, paced_collection
from cachecast.passes.log_input import LogInput, LogReading


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    found = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # CPython's defaults, whatever the runner set
    yield (700, 10, 10)
    gc.set_threshold(*found)


def test_raised_inside_nested_and_restored_after(thresholds: tuple[int, int, int]) -> None:
    with paced_collection():
        assert gc.get_threshold() == (PASS_FIRST_THRESHOLD, 10, 10)
        with paced_collection():  # a second holder (another source of the same pass)
            assert gc.get_threshold() == (PASS_FIRST_THRESHOLD, 10, 10)
        assert gc.get_threshold() == (PASS_FIRST_THRESHOLD, 10, 10)  # still held
    assert gc.get_threshold() == thresholds


def test_restored_after_an_error(thresholds: tuple[int, int, int]) -> None:
    with pytest.raises(ZeroDivisionError), paced_collection():
        _ = 1 / 0
    assert gc.get_threshold() == thresholds


def test_a_higher_threshold_or_collection_off_is_left_alone() -> None:
    found = gc.get_threshold()
    try:
        gc.set_threshold(200_000, 5, 5)
        with paced_collection():
            assert gc.get_threshold() == (200_000, 5, 5)
        gc.set_threshold(0)
        with paced_collection():
            assert gc.get_threshold()[0] == 0
        assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*found)


def test_threads_share_it_until_the_last_leaves(thresholds: tuple[int, int, int]) -> None:
    entered, release = threading.Event(), threading.Event()

    def hold() -> None:
        with paced_collection():
            entered.set()
            release.wait(10)

    other = threading.Thread(target=hold)
    with paced_collection():
        other.start()
        assert entered.wait(10)
    assert gc.get_threshold()[0] == PASS_FIRST_THRESHOLD  # the other thread holds it
    release.set()
    other.join(10)
    assert gc.get_threshold() == thresholds


def test_held_while_a_log_is_read(thresholds: tuple[int, int, int], tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"timestamp": 1, "model": "gpt-4o", "request": {"messages":'
        ' [{"role": "user", "content": "hi"}]}, "usage": {"prompt_tokens": 8}}\n'
    )
    requests = LogReading(LogInput.of_paths([log]), None).source_requests(0)
    next(requests)
    assert gc.get_threshold()[0] == PASS_FIRST_THRESHOLD
    assert list(requests) == []
    assert gc.get_threshold() == thresholds
