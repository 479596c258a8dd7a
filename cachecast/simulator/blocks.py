"""Chained block keys: the identity of a cached prefix, computed once per request.

The key of block ``i`` covers its parent's key, the token ids of block ``i`` and, through
the parent chain, everything before it. The *namespace* (model, scope, cache salt: the
things that change the KV values or separate caches) is folded into the seed that stands
in for the parent of block 0, exactly as vLLM puts ``cache_salt`` on the first block only
and lets the chain carry it.

Hash: XXH3-128 (the ``xxhash`` package) over ``parent_key || uint32 token ids``, a 16-byte
key. Why collisions are negligible: XXH3-128 is a non-cryptographic hash whose output is
indistinguishable from random on non-adversarial data (it passes SMHasher), so for N
distinct blocks the birthday bound gives a collision probability of at most
N*(N-1)/2 / 2**128. Even N = 10**12 blocks (far more than any log we replay: a million
requests of 100k tokens in 16-token blocks is 6*10**9) gives < 1.5e-15. (A 64-bit key would
already reach ~3% at N = 10**9, which is why we use 128.) Why not a cryptographic hash:
a collision here only mis-predicts one simulated hit, nobody's KV data is exposed (the
reason vLLM defaults to sha256; it offers xxhash too), and the hash is the simulator's
hot loop: XXH3 costs about a quarter of BLAKE2b per 16-token block.

Keys are ``bytes`` objects: CPython caches their hash, so dictionary lookups in the hot
loop cost one memcmp.

Block-level traces (Mooncake) already give one id per block that stands for the block and
every block before it; those ids are used directly as the chain, prefixed by the
namespace seed, so no two namespaces share a key and equal ids give equal keys.

Growing sessions resend their previous prompt: ``BlockKeyer`` remembers the last token
bytes and keys per session and reuses the keys of the longest common whole-block prefix
(checked by comparing the bytes, so the result is identical to hashing from scratch). A
request whose session shares nothing (a new session, or a log without session ids) is
compared instead with the latest prompt that opened with the same first block, which
shares its system prompt in agent traffic.
"""

from __future__ import annotations

import hashlib
from array import array
from collections import OrderedDict
from collections.abc import Sequence

from xxhash import xxh3_128_digest

from cachecast.core.errors import BadInputError, Location
from cachecast.tokenizers.sequences import common_prefix_length
from cachecast.tokenizers.types import TokenizedRequest

__all__ = ["common_prefix_length"]  # re-exported: where callers have always found it

KEY_BYTES = 16
_TOKEN_BYTES = 4  # token ids are stored as uint32

BlockKey = bytes
# A remembered prompt unused for this long (in the log's time) is forgotten: the memory then
# follows the sessions still going on, not every session of a long log.
REMEMBERED_IDLE_SECONDS = 3600.0
_MemoryKey = tuple[bytes, str] | tuple[bytes, bytes]  # (seed, session) or (seed, opening)


def namespace_seed(model: str | None, scope: str, salt: str = "") -> bytes:
    """The stand-in parent of block 0 for one cache namespace (model, scope, salt)."""
    text = "\x1f".join(("cachecast-ns-v1", model or "", scope, salt))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=KEY_BYTES).digest()


def token_bytes(tokens: Sequence[int]) -> bytes:
    """Token ids as little-endian uint32 bytes (the hashed representation)."""
    if isinstance(tokens, array) and tokens.typecode == "I":
        return tokens.tobytes()
    try:
        return array("I", tokens).tobytes()
    except OverflowError as error:
        raise ValueError(f"token ids must be in 0..2**32-1: {error}") from None


def chain_keys_from_bytes(
    data: bytes, block_size: int, seed: bytes, start: int = 0, parent: bytes | None = None
) -> list[BlockKey]:
    """Keys of the full blocks of ``data`` from block index ``start`` on.

    ``parent`` is the key of block ``start - 1`` (``seed`` when ``start`` is 0).
    """
    stride = block_size * _TOKEN_BYTES
    previous = seed if parent is None else parent
    keys: list[BlockKey] = []
    append = keys.append
    for offset in range(start * stride, len(data) - stride + 1, stride):
        previous = xxh3_128_digest(previous + data[offset : offset + stride])
        append(previous)
    return keys


def chain_keys(tokens: Sequence[int], block_size: int, seed: bytes) -> list[BlockKey]:
    """Keys of every full block of ``tokens`` (a trailing partial block has none)."""
    if block_size <= 0:
        raise ValueError("block_size must be positive")
    return chain_keys_from_bytes(token_bytes(tokens), block_size, seed)


def tail_key(parent: bytes, tail_tokens: bytes, length: int) -> BlockKey:
    """Key of a prefix that ends inside a block: parent block key + the partial tokens.

    The length is hashed too so that a prefix key can never equal a full-block key.
    """
    digest = hashlib.blake2b(parent, digest_size=KEY_BYTES, person=b"cachecast-tail")
    digest.update(length.to_bytes(8, "little"))
    digest.update(tail_tokens)
    return digest.digest()


