"""Compressed log files (``.gz``, ``.zst``, ``.bz2``, ``.xz``), read as users keep them.

A compressed file is inflated, streamed in pieces, into a temporary file beside nothing
else of the user's, and read from there like any other log (every reader works on a
seekable file); at most ``max_decompressed_bytes`` per file (docs/limits.md), checked
piece by piece, so that a small bomb stops within one piece of the bound. The kind is told
by the magic number, not the name (a ``.gz`` that is plain text is read as it is; Ruby
VCR's ``compressed`` serializer writes *zlib* data under a ``.gz`` name, told by zlib's
header: ``78 9c`` / ``78 da`` / ``78 01``, bytes no text file starts with). The temporary
file is removed when the stream that reads it is collected, and at exit at the latest.
"""

from __future__ import annotations

import atexit
import bz2
import contextlib
import errno
import gzip
import lzma
import os
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from cachecast.core.errors import InsufficientStorageError, Location
from cachecast.core.limits import current, exceeded
from cachecast.logs.errors import LogFileError

SUFFIXES = (".gz", ".gzip", ".zst", ".zstd", ".bz2", ".xz")
_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    # zlib (RFC 1950) with deflate at the default, best and fastest levels: an "x" followed
    # by a byte that is not UTF-8 text, so no text log is taken for one.
    (b"\x78\x9c", "zlib"),
    (b"\x78\xda", "zlib"),
    (b"\x78\x01", "zlib"),
)
_PIECE = 1 << 20
_MADE: set[str] = set()
# A full disk, a quota or a file-size limit on the temporary folder: the machine's limit,
# not a fault of the log (docs/errors.md, "insufficient-storage").
_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def compression_of(path: Path) -> str | None:
    """``gzip``, ``zstd``, ``bzip2``, ``xz`` or None (not compressed)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(6)
    except OSError:
        return None
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    return None


def inner_name(path: Path) -> str:
    """The file's name without its compression suffix (``a.jsonl.gz`` -> ``a.jsonl``)."""
    return path.stem if path.suffix.lower() in SUFFIXES else path.name


def decompressed_copy(path: Path, kind: str, source: str) -> Path:
    """The inflated content of ``path`` in a temporary file (see the module docstring)."""
    limit = current().max_decompressed_bytes
    handle, name = tempfile.mkstemp(prefix="cachecast-", suffix=f"-{inner_name(path)}")
    _MADE.add(name)
    written = 0
    try:
        with os.fdopen(handle, "wb") as out, _reader(path, kind, source) as read:
            while piece := read(_PIECE):
                written += len(piece)
                if written > limit:
                    raise exceeded(
                        "max_decompressed_bytes",
                        written,
                        field=None,
                        what=f"{source}: a compressed log inflating past a size of",
                    )
                out.write(piece)
    except OSError as exc:
        remove(name)
        if exc.errno in _NO_ROOM:  # a write or the closing flush of the copy
            raise InsufficientStorageError(
                f"no room left in the temporary folder {os.path.dirname(name)} to inflate"
                f" the compressed log ({os.strerror(exc.errno)}, {written:,} bytes"
                " inflated); free space there, or set TMPDIR to a folder with room",
                location=Location(source=source, field="<file>"),
            ) from None
        raise LogFileError(source, f"cannot decompress the {kind} file: {exc}") from None
    except (EOFError, lzma.LZMAError, zlib.error, ValueError) as exc:
        remove(name)
        raise LogFileError(source, f"cannot decompress the {kind} file: {exc}") from None
    except BaseException:
        remove(name)
        raise
    return Path(name)


def head(path: Path, kind: str, source: str, size: int) -> tuple[bytes, bool]:
    """The first ``size`` inflated bytes of ``path`` (a format sniffed without inflating the
    whole file), and whether they are all of it."""
    out = bytearray()
    try:
        with _reader(path, kind, source) as read:
            while len(out) < size and (piece := read(min(_PIECE, size - len(out)))):
                out += piece
            at_end = len(out) < size or not read(1)
    except (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError) as exc:
        raise LogFileError(source, f"cannot decompress the {kind} file: {exc}") from None
    return bytes(out), at_end


_OPENERS: dict[str, Callable[[Path], Any]] = {  # file objects opened for reading
    "gzip": gzip.GzipFile,  # members back to back: one stream
    "bzip2": bz2.BZ2File,
    "xz": lzma.LZMAFile,
}


# Compressed bytes per zstd call: at most 128 MiB inflated per call (decoding.zstd_pieces).
_ZSTD_PIECE = 4096


class _PieceReader:
    """Inflated pieces (an iterator of bytes) read ``size`` bytes at a time."""

    def __init__(self, pieces: Iterator[bytes]) -> None:
        self._pieces = pieces
        self._piece = b""
        self._at = 0

    def read(self, size: int) -> bytes:
        if self._at >= len(self._piece):
            self._piece, self._at = next(self._pieces, b""), 0
        out = self._piece[self._at : self._at + size]
        self._at += len(out)
        return out


class _ZlibReader:
    """A zlib stream read in pieces of at most ``size`` inflated bytes (the standard library
    has a file object for gzip, bzip2 and xz, not for bare zlib)."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._decoder = zlib.decompressobj()
        self._pending = b""

    def read(self, size: int) -> bytes:
        while True:
            if self._decoder.eof:
                return b""
            if not self._pending:
                self._pending = self._raw.read(_PIECE)
                if not self._pending:
                    out = self._decoder.flush()
                    if not self._decoder.eof:
                        raise zlib.error("the compressed data ends early")
                    return out
            out = self._decoder.decompress(self._pending, size)
            self._pending = self._decoder.unconsumed_tail
            if out:
                return out


@contextlib.contextmanager
def _reader(path: Path, kind: str, source: str) -> Iterator[Callable[[int], bytes]]:
    if kind == "zlib":
        with path.open("rb") as raw:
            yield _ZlibReader(raw).read
        return
    opener = _OPENERS.get(kind)
    if opener is not None:
        with opener(path) as opened:
            yield opened.read
        return
    from cachecast.logs.decoding import zstd_pieces  # (and yaml): for zstd files only

    with path.open("rb") as raw:
        yield _PieceReader(zstd_pieces(raw.read, _ZSTD_PIECE)).read


def remove(name: str) -> None:
    _MADE.discard(name)
    with contextlib.suppress(OSError):
        os.unlink(name)


@atexit.register
def _remove_all() -> None:
    for name in list(_MADE):
        remove(name)
