"""cachecast.contracts: dated provider caching contracts and their store.

``ContractStore(url).as_of(provider, model, day)`` answers which terms applied on a day;
``cachecast.contracts.serialize`` turns versions into JSON and back.
"""

from cachecast.contracts.errors import (
    ContractConflictError,
    ContractFormatError,
)
from cachecast.contracts.model import CacheMode, ContractTerms, PriceTier, TtlOption
from cachecast.contracts.store import AddResult, ContractStore, normalize_provider

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
