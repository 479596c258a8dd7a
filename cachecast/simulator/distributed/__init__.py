"""Partitioned simulation: exact partition keys, and ``estimate`` on a Ray cluster.

``partition`` needs nothing beyond the simulator; ``runner`` imports Ray (import it only
when a distributed run is asked for).
"""

from cachecast.simulator.distributed.partition import (
    CoupledCacheError,
    PartitionKey,
    bucket_of,
    common_unit,
    partition_key,
    partition_unit,
    replay_partitioned,
)

__all__ = [
    "CoupledCacheError",
    "PartitionKey",
    "bucket_of",
    "common_unit",
    "partition_key",
    "partition_unit",
    "replay_partitioned",
]
