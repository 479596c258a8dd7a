"""JSON form of contract versions: the ``show --json`` object, the seed file and exports.

Decimals travel as strings ('1.25'), dates as ISO 'YYYY-MM-DD'. A document is
``{"format": "cachecast-contracts", "format_version": 1, "contracts": [...]}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from pydantic import ValidationError

from cachecast.contracts.errors import ContractFormatError
from cachecast.contracts.model import (
    ContractTerms,
    OffPeakPrices,
    OffPeakWindow,
    PriceTier,
    TtlOption,
)
from cachecast.contracts.sqltypes import decimal_text

DOCUMENT_FORMAT = "cachecast-contracts"
DOCUMENT_FORMAT_VERSION = 1

_TERMS_KEYS = frozenset(ContractTerms.model_fields)
_TTL_KEYS = frozenset(TtlOption.model_fields)
_TIER_KEYS = frozenset(PriceTier.model_fields)
_OFF_PEAK_KEYS = frozenset(OffPeakPrices.model_fields)
_WINDOW_KEYS = frozenset(OffPeakWindow.model_fields)
_DECIMAL_KEYS = frozenset(
    {
        "write_multiplier",
        "read_multiplier",
        "storage_per_mtok_hour",
        "input_per_mtok",
        "output_per_mtok",
    }
)


def _money(value: Decimal | None) -> str | None:
    return None if value is None else decimal_text(value)


def ttl_to_json(option: TtlOption) -> dict[str, Any]:
    return {
        "name": option.name,
        "ttl_seconds": option.ttl_seconds,
        "refresh_on_hit": option.refresh_on_hit,
        "write_multiplier": decimal_text(option.write_multiplier),
    }


def terms_to_json(terms: ContractTerms) -> dict[str, Any]:
    """Every field of a contract version, JSON-ready, decimals as exact strings."""
    return {
        "provider": terms.provider,
        "model": terms.model,
        "aliases": list(terms.aliases),
        "effective_from": terms.effective_from.isoformat(),
        "effective_to": terms.effective_to.isoformat() if terms.effective_to else None,
        "verified_on": terms.verified_on.isoformat(),
        "source": terms.source,
        "notes": terms.notes,
        "mode": terms.mode.value,
        "min_cacheable_tokens": terms.min_cacheable_tokens,
        "increment_tokens": terms.increment_tokens,
        "lookback_blocks": terms.lookback_blocks,
        "max_breakpoints": terms.max_breakpoints,
        "ttl_options": [ttl_to_json(option) for option in terms.ttl_options],
        "read_multiplier": decimal_text(terms.read_multiplier),
        "storage_per_mtok_hour": _money(terms.storage_per_mtok_hour),
        "scope": terms.scope,
        "reported_input_includes_cached": terms.reported_input_includes_cached,
        "input_per_mtok": decimal_text(terms.input_per_mtok),
        "output_per_mtok": decimal_text(terms.output_per_mtok),
        "long_context_tiers": [
            {
                "above_input_tokens": tier.above_input_tokens,
                "input_per_mtok": decimal_text(tier.input_per_mtok),
                "output_per_mtok": decimal_text(tier.output_per_mtok),
            }
            for tier in terms.long_context_tiers
        ],
        "off_peak": None if terms.off_peak is None else off_peak_to_json(terms.off_peak),
        "inferred_fields": list(terms.inferred_fields),
    }


def off_peak_to_json(prices: OffPeakPrices) -> dict[str, Any]:
    return {
        "windows": [
            {"weekdays": list(window.weekdays), "start": window.start, "end": window.end}
            for window in prices.windows
        ],
        "input_per_mtok": decimal_text(prices.input_per_mtok),
        "output_per_mtok": decimal_text(prices.output_per_mtok),
        "read_multiplier": decimal_text(prices.read_multiplier),
    }


def _check_keys(
    data: Mapping[str, Any], allowed: frozenset[str], file: str, entry: str, prefix: str
) -> None:
    for key in data:
        if key not in allowed:
            raise ContractFormatError(file, entry, f"{prefix}{key}", "unknown field")


def _check_decimals(value: Any, file: str, entry: str, path: str) -> None:
    """Money must be a string, an integer or an exact Decimal: a float is already rounded."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if key in _DECIMAL_KEYS and item is not None:
                if isinstance(item, bool) or not isinstance(item, str | int | Decimal):
                    raise ContractFormatError(
                        file, entry, child, f"must be a decimal string such as '1.25', got {item!r}"
                    )
            else:
                _check_decimals(item, file, entry, child)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_decimals(item, file, entry, f"{path}[{index}]")


