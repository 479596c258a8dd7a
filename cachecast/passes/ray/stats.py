"""Where a distributed pass spends its time: seconds per stage, and per pass."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


@dataclass(slots=True)
class StageSeconds:
    """Seconds spent in each stage, summed over the tasks that ran it."""

    read: float = 0.0  # reading the file and parsing its JSON
    tokenize: float = 0.0  # rendering, encoding and keying the prompts
    shuffle: float = 0.0  # bucketing, storing, fetching and sorting the compact requests
    replay: float = 0.0  # the policies and the bills
    merge: float = 0.0  # adding the buckets' totals and ordering their rows

    def add(self, other: StageSeconds) -> None:
        for spec in dataclasses.fields(self):
            setattr(self, spec.name, getattr(self, spec.name) + getattr(other, spec.name))


@dataclass(slots=True)
class PassStats:
    """One pass: the stages' task seconds (``stages``, over every worker) and the driver's
    wall-clock seconds of the pass's two waits and its merge."""

    parts: int
    buckets: int
    requests: int
    stages: StageSeconds = field(default_factory=StageSeconds)
    tokenize_wall: float = 0.0  # from the first part submitted to the last part done
    replay_wall: float = 0.0  # from then to the last bucket done (what was left to replay)
    merge_wall: float = 0.0
    chunk_requests: int = 0
    streamed: int = 0  # buckets replayed as their chunks came (``BucketReplay``)
    replayed_again: int = 0  # buckets whose streamed replay was dropped (out of order)
