"""A log read as several passes, each in the replay order of every other command.

``compare`` and ``fleet`` read their log twice (:mod:`cachecast.economics.sizing`: a pass
for the sizing, one more for every replay at once) so that the memory follows the live cache
states, not the log: :class:`LogPasses` is such a log, each pass one :class:`LogReading`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from cachecast.core.errors import (
    BadInputError,
    CachecastError,
    Location,
    LogRecordError,
    UnknownModelError,
)
from cachecast.passes.log_input import LogInput, LogReading
from cachecast.passes.progress import Progress
from cachecast.tokenizers.registry import tokenizer_key_for
from cachecast.tokenizers.types import TokenizedRequest


def check_tokenizer(model: str | None, field: str = "tokenizer") -> None:
    """A model to tokenize the log as must have a known tokenizer: checked before reading,
    so that an unknown one is named once, as the option or field that gave it."""
    if model is None:
        return
    try:
        tokenizer_key_for(model)
    except UnknownModelError as error:
        raise UnknownModelError(error.message, location=Location(field=field)) from None


READ_LABEL = "reading"
PROGRESS_STEP = 256  # requests per progress update


class LogPasses:
    """``log`` as the :class:`~cachecast.economics.sizing.RequestLog` the self-hosted side
    reads twice: each :meth:`read` is one pass of a :class:`LogReading` (replay order,
    cache-object records too, as the replays always counted them), tokenized as
    ``tokenize_as``.

    The first pass lists the bad lines (:attr:`errors`) and refuses what
    :meth:`LogReading.finish` refuses; a later pass reads the same lines. Progress: the
    first pass is ``READ_LABEL`` counting requests as they are read (no total: lines are not
    requests), a later one is ``replay_label`` over the requests the first
    pass read: every total is what is advanced."""

    def __init__(
        self, log: LogInput, tokenize_as: str | None, progress: Progress, replay_label: str
    ) -> None:
        log.check_sources()
        check_tokenizer(tokenize_as)
        self.log = log
        self.tokenize_as = tokenize_as
        self.progress = progress
        self.replay_label = replay_label
        self.errors: list[LogRecordError] = []
        self.passes = 0
        self.requests = 0  # read by the first pass

    def read(
        self, prepare: Callable[[TokenizedRequest], TokenizedRequest] | None = None
    ) -> Iterator[TokenizedRequest]:
        first = self.passes == 0
        self.passes += 1
        reading = LogReading(self.log, self.tokenize_as)
        # Requests, not lines: the first pass counts them as it reads (no total).
        total = None if first else self.requests
        self.progress.start(READ_LABEL if first else self.replay_label, total)
        done = pending = 0
        try:
            for request in reading.requests(prepare, cache_objects=True):
                yield request
                done += 1
                pending += 1
                if pending == PROGRESS_STEP:
                    self.progress.advance(pending)
                    pending = 0
            if first:
                reading.finish()
        except BadInputError as error:
            raise reading.relocated(error) from None
        if first:
            self.errors, self.requests = reading.errors, done
        self.progress.advance(pending + (0 if total is None else max(0, total - done)))

    def relocated(self, error: BadInputError) -> CachecastError:
        """``error``, raised about one request while the log was replayed, named as the
        reader names bad records (:meth:`LogReading.relocated`)."""
        return LogReading(self.log, self.tokenize_as).relocated(error)
