"""``cachecast.cli.main`` runs ``usage`` with the collector set for a short run and leaves
every other command with Python's defaults (docs/usage-report.md "Speed"); every command
ends with what is left frozen. Checked in a fresh interpreter, not on time."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO_ROOT

_PROBE = """
import gc, sys
from cachecast.cli import main
sys.argv = ["cachecast", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print("collector", gc.get_threshold()[0], gc.get_freeze_count() > 0)
"""


def collector_after(arguments: list[str]) -> str:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, *arguments],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return result.stdout.strip().splitlines()[-1]


def test_usage_runs_with_a_first_generation_threshold_of_100000() -> None:
    # docs/usage-report.md "Speed": 100,000 allocations between first-generation collections.
    assert collector_after(["usage", "--help"]) == "collector 100000 True"


def test_other_commands_keep_python_defaults() -> None:
    # 700: CPython's default first-generation threshold (the gc module's documentation).
    assert collector_after(["contracts", "--help"]) == "collector 700 True"
    assert collector_after(["--version"]) == "collector 700 True"
