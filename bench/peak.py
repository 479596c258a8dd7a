"""Peak resident memory of ``python -m MODULE ARGUMENTS``, the new process alone.

Not ``ru_maxrss`` (``os.wait4``, ``getrusage``): Linux keeps that high-water mark across
``exec``, so a child spawned by a large process (``fork``/``vfork``, then ``exec``) reports
at least the parent's memory at the spawn: a test run inside a pytest process that has
loaded vLLM read 2.5 GB for a command that used 150 MB. The child writes its own
``VmHWM`` (``/proc/self/status``: the high-water mark of the memory map ``exec`` made)
to a file when it exits.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

_WRAPPER = """
import atexit, os, runpy, sys

def _report_peak():
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(os.environ["CACHECAST_PEAK_FILE"], "w") as out:
        out.write(peak)

atexit.register(_report_peak)
module = sys.argv.pop(1)
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


@dataclass(frozen=True)
class Measured:
    peak_kib: int
    seconds: float
    # CPU time (user + system) of the child: unlike wall time it does not grow when the
    # machine is busy with other work, so a comparison of two runs holds under load.
    cpu_seconds: float
    returncode: int
    stdout: str
    stderr: str


def run_measured(
    module: str,
    arguments: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdout: int | IO[Any] = subprocess.PIPE,
    stderr: int | IO[Any] = subprocess.PIPE,
) -> Measured:
    """Run ``python -m module arguments`` and measure its peak resident memory (KiB)."""
    with tempfile.TemporaryDirectory(prefix="cachecast-peak-") as folder:
        peak_file = Path(folder) / "peak"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        child = subprocess.run(
            [sys.executable, "-c", _WRAPPER, module, *arguments],
            env={**(env if env is not None else os.environ), "CACHECAST_PEAK_FILE": str(peak_file)},
            cwd=cwd,
            stdout=stdout,
            stderr=stderr,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if not peak_file.exists():
            raise RuntimeError(f"python -m {module} exited {child.returncode} without its peak")
        return Measured(
            int(peak_file.read_text()),
            seconds,
            cpu_seconds,
            child.returncode,
            child.stdout or "",
            child.stderr or "",
        )
