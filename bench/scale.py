"""Throughput of ``estimate`` on Ray against one process, on a text agent log, in one run.

    .venv/bin/python -m bench.scale [--sessions 600] [--files 1] [--workers 1 2]
                                    [--repeats 3] [--modes one-thread defaults]

(``-m``: run as ``bench/scale.py``, the sibling ``bench/tokenize.py`` would shadow the
standard library module of that name.)

Workload: a text agent log (``bench.agent_traffic``: the example agent log's generator,
``--sessions`` sessions; OpenAI Chat Completions bodies, not pre-tokenized), priced under
``--targets`` (default openai:gpt-4o). One file by default: Ray's tokenizing tasks then
share it by byte ranges; ``--files N`` deals it over N files instead.

Baseline: the single-process ``estimate`` on the same log, measured in the same run, in a
process of its own that never imports Ray (as ``cachecast estimate`` runs: Ray's modules
make every full collection of the garbage collector longer, about 10% of a pass). Each
mode runs in its own process, so that its environment holds from the start:

* ``one-thread``: every side held to one thread: the tokenizer's encoding thread off
  (``CACHECAST_TOKENIZER_THREADS=1``), BLAS/OpenMP/Rayon pools at 1, in the baseline and in
  every Ray worker (they inherit the environment; Ray's own gRPC threads cannot be set);
* ``defaults``: nothing set (the single process starts the tokenizer's encoding thread
  when a core is idle; a Ray tokenizing task, which holds one CPU, encodes in its own
  thread unless ``CACHECAST_TOKENIZER_THREADS`` says otherwise).

For each worker count, a fresh local Ray cluster (``num_cpus`` = workers); cluster start-up,
worker start-up and one warm-up estimate (imports, tokenizer files) are not timed. Then
``--repeats`` times the baseline and the Ray run, alternated (so that both see the same load
from whatever else runs on the host), and the best of each. Every timed report is checked
equal to the single-process report, and the warm-up run's per-request rows to the
baseline's rows. Printed: requests/s, the ratio of the bests, the spread of the runs (and of
each Ray run's ratio to the single run just before it), and the stages of the best Ray run
(task seconds summed over workers and replayers, the driver's wall-clock seconds until the
last part was tokenized and from then until the last bucket was replayed; how many buckets
were replayed as their chunks came).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.agent_traffic import split_round_robin, write_agent_log

AT = dt.date(2026, 11, 1)
ONE_THREAD_ENV = {
    "CACHECAST_TOKENIZER_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "RAYON_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
MODES = ("one-thread", "defaults")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sessions", type=int, default=600)
    parser.add_argument("--files", type=int, default=1)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--targets", nargs="+", default=["openai:gpt-4o"])
    parser.add_argument(
        "--no-miss-causes",
        action="store_true",
        help="estimate without miss causes: workers then ship block keys, not token ids",
    )
    parser.add_argument(
        "--executor",
        nargs="*",
        default=[],
        metavar="NAME=VALUE",
        help="RayExecutor options for the Ray runs (chunk_requests, part_bytes, buckets),"
        " to compare settings",
    )
    parser.add_argument("--run-mode", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--baseline", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline:
        serve_baseline(args)
        return
    if args.run_mode is not None:
        run_mode(args)
        return
    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder)
        started = time.perf_counter()
        log = directory / "agent.jsonl"
        requests = write_agent_log(log, args.sessions)
        paths = split_round_robin(log, args.files)
        if len(paths) > 1:
            log.unlink()
        size = sum(path.stat().st_size for path in paths)
        print(
            f"workload: text agent log, {requests:,} requests, {size / 1e6:.1f} MB in"
            f" {len(paths)} file(s), targets {' '.join(args.targets)}; {os.cpu_count()} CPUs;"
            f" built in {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        from cachecast.core import db

        db.upgrade(f"sqlite:///{directory / 'contracts.db'}")
        for mode in args.modes:
            env = dict(os.environ)
            if mode == "one-thread":
                env.update(ONE_THREAD_ENV)
            command = [sys.executable, "-m", "bench.scale", "--run-mode", mode]
            command += ["--folder", str(directory), "--repeats", str(args.repeats)]
            command += ["--workers", *map(str, args.workers), "--targets", *args.targets]
            command += ["--no-miss-causes"] if args.no_miss_causes else []
            command += ["--executor", *args.executor] if args.executor else []
            subprocess.run(command, env=env, check=True)


def estimate_request(args: argparse.Namespace) -> Any:
    """The bench's ``EstimateRequest`` over the log files in ``args.folder``."""
    from cachecast.passes.log_input import LogInput
    from cachecast.usecases.estimate import EstimateRequest

    return EstimateRequest(
        log=LogInput.of_paths(sorted(args.folder.glob("agent*.jsonl"))),
        targets=args.targets,
        at=AT,
        explain_misses=not args.no_miss_causes,
    )


