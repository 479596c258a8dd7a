"""cachecast.simulator: replay tokenized requests through cache policies and bill them."""

from cachecast.simulator.ordering import OutOfOrderError, usages_in_order
from cachecast.simulator.policies import (
    POLICY_KINDS,
    CachePolicy,
    build_policy,
    policy_for_contract,
)

__all__ = [
    "POLICY_KINDS",
    "CachePolicy",
    "OutOfOrderError",
    "build_policy",
    "policy_for_contract",
    "usages_in_order",
]
