"""A host-DRAM KV tier under one replica's HBM: the extra hits, and whether fetching pays.

HBM plus host DRAM is replayed as one LRU pool of HBM + host blocks (an inclusive offload
cache, LMCache-style; :func:`compare.compare_self_hosted` replays it beside the HBM pool).
A request's extra hits are fetched over the host link when ``tokens*b_kv/link_bw`` is less
than the recompute time they save, else recomputed (docs/economics.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import numpy as np

from cachecast.economics.gpu_hours import gpu_hours_of, round_dollars
from cachecast.economics.sizing import SizedLog
from cachecast.economics.timing import FloatArray, prefill_seconds_many

TIER_RULE = (
    "fetch when tokens*b_kv/host_link_bw < recompute time saved; fetch not"
    " overlapped with compute (conservative)"
)


@dataclass(frozen=True, slots=True)
class HostTier:
    """HBM plus a host-DRAM KV tier: the extra hits, and whether fetching them pays."""

    host_bytes: int | None
    host_blocks: int | None
    unbounded: bool
    host_link_bytes_s: int
    host_link: str
    extra_hit_tokens_available: int
    extra_hit_tokens_fetched: int
    requests_where_fetch_pays: int
    requests_with_extra_hits: int
    hit_rate_with_tier: float
    fetch_seconds: float
    recompute_seconds_avoided: float
    prefill_seconds_saved: float
    gpu_hours_saved: Decimal
    cost_saved_full_utilization: Decimal | None
    rule: str = TIER_RULE


def host_tier(
    sized: SizedLog,
    cached: FloatArray,
    tier_cached: FloatArray,
    prefill: FloatArray,
    *,
    host_tier_bytes: int | None,
    host_blocks: int | None,
    measured: bool,
    gpu_price: Decimal | None,
) -> HostTier:
    """HBM plus a host-DRAM tier as one LRU pool of HBM + host blocks (an inclusive
    offload cache, LMCache-style): ``tier_cached``, each request's hits in that pool
    (``host_blocks`` more than HBM's; None: unbounded). A request's extra hits beyond HBM's
    (``cached``) are fetched over the host link when tokens*b_kv/link_bw < the recompute
    time they save, else recomputed."""
    deployment, inputs = sized.deployment, sized.inputs
    extra = np.maximum(0.0, tier_cached - cached)
    link = deployment.accelerator.host_link_bytes_s
    fetch = extra * float(deployment.kv_bytes_per_token) / link
    with_tier = prefill_seconds_many(deployment, cached + extra, inputs - cached - extra)
    if measured:
        # The measurement prices only HBM hits; scale the model's saving onto it.
        model_prefill = prefill_seconds_many(deployment, cached, inputs - cached)
        with_tier = prefill * np.divide(
            with_tier, model_prefill, out=np.ones_like(with_tier), where=model_prefill > 0
        )
    saved = prefill - with_tier
    pays = fetch < saved
    chosen = np.where(pays, with_tier + fetch, prefill)
    tier_hits = int((cached + np.where(pays, extra, 0.0)).sum())
    saved_seconds = float((prefill - chosen).sum())
    hours_saved = gpu_hours_of(saved_seconds, deployment.gpus)
    return HostTier(
        host_bytes=host_tier_bytes,
        host_blocks=host_blocks,
        unbounded=host_tier_bytes is None,
        host_link_bytes_s=link,
        host_link=deployment.accelerator.host_link,
        extra_hit_tokens_available=int(extra.sum()),
        extra_hit_tokens_fetched=int(np.where(pays, extra, 0.0).sum()),
        requests_where_fetch_pays=int(pays.sum()),
        requests_with_extra_hits=int((extra > 0).sum()),
        hit_rate_with_tier=tier_hits / float(inputs.sum()),
        fetch_seconds=float(np.where(pays, fetch, 0.0).sum()),
        recompute_seconds_avoided=float(np.where(pays, saved, 0.0).sum()),
        prefill_seconds_saved=saved_seconds,
        gpu_hours_saved=hours_saved,
        cost_saved_full_utilization=None
        if gpu_price is None
        else round_dollars(hours_saved * gpu_price),
    )
