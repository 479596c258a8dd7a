"""cachecast.contracts: dated provider caching contracts and their store.

``ContractStore(url).as_of(provider, model, day)`` answers which terms applied on a day;
``cachecast.contracts.serialize`` turns versions into JSON and back.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cachecast.contracts.errors import (
        ContractConflictError,
        ContractFormatError,
    )
    from cachecast.contracts.model import CacheMode, ContractTerms, PriceTier, TtlOption
    from cachecast.contracts.store import AddResult, ContractStore, normalize_provider

# Each name is imported on first use (PEP 562), so that importing one submodule, or
# this package for one name, does not load every other (start-up time of commands).
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
