"""A real local Ray cluster (a head plus two worker nodes on loopback) and test logs."""

from __future__ import annotations

import json
import random
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from cachecast.simulator.distributed.local_cluster import bind_local_cluster_to_loopback
from cachecast.tokenizers.types import Segment, TokenizedRequest

# Before any test module of this folder imports ray (through the runner).
bind_local_cluster_to_loopback()

WORKER_NODES = 2
OBJECT_STORE_BYTES = 100 * 1024 * 1024


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """Head node without CPUs (so every task runs on a worker) plus two one-CPU workers.

    Every node binds to 127.0.0.1: Ray would otherwise pick the machine's outward address.
    """
    import ray
    from ray.cluster_utils import Cluster

    from cachecast.passes.ray.executor import wait_for_cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 0,
            "object_store_memory": OBJECT_STORE_BYTES,
            "include_dashboard": False,
        },
    )
    for _ in range(WORKER_NODES):
        cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE_BYTES)
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        wait_for_cluster(WORKER_NODES)
        yield cluster.address
    finally:
        ray.shutdown()
        cluster.shutdown()


SHARED_SYSTEM = (
    "You are a support agent for a parcel company. Answer briefly, cite the order number,"
    " never invent tracking events, and escalate refunds above 100 euros. "
) * 40  # about 1,000+ tokens: long enough to pass the 1,024-token minimum with a turn


def write_multi_tenant_logs(directory: Path, *, files: int = 2, requests: int = 240) -> list[Path]:
    """Several tenants (scopes) and two models sharing the *same* system prompt text, with
    growing sessions; spread round-robin over ``files`` files, each in timestamp order."""
    rng = random.Random(20261202)
    tenants = [f"org-{n}" for n in range(4)]
    models = ["gpt-4o", "gpt-4.1"]
    sessions: dict[str, list[dict[str, str]]] = {}
    lines: list[list[str]] = [[] for _ in range(files)]
    for number in range(requests):
        tenant = rng.choice(tenants)
        model = rng.choice(models)
        session = f"{tenant}/{model}/s{rng.randrange(6)}"
        history = sessions.setdefault(session, [{"role": "system", "content": SHARED_SYSTEM}])
        history.append({"role": "user", "content": f"Where is order {rng.randrange(10**6)}?"})
        record = {
            "timestamp": 1_767_600_000 + number // 3,  # ties on purpose: 3 per second
            "scope": tenant,
            "session": session,
            "model": model,
            "request_id": f"r{number}",
            "request": {"model": model, "messages": list(history)},
            "output_tokens": 20,
        }
        history.append({"role": "assistant", "content": f"Order {number} is on its way."})
        lines[number % files].append(json.dumps(record))
    paths = []
    for index, file_lines in enumerate(lines):
        path = directory / f"tenants-{index}.jsonl"
        path.write_text("\n".join(file_lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def shipped_request(
    session: str | None,
    line: int,
    *,
    ids: Sequence[int] | None = None,
    segments: tuple[Segment, ...] = (),
) -> TokenizedRequest:
    """A tiny request of ``log.jsonl`` for the shipping tests: its ids (as the tokenizer
    gives them, an ``array("I")``) or only its segments (the prompt ends where they do)."""
    length = len(ids) if ids is not None else (segments[-1].end if segments else 0)
    return TokenizedRequest(
        source="log.jsonl",
        line=line,
        request_id=f"r{line}",
        timestamp=float(line),
        scope="org",
        provider=None,
        model="m",
        input_tokens=length,
        output_tokens=0,
        tokens=None if ids is None else array("I", ids),
        segments=segments,
        session=session,
    )
