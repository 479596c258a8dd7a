"""cachecast.simulator: replay tokenized requests through cache policies and bill them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cachecast.core.lazy import lazy_exports

if TYPE_CHECKING:
    from cachecast.simulator.ordering import OutOfOrderError, usages_in_order
    from cachecast.simulator.policies import (
        POLICY_KINDS,
        CachePolicy,
        build_policy,
        policy_for_contract,
    )

# Each name is imported on first use (cachecast.core.lazy).
_EXPORTS = {
    "OutOfOrderError": "cachecast.simulator.ordering",
    "usages_in_order": "cachecast.simulator.ordering",
    "POLICY_KINDS": "cachecast.simulator.policies",
    "CachePolicy": "cachecast.simulator.policies",
    "build_policy": "cachecast.simulator.policies",
    "policy_for_contract": "cachecast.simulator.policies",
}


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = [
    "POLICY_KINDS",
    "CachePolicy",
    "OutOfOrderError",
    "build_policy",
    "policy_for_contract",
    "usages_in_order",
]
