"""Peak memory of cachecast commands on a log and on the same traffic ten times longer.

    .venv/bin/python -m bench.memory [--sessions 60] [--factor 10]
        [--command NAME 'ARGUMENTS with {log}, {changed} and {db}' ...]

Workload: ``bench.agent_traffic``: ``--sessions`` agent sessions of text (not pre-tokenized)
OpenAI chat requests; the long log is ``--factor`` periods of that same traffic one after
the other (the live cache state is the same, the log ten times longer). Each command runs
as ``python -m cachecast ARGUMENTS`` in a fresh process (output discarded) on either log;
its peak resident memory is the child's own (``bench.peak``: ``VmHWM``, not
``ru_maxrss``, which counts this process's memory at the spawn). Printed per command: both
peaks, the ratio long / short (the target: at most 1.3) and the seconds each took. A
bounded-memory reader keeps the ratio near 1 whatever the factor; one that holds the log
grows with it.

Default commands: every command that reads a log: ``estimate``, ``simulate`` (automatic
caching with a 5-minute TTL: an unbounded cache, the default vLLM one, keeps every block by
definition), ``tokenize``, ``inspect``, ``reconcile``, ``check`` (the log against the same
traffic with a timestamp at the top of every system prompt: every pair differs, so the
divergence finder tokenizes them all; a regression, exit 1, is its expected answer),
``suggest``, ``compare`` and ``fleet``. ``measure`` needs a vLLM server: its test
(tests/gpu_backend/test_measure_memory.py) measures it the same way. ``--command NAME ARGS``
(repeatable) replaces them; ``{log}`` is replaced by the log's path, ``{changed}`` by that
changed log's, ``{db}`` by a migrated contract database's URL.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import tempfile
from pathlib import Path

from bench.agent_traffic import write_agent_log
from bench.peak import run_measured

DEFAULT_COMMANDS = [
    (
        "estimate",
        "estimate {log} --target openai:gpt-4o --at 2026-11-01 --json --database-url {db}",
    ),
    ("simulate", "simulate {log} --policy automatic --ttl 300 --json"),
    ("tokenize", "tokenize {log} --json"),
    ("inspect", "inspect {log} --json"),
    ("reconcile", "reconcile {log} --at 2026-11-01 --json --database-url {db}"),
    (
        "check",
        "check {log} {changed} --target openai:gpt-4o --at 2026-11-01 --database-url {db}",
    ),
    ("suggest", "suggest {log} --target openai:gpt-4o --at 2026-11-01 --database-url {db}"),
    (
        "compare",
        "compare {log} --model llama-3.1-8b --gpu h100-sxm --target openai:gpt-4o"
        " --at 2026-11-01 --json --database-url {db}",
    ),
    ("fleet", "fleet {log} --model llama-3.1-8b --gpu h100-sxm --replicas 2 --json"),
]
# What a command may exit with: check answers a regression with 1.
ANSWERS = {"check": (0, 1)}


def write_changed(source: Path, target: Path) -> None:
    """``source`` with ``Current time: <the request's timestamp>`` at the top of every system
    prompt (the layout regression ``check`` exists for), line by line."""
    with source.open(encoding="utf-8") as lines, target.open("w", encoding="utf-8") as out:
        for line in lines:
            record = json.loads(line)
            for message in record["request"]["messages"]:
                if message.get("role") == "system" and isinstance(message.get("content"), str):
                    message["content"] = (
                        f"Current time: {record['timestamp']}\n" + message["content"]
                    )
                    break
            out.write(json.dumps(record, separators=(",", ":")) + "\n")


def peak_rss(arguments: list[str]) -> tuple[int, float, int]:
    """(peak resident KiB, seconds, exit status) of ``python -m cachecast ARGUMENTS``."""
    measured = run_measured(
        "cachecast", arguments, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return measured.peak_kib, measured.seconds, measured.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sessions", type=int, default=60)
    parser.add_argument("--factor", type=int, default=10)
    parser.add_argument(
        "--command",
        nargs=2,
        action="append",
        metavar=("NAME", "ARGUMENTS"),
        help="a command to measure instead of the defaults (repeatable)",
    )
    args = parser.parse_args()
    commands = [tuple(pair) for pair in args.command] if args.command else DEFAULT_COMMANDS
    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder)
        from cachecast.core import db

        url = f"sqlite:///{directory / 'contracts.db'}"
        db.upgrade(url)
        short, long = directory / "short.jsonl", directory / f"long-x{args.factor}.jsonl"
        requests = write_agent_log(short, args.sessions)
        long_requests = write_agent_log(long, args.sessions, periods=args.factor)
        changed = {log: log.with_name(f"{log.stem}-changed.jsonl") for log in (short, long)}
        for log, target in changed.items():
            write_changed(log, target)
        print(
            f"logs: {requests:,} requests ({short.stat().st_size / 1e6:.1f} MB) and the same"
            f" traffic x{args.factor}: {long_requests:,} requests"
            f" ({long.stat().st_size / 1e6:.1f} MB)"
        )
        print(
            f"{'command':<10} {'peak MB':>9} {'x' + str(args.factor) + ' MB':>9} {'ratio':>6}"
            f" {'s':>6} {'x' + str(args.factor) + ' s':>6}"
        )
        for name, template in commands:
            figures = []
            for log in (short, long):
                line = template.format(
                    log=shlex.quote(str(log)),
                    changed=shlex.quote(str(changed[log])),
                    db=shlex.quote(url),
                )
                rss, seconds, status = peak_rss(shlex.split(line))
                if status not in ANSWERS.get(name, (0,)):
                    raise SystemExit(f"{name} exited {status}: python -m cachecast {line}")
                figures.append((rss / 1024, seconds))
            (small, small_s), (big, big_s) = figures
            print(
                f"{name:<10} {small:9.1f} {big:9.1f} {big / small:6.2f} {small_s:6.1f}"
                f" {big_s:6.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
