"""Session usage report: ``cachecast usage --json`` against ccusage 17 on the same files.

    .venv/bin/python -m bench.sessions [--sessions DIR] [--copies 1 8] [--repeat 9]
        [--ccusage PATH] [--database-url URL] [--cachecast PATH]

Workload: every ``*.jsonl`` under ``--sessions`` (default: the shared Claude Code
recordings, ``$CACHECAST_SHARED_DATA/recordings/claude_code``, by default
``../shared/data``), laid out the way Claude Code writes
them (``<config>/projects/<project>/<session>.jsonl``, subagents in
``<session>/subagents/``) as copies in a temporary folder, ``--copies`` times (each
copy a project of its own: a folder K times larger, every line parsed by both tools). Each
number given to ``--copies`` is a workload of its own, measured in the same run (default: 1
and 8: one copy is mostly start-up, eight mostly reading). Both tools find the files by the
same setting, ``CLAUDE_CONFIG_DIR``, with ``HOME`` pointing to an empty temporary folder.

ccusage: ``ccusage@17`` installed from the npm registry into a temporary folder (``npm
install``; nothing is written in the repository), or ``--ccusage PATH`` to an installed
``ccusage`` executable; it runs as ``ccusage session --json --offline`` (its executable
directly, not through ``npx``, whose own start-up would be counted against ccusage).
cachecast: the ``cachecast`` console script beside this Python (what a user runs; ``--cachecast
PATH`` for another), ``cachecast usage --json`` with a migrated contract database (a temporary
SQLite file unless ``--database-url``), this checkout first on ``PYTHONPATH``.

Each run is a fresh process, start-up included; the two alternate, ``--repeat`` times each
(after one unmeasured run of each, which warms the file cache and lets cachecast remember the
contract answers it reads from the database, as it does for a user from the second run on).
Printed per workload: the median wall seconds and CPU seconds (user + system) of each, their
ratios (cachecast / ccusage: below 1 is faster), and the peak resident memory of each (the
child's ``ru_maxrss`` from ``os.wait4``; both are measured the same way, and the floor that
method reports for ``/bin/true`` is printed beside them). On a machine shared with other work
the CPU ratio is the steadier one: wall time also counts the time a process waits for a core.
Both reports' token totals are printed too, as a check that they read the same traffic.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("CACHECAST_SHARED_DATA") or REPO.parent / "shared" / "data")
DEFAULT_SESSIONS = SHARED_DATA / "recordings" / "claude_code"
CCUSAGE = "ccusage@17"


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    peak_kib: int
    stdout: str


def run(command: Sequence[str], env: dict[str, str]) -> Run:
    """One fresh process: wall and CPU seconds, peak RSS (KiB), its stdout."""
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        child = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        error = child.stderr.read().decode() if child.stderr else ""
        if child.returncode != 0:
            raise SystemExit(f"{' '.join(command)} exited {child.returncode}: {error[-2000:]}")
        out.seek(0)
        return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, out.read().decode())


def lay_out(sessions: Path, config: Path, copies: int) -> tuple[int, int]:
    """Copies under ``config/projects``: (files, bytes)."""
    files = sorted(path for path in sessions.rglob("*.jsonl") if path.is_file())
    total = 0
    for copy in range(copies):
        for path in files:
            relative = path.relative_to(sessions)
            if relative.parent.name == "subagents":  # <session>/subagents/agent-x.jsonl
                project = relative.parent.parent.parent
            else:
                project = relative.parent
            name = "-".join(("bench", str(copy), *project.parts))
            inside = relative.relative_to(project)
            target = config / "projects" / name / inside
            target.parent.mkdir(parents=True, exist_ok=True)
            # A copy, not a link: cachecast reads a file reached by two paths once.
            shutil.copyfile(path, target)
            total += path.stat().st_size
    return len(files) * copies, total


def install_ccusage(folder: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is not installed: give --ccusage PATH to an installed ccusage")
    subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(folder), CCUSAGE],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return folder / "node_modules" / ".bin" / "ccusage"


def ccusage_totals(text: str) -> tuple[int, int]:
    """(requests are not in ccusage's session report: sessions, prompt tokens incl. cache)."""
    data = json.loads(text)
    sessions = data.get("sessions", [])
    tokens = sum(
        s.get("inputTokens", 0) + s.get("cacheCreationTokens", 0) + s.get("cacheReadTokens", 0)
        for s in sessions
    )
    return len(sessions), tokens


def console_script() -> Path:
    """The ``cachecast`` console script beside this interpreter (a virtual environment's
    ``bin``): what a user runs, start-up and all."""
    script = Path(sys.executable).parent / "cachecast"
    if not script.is_file():
        raise SystemExit(f"no cachecast console script at {script}: give --cachecast PATH")
    return script


@dataclass(frozen=True)
class Medians:
    wall: float
    cpu: float
    peak_kib: int


def medians_of(done: Sequence[Run]) -> Medians:
    return Medians(
        statistics.median(r.wall for r in done),
        statistics.median(r.cpu for r in done),
        max(r.peak_kib for r in done),
    )


def measure(
    options: argparse.Namespace, root: Path, copies: int, ccusage: Path, url: str
) -> tuple[Medians, Medians]:
    """One workload (``copies`` copies of the sessions): both tools, alternating; printed."""
    home, config = root / f"home-{copies}", root / f"claude-{copies}"
    home.mkdir()
    count, size = lay_out(options.sessions, config, copies)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(config),
        "CODEX_HOME": str(root / "no-codex"),
        "PYTHONPATH": str(REPO),
        "TZ": "UTC",
    }
    ours = [str(options.cachecast), "usage", "--json", "--database-url", url]
    theirs = [str(ccusage), "session", "--json", "--offline"]
    runs: dict[str, list[Run]] = {"cachecast": [], "ccusage": []}
    run(theirs, env)  # warms the file cache for both
    run(ours, env)  # remembers the contract answers (in HOME's cache folder), as for a user
    for _ in range(options.repeat):
        runs["ccusage"].append(run(theirs, env))
        runs["cachecast"].append(run(ours, env))
    floor = run(["/bin/true"], env).peak_kib
    print(
        f"{count} session files, {size / 1e6:.1f} MB ({copies} cop(ies) of"
        f" {options.sessions}); {options.repeat} runs each, medians, start-up included"
    )
    ours_m, theirs_m = medians_of(runs["cachecast"]), medians_of(runs["ccusage"])
    for name, m in (("cachecast", ours_m), ("ccusage", theirs_m)):
        print(
            f"  {name:9s} wall {m.wall:6.3f} s   cpu {m.cpu:6.3f} s"
            f"   peak RSS {m.peak_kib / 1024:7.1f} MiB"
        )
    wall, cpu = ours_m.wall / theirs_m.wall, ours_m.cpu / theirs_m.cpu
    memory = ours_m.peak_kib / theirs_m.peak_kib
    print(
        f"  ratio cachecast / ccusage at {copies} cop(ies): wall {wall:.2f}x, cpu {cpu:.2f}x,"
        f" peak memory {memory:.2f}x (peak floor of this method: {floor / 1024:.1f} MiB)"
    )
    report = json.loads(runs["cachecast"][-1].stdout)
    totals = report["totals"]
    sessions, tokens = ccusage_totals(runs["ccusage"][-1].stdout)
    print(
        f"  read: cachecast {totals['requests']} requests, {totals['prompt_tokens']:,} prompt"
        f" tokens, ${totals['cost']}; ccusage {sessions} sessions, {tokens:,} prompt tokens"
    )
    return ours_m, theirs_m


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=Path, default=DEFAULT_SESSIONS)
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--ccusage", type=Path, default=None)
    parser.add_argument("--cachecast", type=Path, default=None)
    parser.add_argument("--database-url", default=None)
    options = parser.parse_args(argv)
    if not options.sessions.is_dir():
        raise SystemExit(f"no session folder at {options.sessions}")
    options.cachecast = options.cachecast or console_script()
    with tempfile.TemporaryDirectory(prefix="cachecast-bench-sessions-") as directory:
        root = Path(directory)
        ccusage = options.ccusage or install_ccusage(root / "npm")
        url = options.database_url
        if url is None:
            url = f"sqlite:///{root / 'cachecast.db'}"
            subprocess.run(
                [str(options.cachecast), "db", "upgrade", "--database-url", url],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )
        ratios = []
        for copies in options.copies:
            ours, theirs = measure(options, root, copies, ccusage, url)
            ratios.append((copies, ours.wall / theirs.wall, ours.cpu / theirs.cpu))
        print(
            "cachecast / ccusage (median wall, median CPU): "
            + "; ".join(f"{c} cop(ies) {w:.2f}x, {u:.2f}x" for c, w, u in ratios)
        )


if __name__ == "__main__":
    main()
