"""cachecast.simulator: replay tokenized requests through cache policies and bill them."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cachecast.simulator.ordering import OutOfOrderError, usages_in_order
    from cachecast.simulator.policies import (
        POLICY_KINDS,
        CachePolicy,
        build_policy,
        policy_for_contract,
    )

# Each name is imported on first use (PEP 562), so that importing one submodule, or
# this package for one name, does not load every other (start-up time of commands).
_EXPORTS = {
    "OutOfOrderError": "cachecast.simulator.ordering",
    "usages_in_order": "cachecast.simulator.ordering",
    "POLICY_KINDS": "cachecast.simulator.policies",
    "CachePolicy": "cachecast.simulator.policies",
    "build_policy": "cachecast.simulator.policies",
    "policy_for_contract": "cachecast.simulator.policies",
}


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        if not name.startswith("_"):  # a submodule not imported yet
            try:
                return importlib.import_module(f"{__name__}.{name}")
            except ModuleNotFoundError as error:
                if error.name != f"{__name__}.{name}":
                    raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "POLICY_KINDS",
    "CachePolicy",
    "OutOfOrderError",
    "build_policy",
    "policy_for_contract",
    "usages_in_order",
]
