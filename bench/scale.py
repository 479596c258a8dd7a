"""Throughput of ``estimate`` partitioned on Ray with 1, 2 and N workers, in one run.

    .venv/bin/python -m bench.scale [--files 8] [--requests-per-file 1500] [--workers 1 2 4]

(``-m``: run as ``bench/scale.py``, the sibling ``bench/tokenize.py`` would shadow the
standard library module of that name.)

Baseline: the single-process ``estimate`` on the same logs, measured in the same run;
every figure is printed as requests/s and as a ratio to that baseline. Each worker count
gets a fresh local Ray cluster (``num_cpus`` = workers); cluster start-up and worker
process start-up (a warm-up task per CPU) are not timed, the tokenize-shuffle-replay-merge
is. The partitioned report is checked equal to the single-process one every time.

Workload: generated multi-tenant chat logs (tokenized with tiktoken's o200k_base, priced
under openai:gpt-4o), one file per ``--files``: the tokenize stage runs one task per file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import tempfile
import time
from pathlib import Path

from cachecast.simulator.distributed.local_cluster import bind_local_cluster_to_loopback

bind_local_cluster_to_loopback()  # before ray is imported: the bench's clusters are local

import ray

from cachecast import db
from cachecast.app.estimate import EstimateRequest, estimate
from cachecast.app.logs import LogInput
from cachecast.app.ray_executor import RayExecutor, wait_for_cluster
from cachecast.contracts import ContractStore

AT = dt.date(2026, 11, 1)
TARGETS = ["openai:gpt-4o"]


def write_logs(directory: Path, files: int, per_file: int) -> list[Path]:
    rng = random.Random(7)
    system = "You are a careful assistant for a logistics firm. " * 60
    paths = []
    for index in range(files):
        histories: dict[str, list[dict[str, str]]] = {}
        lines = []
        for number in range(per_file):
            tenant = f"org-{rng.randrange(20)}"
            session = f"{tenant}/s{rng.randrange(30)}"
            history = histories.setdefault(session, [{"role": "system", "content": system}])
            question = " ".join(f"w{rng.randrange(5000)}" for _ in range(rng.randrange(20, 200)))
            history.append({"role": "user", "content": question})
            record = {
                "timestamp": 1_767_600_000 + number,
                "scope": tenant,
                "session": session,
                "model": "gpt-4o",
                "request_id": f"f{index}-{number}",
                "request": {"model": "gpt-4o", "messages": list(history)},
                "output_tokens": 50,
            }
            lines.append(json.dumps(record))
            history.append({"role": "assistant", "content": "Noted: " + question[:80]})
            if len(history) > 24:
                del histories[session]
        path = directory / f"log-{index:03d}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


@ray.remote
def _warm() -> int:
    return os.getpid()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--requests-per-file", type=int, default=1500)
    parser.add_argument("--workers", type=int, nargs="+", default=None)
    args = parser.parse_args()
    cpus = os.cpu_count() or 1
    worker_counts = args.workers or sorted({1, 2, cpus})

    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder)
        url = f"sqlite:///{directory / 'contracts.db'}"
        db.upgrade(url)
        store = ContractStore(url)
        paths = write_logs(directory, args.files, args.requests_per_file)
        requests = args.files * args.requests_per_file
        print(f"workload: {args.files} files x {args.requests_per_file} requests, {cpus} CPUs")

        started = time.perf_counter()
        request = EstimateRequest(log=LogInput.of_paths(paths), targets=TARGETS, at=AT)
        single = estimate(request, store).model_dump(mode="json")
        baseline = requests / (time.perf_counter() - started)
        print(f"single process   {baseline:9.1f} req/s   1.00x")

        for workers in worker_counts:
            ray.init(
                num_cpus=workers,
                object_store_memory=200 * 1024 * 1024,
                include_dashboard=False,
                log_to_driver=False,
            )
            try:
                wait_for_cluster(workers)
                ray.get([_warm.remote() for _ in range(workers)])
                started = time.perf_counter()
                report = estimate(
                    request, store, executor=RayExecutor(buckets=4 * workers)
                ).model_dump(mode="json")
                rate = requests / (time.perf_counter() - started)
            finally:
                ray.shutdown()
            same = "equal" if report == single else "DIFFERENT"
            print(
                f"ray {workers:>2} worker(s) {rate:9.1f} req/s   {rate / baseline:.2f}x"
                f"   (report {same} to single process)"
            )


if __name__ == "__main__":
    main()
