"""Drive vLLM's own v1 ``KVCacheManager`` standalone, as the reference for our vllm policy.

Used by the property test and by ``bench/simulate.py``; vLLM is imported lazily, so this
module costs nothing where vLLM is absent. No engine and no model: only the scheduler-side
cache manager, with one full-attention group, as vLLM's scheduler calls it for a request
that is admitted, prefilled and finished (get_computed_blocks, allocate_slots, free).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class VllmKvManagerOracle:
    """One vLLM ``KVCacheManager`` with ``num_blocks`` blocks of ``block_size`` tokens.

    ``hash_algo`` is vLLM's ``--prefix-caching-hash-algo``: its default "sha256", or
    "xxhash" (faster, non-cryptographic), "sha256_cbor", "xxhash_cbor".
    """

    def __init__(
        self, block_size: int, num_blocks: int, max_model_len: int, hash_algo: str = "sha256"
    ) -> None:
        import torch
        from vllm import SamplingParams
        from vllm.utils.hashing import get_hash_fn_by_name
        from vllm.v1.core.kv_cache_manager import KVCacheManager
        from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
        from vllm.v1.kv_cache_interface import (
            FullAttentionSpec,
            KVCacheConfig,
            KVCacheGroupSpec,
        )
        from vllm.v1.request import Request

        hash_fn = get_hash_fn_by_name(hash_algo)
        init_none_hash(hash_fn)
        spec = FullAttentionSpec(
            block_size=block_size, num_kv_heads=2, head_size=32, dtype=torch.bfloat16
        )
        config = KVCacheConfig(
            num_blocks=num_blocks,
            kv_cache_tensors=[],
            kv_cache_groups=[KVCacheGroupSpec(["layer0"], spec)],
        )
        self.manager: Any = KVCacheManager(
            config,
            max_model_len=max_model_len,
            scheduler_block_size=block_size,
            hash_block_size=block_size,
            enable_caching=True,
        )
        self._hasher = get_request_block_hasher(block_size, hash_fn)
        self._request_class: Any = Request
        self._sampling = SamplingParams(max_tokens=1)
        self._count = 0

    def process(self, tokens: Sequence[int], cache_salt: str | None = None) -> int | None:
        """Admit, prefill and finish one request; the hit in tokens, or None if not admitted."""
        self._count += 1
        request = self._request_class(
            f"r{self._count}",
            list(tokens),
            self._sampling,
            None,
            cache_salt=cache_salt,
            block_hasher=self._hasher,
        )
        blocks, hit, _ = self.manager.get_computed_blocks(request)
        allocated = self.manager.allocate_slots(request, len(tokens) - hit, hit, blocks)
        if allocated is None:
            return None
        request.num_computed_tokens = len(tokens)
        self.manager.free(request)
        return int(hit)

    def free_block_order(self) -> list[int]:
        """Block ids of the free queue, front (evicted first) to back."""
        queue = self.manager.block_pool.free_block_queue
        return [block.block_id for block in queue.get_all_free_blocks()]
