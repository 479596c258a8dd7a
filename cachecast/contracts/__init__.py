"""cachecast.contracts: dated provider caching contracts and their store.

``ContractStore(url).as_of(provider, model, day)`` answers which terms applied on a day;
``cachecast.contracts.serialize`` turns versions into JSON and back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cachecast.core.lazy import lazy_exports

if TYPE_CHECKING:
    from cachecast.contracts.errors import (
        ContractConflictError,
        ContractFormatError,
    )
    from cachecast.contracts.model import CacheMode, ContractTerms, PriceTier, TtlOption
    from cachecast.contracts.store import AddResult, ContractStore, normalize_provider

# Each name is imported on first use (cachecast.core.lazy).
_EXPORTS = {
    "ContractConflictError": "cachecast.contracts.errors",
    "ContractFormatError": "cachecast.contracts.errors",
    "CacheMode": "cachecast.contracts.model",
    "ContractTerms": "cachecast.contracts.model",
    "PriceTier": "cachecast.contracts.model",
    "TtlOption": "cachecast.contracts.model",
    "AddResult": "cachecast.contracts.store",
    "ContractStore": "cachecast.contracts.store",
    "normalize_provider": "cachecast.contracts.store",
}


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = [
    "AddResult",
    "CacheMode",
    "ContractConflictError",
    "ContractFormatError",
    "ContractStore",
    "ContractTerms",
    "PriceTier",
    "TtlOption",
    "normalize_provider",
]