def serve_baseline(args: argparse.Namespace) -> None:
    """The single process, in a process of its own (Ray never imported): one line on stdin
    per run ("estimate", or "read": reading and tokenizing alone), one JSON line back."""
    import json

    from cachecast.contracts import ContractStore
    from cachecast.passes.log_input import LogReading
    from cachecast.usecases.estimate import estimate, plan_estimate

    store = ContractStore(f"sqlite:///{args.folder / 'contracts.db'}")
    request = estimate_request(args)
    tokenize_as = plan_estimate(request, store)[2][0].tokenize_as
    for command in sys.stdin:
        started = time.perf_counter()
        if command.strip() == "read":
            read_all(LogReading(request.log, tokenize_as))
            report = None
        else:
            report = estimate(request, store).model_dump(mode="json")
        answer = {"seconds": time.perf_counter() - started, "report": report}
        print(json.dumps(answer), flush=True)
    if "ray" in sys.modules:
        raise SystemExit("the baseline process imported ray")


class Baseline:
    """The baseline process (:func:`serve_baseline`), run after run."""

    def __init__(self, args: argparse.Namespace) -> None:
        command = [sys.executable, "-m", "bench.scale", "--baseline"]
        command += ["--folder", str(args.folder), "--targets", *args.targets]
        command += ["--no-miss-causes"] if args.no_miss_causes else []
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, what: str = "estimate") -> tuple[float, Any]:
        """(seconds, the report as JSON or None for "read")."""
        import json

        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(what + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit("the baseline process ended")
        answer = json.loads(line)
        return float(answer["seconds"]), answer["report"]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        if self.process.wait() != 0:
            raise SystemExit("the baseline process failed")


def run_mode(args: argparse.Namespace) -> None:
    """One mode, in this process (its environment set by the parent)."""
    from cachecast.simulator.distributed.local_cluster import bind_local_cluster_to_loopback

    bind_local_cluster_to_loopback()  # before ray is imported: the bench's clusters are local

    import ray

    from cachecast.contracts import ContractStore
    from cachecast.passes.ray.executor import RayExecutor, wait_for_cluster
    from cachecast.simulator.pricing import PerRequestRow
    from cachecast.usecases.estimate import estimate

    directory: Path = args.folder
    store = ContractStore(f"sqlite:///{directory / 'contracts.db'}")
    paths = sorted(directory.glob("agent*.jsonl"))
    request = estimate_request(args)
    print(f"\n[{args.run_mode}]", flush=True)

    single_rows: list[PerRequestRow] = []
    single = estimate(request, store, on_row=single_rows.append).model_dump(mode="json")
    expected_rows = [row.as_record() for row in single_rows]
    del single_rows
    requests = single["targets"][0]["requests"]
    tokens = single["targets"][0]["input_tokens"]
    size = sum(path.stat().st_size for path in paths)
    baseline_process = Baseline(args)
    if baseline_process.run()[1] != single:  # also its warm-up (imports, tokenizer files)
        raise SystemExit("the baseline process's report DIFFERS")
    reading = min(baseline_process.run("read")[0] for _ in range(args.repeats))
    print(
        f"{tokens:,} prompt tokens ({tokens / requests:,.0f} a request);"
        f" single process, reading and tokenizing alone: {reading:.2f} s"
        f" ({size / reading / 1e6:.1f} MB/s, {tokens / reading / 1e6:.1f} M tokens/s)",
        flush=True,
    )

    @ray.remote
    def worker_setting() -> str:
        return os.environ.get("CACHECAST_TOKENIZER_THREADS", "unset")

    for workers in args.workers:
        ray.init(
            address="local",  # a cluster of its own, never one another program started
            num_cpus=workers,
            object_store_memory=300 * 1024 * 1024,
            include_dashboard=False,
            log_to_driver=False,
        )
        try:
            wait_for_cluster(workers)
            warm_rows: list[PerRequestRow] = []
            options = executor_options(args.executor)
            warm = estimate(
                request, store, executor=RayExecutor(**options), on_row=warm_rows.append
            )
            # After the warm-up: what the tokenizing tasks run with.
            settings = set(ray.get([worker_setting.remote() for _ in range(workers)]))
            rows_equal = [row.as_record() for row in warm_rows] == expected_rows
            if warm.model_dump(mode="json") != single or not rows_equal:
                raise SystemExit(f"ray {workers}: the warm-up report or rows DIFFER")
            del warm_rows
            # Alternated, so that both see the same load from whatever else runs here.
            executors: list[RayExecutor] = []
            single_times: list[float] = []
            ray_times: list[float] = []
            on_ray = ray_run(request, store, executors, options)
            load_before = os.getloadavg()[0]
            for _ in range(args.repeats):
                seconds, report = baseline_process.run()
                if report != single:
                    raise SystemExit("a timed report DIFFERS from the single-process report")
                single_times.append(seconds)
                best_of(1, on_ray, single, ray_times)
        finally:
            ray.shutdown()
        baseline, seconds = min(single_times), min(ray_times)
        # Other programs on a shared host take CPUs from both sides: say how busy it was.
        busy = f"host load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
        stats = executors[ray_times.index(seconds)].stats[0]
        stages = stats.stages
        ratios = [single / ray for single, ray in zip(single_times, ray_times, strict=True)]
        print(
            f"single process    {requests / baseline:9.1f} req/s   1.00x   ({baseline:.2f} s,"
            f" {tokens / baseline / 1e6:.1f} M tokens/s; runs {spread(single_times)} s;"
            " a process of its own, Ray not imported)\n"
            f"ray {workers:>2} worker(s)  {requests / seconds:9.1f} req/s"
            f"   {baseline / seconds:.2f}x"
            f"   ({seconds:.2f} s, runs {spread(ray_times)} s; each run against the single"
            f" run before it {spread(ratios, 'x')}, median {statistics.median(ratios):.2f}x;"
            " report and per-request rows equal to the"
            f" single process; worker CACHECAST_TOKENIZER_THREADS={','.join(sorted(settings))};"
            f" chunks of {stats.chunk_requests} requests)\n"
            f"    stages, task seconds over all workers: read {stages.read:.2f}"
            f"  tokenize {stages.tokenize:.2f}  shuffle {stages.shuffle:.2f}"
            f"  replay {stages.replay:.2f}  merge {stages.merge:.3f}"
            f"  (replay {tokens / max(stages.replay, 1e-9) / 1e6:.0f} M tokens/s a CPU)\n"
            f"    driver wall seconds: read+tokenize+shuffle {stats.tokenize_wall:.2f}"
            f"  replay {stats.replay_wall:.2f}  merge {stats.merge_wall:.3f}"
            f"  ({stats.parts} parts, {stats.buckets} buckets, {stats.streamed} replayed as"
            f" their chunks came, {stats.replayed_again} again; {busy})",
            flush=True,
        )
    baseline_process.close()


def executor_options(given: list[str]) -> dict[str, Any]:
    """``["chunk_requests=256", ...]`` as RayExecutor keyword arguments."""
    options: dict[str, Any] = {}
    for item in given:
        name, _, value = item.partition("=")
        if name not in ("chunk_requests", "part_bytes", "buckets"):
            raise SystemExit(f"--executor: unknown option {name!r}")
        options[name] = int(value)
    return options


def ray_run(request: Any, store: Any, executors: list[Any], options: dict[str, Any]) -> Any:
    """One Ray estimate per call, each executor kept for its stage figures."""
    from cachecast.passes.ray.executor import RayExecutor
    from cachecast.usecases.estimate import estimate

    def run() -> dict[str, Any]:
        executors.append(RayExecutor(**options))
        report = estimate(request, store, executor=executors[-1])
        return report.model_dump(mode="json")

    return run


def spread(values: list[float], unit: str = "") -> str:
    """'2.10-2.45' (the lowest and highest of ``values``)."""
    return f"{min(values):.2f}{unit}-{max(values):.2f}{unit}"


def best_of(
    repeats: int,
    run: Any,
    expected: dict[str, Any] | None,
    timings: list[float] | None = None,
) -> float:
    """The fastest of ``repeats`` runs (each checked against ``expected``)."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        result = run()
        elapsed = time.perf_counter() - started
        if expected is not None and result != expected:
            raise SystemExit("a timed report DIFFERS from the single-process report")
        if timings is not None:
            timings.append(elapsed)
        best = min(best, elapsed)
    return best


def read_all(reading: Any) -> None:
    """Read and tokenize the log as one pass does, replaying nothing."""
    for _ in reading.requests():
        pass


if __name__ == "__main__":
    main()
