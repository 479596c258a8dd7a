"""Text agent logs for the benchmarks, built from ``examples/make_agent_log.py``'s sessions.

A log is ``periods`` back-to-back periods of the same traffic: each period is ``sessions``
agent sessions (the example's own generator: shared system prompts and tools, growing
histories, pauses past the TTLs, two scopes) starting within three hours, periods five hours
apart (past every session's end and every TTL but the 24-hour ones). So ``periods=10`` is
the same traffic as ``periods=1``, ten times longer: what a bounded-memory reader must read
in the same memory. Each period has its own seed and session numbers, so no two periods
share a session (they share the system prompts and tools, as a real deployment's days do).

The records are OpenAI Chat Completions bodies in cachecast's JSON lines (text, not
pre-tokenized), timestamps ISO 8601, in timestamp order.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import json
import random
import sys
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PERIOD = dt.timedelta(hours=5)


def _example_generator() -> ModuleType:
    name = "make_agent_log"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / "make_agent_log.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def write_agent_log(path: Path, sessions: int, periods: int = 1) -> int:
    """Write the log (see the module docstring); returns its number of requests."""
    example = _example_generator()
    written = 0
    with open(path, "w", encoding="utf-8") as handle:
        for period in range(periods):
            rng = random.Random(example.SEED + period)
            start = example.START + period * PERIOD
            calls = []
            for number in range(sessions):
                # The example's ``generate``, with the period's start and session numbers.
                opens = start + dt.timedelta(seconds=rng.randint(0, 3 * 3600))
                scope = "org-acme" if rng.random() < 0.75 else "org-globex"
                agent = "reviewer" if rng.random() < 0.2 else "coder"
                index = period * sessions + number
                calls.extend(example.session_calls(rng, index, opens, scope, agent))
            calls.sort(key=lambda call: (call["timestamp"], call["request_id"]))
            for call in calls:
                handle.write(json.dumps(call, separators=(",", ":")) + "\n")
            written += len(calls)
    return written


def split_round_robin(path: Path, files: int) -> list[Path]:
    """``path``'s lines dealt round-robin over ``files`` files (each still in timestamp
    order): the same log kept as several files, as a fleet of gateways writes it."""
    if files <= 1:
        return [path]
    outputs = [path.with_name(f"{path.stem}-{index:02d}.jsonl") for index in range(files)]
    with contextlib.ExitStack() as stack:
        handles = [stack.enter_context(open(output, "w", encoding="utf-8")) for output in outputs]
        with open(path, encoding="utf-8") as source:
            for number, line in enumerate(source):
                handles[number % files].write(line)
    return outputs
