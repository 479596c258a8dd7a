"""A pass of ``estimate`` partitioned over a Ray cluster, with the single-process answer exactly.

:class:`executor.RayExecutor` is an executor of ``usecases.estimate`` (the pipeline around it,
from target resolution to the report, is the same code as in one process). One pass, in
three stages:

1. **Tokenize and shuffle** (:func:`shipping.tokenize_and_shuffle`: one Ray task per *part*,
   a streaming generator). A part (:mod:`planning`) is a whole log file, or for cachecast
   JSON lines a byte range of one cut at line starts (``logs.ranges``), so that several
   workers share a large file; parts are about ``1 / (PARTS_PER_CPU * CPUs)`` of the log,
   or for a log of one file parts that get smaller towards its end
   (:func:`planning.tapered_cuts`: less is left to replay once the tokenizing ends). A pass
   of an approximate tokenizer reads whole files, all of them in one part (merged by
   timestamp, as one process reads them): the files that share a cache share its
   calibration, and a segment keeps the size the first count read gave it. A task
   reads and tokenizes its part exactly as one process does
   (``LogReading.source_requests``), computes each request's partition key
   (``partition.partition_key``) and, where the replay does not read the ids, the keys the
   replay's policies will look up instead of them (``simulator.compact``: 16 bytes per
   block instead of 4 bytes per token). Where the replay reads the ids (explaining misses
   compares each prompt's ids with earlier ones), they travel instead of keys (the replay's
   policies key them as one process does), a prompt that extends its session's previous
   one in the bucket as its new ids only (``ordering.PromptPacker.extension``), and its
   segments as those the previous one did not have (:class:`shipping.SegmentsSender`).
   Every ``chunk_requests`` requests it yields, per replayer, the lists of its shuffle
   buckets, pickled in one call (:func:`shipping.pack_chunks`); a worker holds one chunk at
   a time, the chunks wait in Ray's object store.
2. **Replay** (:class:`replayers.BucketReplay`, on replayer actors: one process per CPU,
   kept from pass to pass). The driver hands each chunk to its buckets' replayer as it
   comes, part after part in plan order. A bucket is replayed in the single-process order
   (timestamp, file position in the argument list, line) through every target's policy with
   the same priced replay (``simulator.pricing.replay_targets``). For a pass over one file
   its chunks are replayed as they come, while later parts are still being tokenized, as
   long as each sorts after what was replayed before it; a chunk that goes back in time
   makes its bucket replayed again, sorted, once every chunk is in
   (``PassStats.replayed_again``). A replayer asks for no CPU: it works while the
   tokenizing tasks hold the CPUs (the host shares its cores), so the replay of the hottest
   bucket (one prompt prefix shared by all the traffic is one partition: it cannot be
   split) overlaps the tokenizing instead of following it. A replayer holds its buckets'
   requests: about ``1 / replayers`` of the log's keys and new ids (more when one prompt
   prefix dominates the traffic).
3. **Merge** (:meth:`executor.RayExecutor.run_pass`): totals are sums (integers and exact
   decimals), so they merge in any order; per-request rows are merged back into the
   single-process order.

A record without a timestamp takes the previous record's. A part that starts inside a file
does not know that one, so it reads its records with NaN for it; those records get, as
their chunk is handed on, the last timestamp of the parts before theirs (what one process
reading the whole file would have given them).

Exact because hosted contracts have no shared capacity (see ``partition``); a policy with a
capacity is refused (``CoupledCacheError``). Unlike one process, a partitioned run sorts fully,
so it also accepts logs whose requests are further out of order than the reorder window.

Each pass's time by stage (read, tokenize, shuffle, replay, merge) is kept in
:attr:`executor.RayExecutor.stats` (:class:`stats.PassStats`).

Workers need the log files at the same paths (a shared filesystem on a real cluster) and the
contract database URL (to reconcile observed usage against the logged model). Only files can
be partitioned: inline records are refused.

Ray is an optional extra: importing any module here without it is a ``MissingExtraError``.
"""

from __future__ import annotations

from cachecast.core.errors import MissingExtraError

try:
    import ray  # noqa: F401  (every module of the package imports it)
except ModuleNotFoundError as error:  # an optional extra
    raise MissingExtraError("--ray", "distributed", "ray") from error
