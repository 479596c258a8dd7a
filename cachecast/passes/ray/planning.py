"""The parts a distributed pass reads: whole files, or byte ranges of cachecast JSON lines.

A part is read and tokenized by one Ray task (:func:`shipping.tokenize_and_shuffle`). Large
cachecast JSON-lines files are cut at line starts (``logs.ranges``) so that several workers
share them; a log of one file is cut into parts that get smaller towards its end
(:func:`tapered_cuts`).
"""

from __future__ import annotations

from dataclasses import dataclass

import ray

from cachecast.logs import detect_format
from cachecast.logs.compressed import compression_of
from cachecast.logs.errors import LogFileError
from cachecast.logs.ranges import SPLITTABLE_FORMATS, LineRange, split_at, split_lines
from cachecast.passes.log_input import LogInput

PARTS_PER_CPU = 2  # a few parts per CPU even out parts that tokenize slower than others
MIN_PART_BYTES = 4 * 1024 * 1024  # below this a part's fixed costs outweigh the split


@dataclass(frozen=True, slots=True)
class LogPart:
    """A whole file (``lines`` None: read by its format's reader) or one range of it; or
    (``file_index`` None) every file of the log, read together as one process reads them."""

    index: int  # position among all the pass's parts
    file_index: int | None
    lines: LineRange | None


def default_part_bytes(log: LogInput) -> int:
    """``PARTS_PER_CPU`` parts per CPU of the cluster over the whole log, at least
    :data:`MIN_PART_BYTES` each."""
    cpus = cluster_cpus()
    total = sum(file.path.stat().st_size for file in log.files)
    return max(MIN_PART_BYTES, -(-total // max(PARTS_PER_CPU * cpus, 1)))


def plan_parts(
    log: LogInput,
    part_bytes: int,
    *,
    split: bool = True,
    taper: int | None = None,
    together: bool = False,
) -> list[LogPart]:
    """Every file as one part, except (``split``) cachecast JSON lines over ``part_bytes``,
    cut into ranges of about that size (see ``logs.ranges``); ``taper``: a log of one file
    is cut into parts that get smaller towards its end instead, for that many CPUs
    (:func:`tapered_cuts`). ``together``: the files are one part, read as one process reads
    them (a calibration shared by the files that share a cache: ``passes.log_input``)."""
    if together and len(log.files) > 1:
        return [LogPart(0, None, None)]
    parts: list[LogPart] = []
    for file_index, file in enumerate(log.files):
        ranges: list[LineRange | None] = [None]
        size = file.path.stat().st_size
        if split and size > part_bytes and file.results is None and _splittable(log, file_index):
            if taper is not None and len(log.files) == 1:
                ranges = list(split_at(file.path, tapered_cuts(size, taper, MIN_PART_BYTES)))
            else:
                ranges = list(split_lines(file.path, -(-size // part_bytes)))
        parts.extend(LogPart(len(parts) + n, file_index, lines) for n, lines in enumerate(ranges))
    return parts


def tapered_cuts(size: int, cpus: int, smallest: int) -> list[int]:
    """Byte offsets that cut ``size`` bytes into parts, each ``1 / (2 * cpus)`` of the bytes
    from its start on, down to ``smallest`` (guided self-scheduling).

    Why: a one-file pass replays its parts in file order while later ones are tokenized, so
    the chunks of a part that is tokenized beside an earlier one wait until that one is
    done, and what the last parts hold is replayed after every CPU has finished
    tokenizing: the pass's tail. Equal parts leave ``1 / parts`` of the log to that tail;
    tapered ones a part of ``smallest`` bytes or so, at the cost of a few more parts (each
    starts its sessions' prompts afresh)."""
    cuts: list[int] = []
    position = 0
    while True:
        remaining = size - position
        step = remaining // max(2 * cpus, 1)
        if step < smallest:  # the rest in equal parts of ``smallest`` bytes at least
            count = max(remaining // max(smallest, 1), 1)
            cuts += [position + remaining * number // count for number in range(1, count)]
            return cuts
        position += step
        cuts.append(position)


def _splittable(log: LogInput, file_index: int) -> bool:
    file = log.files[file_index]
    if compression_of(file.path) is not None:
        return False  # a compressed file is read whole, inflated (logs.compressed)
    if file.format is not None:
        return file.format in SPLITTABLE_FORMATS
    try:
        found, _ = detect_format(file.path)  # from the file's first lines (no parse of it all)
    except LogFileError:
        return False  # the part's task reports it as one process would
    return found.name in SPLITTABLE_FORMATS


def cluster_cpus() -> int:
    """The CPUs of the cluster this process is connected to (at least 1)."""
    return max(int(ray.cluster_resources().get("CPU", 1)), 1)  # type: ignore[no-untyped-call]
