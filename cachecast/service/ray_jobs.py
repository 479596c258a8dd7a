"""A service job run on a Ray cluster: one remote task per job, its runner only waiting.

The task runs the same handler as a runner thread would (``run_estimate_job``) and streams
its progress back (``passes.progress.progress_events``); the runner advances the job's row with
it, so its heartbeat, progress, cancellation and shutdown work as for a job run in-process:
when the job is cancelled or the runner stops, the task is cancelled too.

The task refuses tokenizer directories named by a client, as runner threads do. Its workers
need the contract database URL.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from cachecast.contracts import ContractStore
from cachecast.core.errors import InternalError, MissingExtraError
from cachecast.core.limits import Limits
from cachecast.passes.progress import progress_events
from cachecast.service.estimating import run_estimate_job
from cachecast.service.jobs import JobInputError, ProgressCallback
from cachecast.tokenizers import refuse_local_tokenizer_directories

try:
    import ray
except ModuleNotFoundError as error:  # an optional extra
    raise MissingExtraError("CACHECAST_RAY_ADDRESS", "distributed", "ray") from error

POLL_SECONDS = 0.5
HANDLERS = {"estimate": run_estimate_job}


@ray.remote
def _run_job(
    database_url: str, kind: str, payload: Mapping[str, Any], limits: Limits | None
) -> Iterator[int | tuple[str, dict[str, Any]]]:
    """Progress counts, then ("done", result) or ("input-error", problem)."""

    def work(progress: ProgressCallback) -> tuple[str, dict[str, Any]]:
        # Jobs come from clients: never a tokenizer directory on this machine.
        refuse_local_tokenizer_directories()
        try:
            return "done", HANDLERS[kind](
                ContractStore(database_url), payload, progress, limits=limits
            )
        except JobInputError as error:  # its own constructor: sent back as its problem
            return "input-error", error.problem

    yield from progress_events(work, POLL_SECONDS)


def run_on_ray(
    address: str,
    database_url: str,
    kind: str,
    payload: Mapping[str, Any],
    progress: ProgressCallback,
    limits: Limits | None = None,
) -> dict[str, Any]:
    """Run one job on the cluster at ``address`` under the service's ``limits``, relaying
    its progress to ``progress`` (which raises when the job is cancelled or the runner stops:
    the task is cancelled)."""
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False)
    task: Any = _run_job.remote(database_url, kind, dict(payload), limits)
    try:
        while True:
            ready, _ = ray.wait([task], timeout=POLL_SECONDS)
            if not ready:
                progress(0)  # lets a cancellation or a shutdown through
                continue
            try:
                value = ray.get(next(task))
            except StopIteration:
                raise InternalError("the job's Ray task ended without a result") from None
            if isinstance(value, int):
                progress(value)
                continue
            outcome, body = value
            if outcome == "input-error":
                raise JobInputError(body)
            result: dict[str, Any] = body
            return result
    except BaseException:
        ray.cancel(task, force=True)
        raise