def trace_keys(block_ids: Sequence[int], seed: bytes) -> list[BlockKey]:
    """Keys of a block-level trace: the given chained ids inside one namespace."""
    return [seed + block_id.to_bytes(16, "little", signed=True) for block_id in block_ids]


class BlockKeyer:
    """Computes a request's full-block keys, reusing work across a session's requests."""

    def __init__(self, block_size: int, *, remembered_sessions: int = 1024) -> None:
        if block_size <= 0:
            raise ValueError("block_size must be positive")
        self.block_size = block_size
        self._seeds: dict[tuple[str | None, str], bytes] = {}
        # (seed, session) -> that session's last prompt bytes and keys;
        # (seed, first block's bytes) -> the latest prompt opening with that block
        self._recent: OrderedDict[_MemoryKey, tuple[bytes, list[BlockKey]]] = OrderedDict()
        self._by_opening: OrderedDict[_MemoryKey, tuple[bytes, list[BlockKey]]] = OrderedDict()
        self._remembered = remembered_sessions
        self._newest = 0.0  # the latest request time seen
        self._used: dict[_MemoryKey, float] = {}  # when each remembered entry was last kept

    def seed(self, request: TokenizedRequest) -> bytes:
        namespace = (request.model, request.scope)
        seed = self._seeds.get(namespace)
        if seed is None:
            seed = namespace_seed(request.model, request.scope)
            self._seeds[namespace] = seed
        return seed

    def keys(self, request: TokenizedRequest) -> list[BlockKey]:
        """One key per full block of the prompt.

        A trace with ``block_keys`` must have been recorded with this block size; its last
        id is dropped when it stands for a partial block.
        """
        if request.prompt_keys is not None:
            return given_block_keys(request, self.block_size)
        seed = self.seed(request)
        full_blocks = request.input_tokens // self.block_size
        if request.tokens is None:
            if request.block_keys is None:
                raise BadInputError(
                    f"request {request.request_id} has neither tokens nor block keys",
                    location=Location(source=request.source, line=request.line),
                )
            if request.block_size != self.block_size:
                raise BadInputError(
                    f"trace blocks are {request.block_size} tokens, the policy uses"
                    f" {self.block_size} (give the trace's block size)",
                    location=Location(source=request.source, line=request.line),
                )
            return trace_keys(request.block_keys[:full_blocks], seed)
        data = token_bytes(request.tokens)
        stride = self.block_size * _TOKEN_BYTES
        session = (seed, request.session or "")
        opening = (seed, data[:stride])
        keys = _reusable_keys(self._recent.get(session), data, stride)
        if not keys and len(data) >= stride:
            # A new session: the latest prompt that opened with the same block most
            # likely shares the system prompt too (only equal bytes are reused).
            keys = _reusable_keys(self._by_opening.get(opening), data, stride)
        parent = keys[-1] if keys else None
        keys += chain_keys_from_bytes(data, self.block_size, seed, len(keys), parent)
        if request.timestamp > self._newest:
            self._newest = request.timestamp
        self._remember(self._recent, session, (data, keys))
        if keys:
            self._remember(self._by_opening, opening, (data, keys))
        return keys

    def _remember(
        self,
        memory: OrderedDict[_MemoryKey, tuple[bytes, list[BlockKey]]],
        key: _MemoryKey,
        prompt: tuple[bytes, list[BlockKey]],
    ) -> None:
        """Keep ``prompt`` under ``key`` as the most recent entry, dropping the oldest and
        those idle for ``REMEMBERED_IDLE_SECONDS``."""
        memory[key] = prompt
        memory.move_to_end(key)
        used = self._used
        used[key] = self._newest
        if len(memory) > self._remembered:
            del used[memory.popitem(last=False)[0]]
        idle_before = self._newest - REMEMBERED_IDLE_SECONDS
        while used[next(iter(memory))] < idle_before:  # stops at ``key`` at the latest
            del used[memory.popitem(last=False)[0]]


def given_block_keys(request: TokenizedRequest, block_size: int) -> list[BlockKey]:
    """The full-block keys a compact request carries for ``block_size`` (a new list)."""
    assert request.prompt_keys is not None
    keys = request.prompt_keys.blocks.get(block_size)
    if keys is None:
        raise ValueError(
            f"{request.source}:{request.line}: request {request.request_id} carries no"
            f" {block_size}-token block keys (its keys were computed for another policy)"
        )
    return list(keys)


def _reusable_keys(
    remembered: tuple[bytes, list[BlockKey]] | None, data: bytes, stride: int
) -> list[BlockKey]:
    """A new list of the remembered prompt's keys for the whole blocks ``data`` shares."""
    if remembered is None:
        return []
    old, keys = remembered
    return keys[: _common_whole_blocks(old, data, stride, len(keys))]


def _common_whole_blocks(old: bytes, new: bytes, stride: int, old_blocks: int) -> int:
    """How many leading whole blocks two byte strings share (at most ``old_blocks``)."""
    limit = min(old_blocks, len(new) // stride)
    if limit == 0:
        return 0
    if new.startswith(old):  # a grown session: no slice copies needed
        return limit
    size = limit * stride
    return common_prefix_length(old[:size], new[:size]) // stride
