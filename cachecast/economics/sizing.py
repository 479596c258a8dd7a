"""What ``cachecast capacity`` reports: sizing and ceilings of one deployment at one context."""

from __future__ import annotations

from typing import Any

from cachecast.economics.capacity import Deployment, capacity
from cachecast.economics.geometry import fraction_to_json
from cachecast.economics.timing import (
    b_star,
    decode_ceiling,
    decode_step_seconds,
    prefill_time,
)


def capacity_report(
    deployment: Deployment,
    *,
    context: int,
    batch: int | None,
    cached: int,
) -> dict[str, Any]:
    """What ``cachecast capacity --json`` prints (also usable by the service)."""
    kv = capacity(deployment, context)
    result: dict[str, Any] = {
        "inputs": {
            **deployment.describe(),
            "context_tokens": context,
            "batch": batch,
            "cached_tokens": cached,
        },
        "kv_bytes_per_token": fraction_to_json(deployment.kv_bytes_per_token),
        "recurrent_state_bytes_per_request": fraction_to_json(
            deployment.model.recurrent_state_bytes(deployment.state_dtype)
        ),
        "weight_bytes": fraction_to_json(deployment.weight_bytes),
        **{
            key: value
            for key, value in kv.to_json().items()
            if key not in ("kv_bytes_per_token", "weight_bytes")
        },
        "decode_batch": None,
        "decode_ceiling_tokens_per_s": None,
        "decode_step_ms": None,
        "b_star": None,
        "prefill_ms": None,
        "prefill": None,
        "formulas": {
            "source": "/work/shared/MISSION.md (the physics section); code in"
            " cachecast/economics/{geometry,capacity,timing}.py",
            "kv_bytes_per_token": "MHA/GQA 2*layers*kv_heads*head_dim*bytes;"
            " MLA layers*(kv_lora_rank+qk_rope_head_dim)*bytes",
            "kv_capacity": "floor((gpus*memory*gpu_memory_utilization - weights)"
            " / (block_size*kv_bytes_per_token)) blocks",
            "decode_ceiling": "Q(B,N) = B*BW/(W + B*kv(N))",
            "b_star": "B* = W/kv(N)",
            "prefill": "max(FLOPs/peak, bytes/BW), FLOPs = 2*P*S +"
            " 2*L*H_q*d_h*((C+S)(C+S+1) - C(C+1))",
        },
    }
    if not kv.fits:
        return result
    if cached < 0 or cached >= context:
        raise ValueError(f"--cached must be in [0, context) = [0, {context}), got {cached}")
    decode_batch = batch if batch is not None else max(1, kv.max_concurrent_requests)
    result["decode_batch"] = decode_batch
    result["decode_ceiling_tokens_per_s"] = float(decode_ceiling(deployment, decode_batch, context))
    result["decode_step_ms"] = float(decode_step_seconds(deployment, decode_batch, context) * 1000)
    if deployment.request_bytes(context) > 0:
        result["b_star"] = float(b_star(deployment, context))
    prefill = prefill_time(deployment, cached, context - cached)
    result["prefill_ms"] = float(prefill.seconds * 1000)
    result["prefill"] = prefill.to_json()
    return result