def _error_field(error: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for part in error.get("loc", ()):
        if isinstance(part, int):
            parts.append(f"[{part}]")
        else:
            parts.append(("." if parts else "") + str(part))
    return "".join(parts)


def terms_from_json(data: Any, *, file: str = "", entry: str = "") -> ContractTerms:
    """Parse one contract version; a problem raises ContractFormatError naming the field."""
    if not isinstance(data, Mapping):
        raise ContractFormatError(file, entry, "", f"expected an object, got {type(data).__name__}")
    _check_keys(data, _TERMS_KEYS, file, entry, "")
    inferred = data.get("inferred_fields", [])
    if not isinstance(inferred, list) or not all(isinstance(name, str) for name in inferred):
        raise ContractFormatError(file, entry, "inferred_fields", "must be a list of field names")
    for list_key, allowed in (("ttl_options", _TTL_KEYS), ("long_context_tiers", _TIER_KEYS)):
        items = data.get(list_key, [])
        if not isinstance(items, list):
            raise ContractFormatError(file, entry, list_key, "must be a list")
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise ContractFormatError(file, entry, f"{list_key}[{index}]", "must be an object")
            _check_keys(item, allowed, file, entry, f"{list_key}[{index}].")
    off_peak = data.get("off_peak")
    if isinstance(off_peak, Mapping):
        _check_keys(off_peak, _OFF_PEAK_KEYS, file, entry, "off_peak.")
        windows = off_peak.get("windows", [])
        for index, window in enumerate(windows if isinstance(windows, list) else []):
            if isinstance(window, Mapping):
                _check_keys(window, _WINDOW_KEYS, file, entry, f"off_peak.windows[{index}].")
    _check_decimals(data, file, entry, "")
    try:
        return ContractTerms.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        raise ContractFormatError(file, entry, _error_field(first), str(first["msg"])) from error


def document_to_json(versions: Iterable[ContractTerms]) -> dict[str, Any]:
    return {
        "format": DOCUMENT_FORMAT,
        "format_version": DOCUMENT_FORMAT_VERSION,
        "contracts": [terms_to_json(terms) for terms in versions],
    }


def dumps_document(versions: Iterable[ContractTerms]) -> str:
    return json.dumps(document_to_json(versions), indent=2, ensure_ascii=False) + "\n"


def loads_json(text: str, file: str) -> Any:
    """Parse JSON keeping every number exact (floats become Decimal, never binary)."""
    try:
        return json.loads(text, parse_float=Decimal)
    except json.JSONDecodeError as error:
        raise ContractFormatError(
            file, f"line {error.lineno} column {error.colno}", "", f"invalid JSON: {error.msg}"
        ) from error


def is_document(data: Any) -> bool:
    return isinstance(data, Mapping) and data.get("format") == DOCUMENT_FORMAT


def parse_document(data: Any, file: str) -> list[ContractTerms]:
    """Versions of a cachecast-contracts document, in file order."""
    if not is_document(data):
        raise ContractFormatError(file, "", "format", f"expected {DOCUMENT_FORMAT!r}")
    version = data.get("format_version")
    if version != DOCUMENT_FORMAT_VERSION:
        raise ContractFormatError(
            file, "", "format_version", f"unsupported version {version!r} (this build reads 1)"
        )
    entries = data.get("contracts")
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        raise ContractFormatError(file, "", "contracts", "must be a list")
    versions: list[ContractTerms] = []
    for index, item in enumerate(entries):
        label = f"contracts[{index}]"
        if isinstance(item, Mapping) and "provider" in item and "model" in item:
            label += f" ({item['provider']}/{item['model']} from {item.get('effective_from')})"
        versions.append(terms_from_json(item, file=file, entry=label))
    return versions
