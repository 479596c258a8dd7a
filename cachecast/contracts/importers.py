"""Reading contract files: our own document format and LiteLLM's price map.

LiteLLM's ``model_prices_and_context_window.json`` carries prices and cache costs per
token but no caching mechanics (mode, TTL, refresh, breakpoints). An imported LiteLLM entry
therefore updates a contract the store already knows: the new dated version keeps the
mechanics of the version in force on ``effective_from`` and takes prices, cache
multipliers and the minimum length from the file. Entries for contracts the store does not
know are reported as skipped, never guessed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from cachecast.contracts.errors import ContractFormatError
from cachecast.contracts.model import CacheMode, ContractTerms, OffPeakPrices, OffPeakWindow
from cachecast.contracts.serialize import is_document, loads_json
from cachecast.contracts.sqltypes import SCALE, canonical_decimal, check_storable
from cachecast.core.errors import UnknownContractError

MTOK = Decimal(1_000_000)
_MULTIPLIER_QUANTUM = Decimal(1).scaleb(-SCALE)

# LiteLLM's provider names -> ours. Unlisted providers (vertex_ai, openrouter, ...) have
# terms of their own that the store does not hold, so their entries are skipped.
LITELLM_PROVIDERS = {
    "openai": "openai",
    "azure": "azure",
    "anthropic": "anthropic",
    "bedrock": "bedrock",
    "bedrock_converse": "bedrock",
    "gemini": "google",
    "deepseek": "deepseek",
    "moonshot": "moonshot",
    "xai": "xai",
    "dashscope": "alibaba",
}
_PRICE_FIELDS = (
    "input_cost_per_token",
    "output_cost_per_token",
    "cache_read_input_token_cost",
    "cache_creation_input_token_cost",
    "cache_creation_input_token_cost_above_1hr",
    "explicit_cache_read_input_token_cost",
)

Lookup = Callable[[str, str, dt.date], ContractTerms]


@dataclass
class LiteLLMPlan:
    """What a LiteLLM file turns into, before anything is written."""

    versions: list[ContractTerms] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)  # entries equal to the stored terms
    skipped: list[str] = field(default_factory=list)  # 'entry: reason'


def read_json_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ContractFormatError(str(path), "", "", f"cannot read: {error.strerror}") from error
    return loads_json(text, str(path))


def is_litellm_map(data: Any) -> bool:
    return (
        isinstance(data, Mapping)
        and not is_document(data)
        and any(
            isinstance(entry, Mapping) and "litellm_provider" in entry for entry in data.values()
        )
    )


def _number(entry: Mapping[str, Any], key: str, file: str, name: str) -> Decimal | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise ContractFormatError(file, name, key, f"must be a number, got {value!r}")
    number = Decimal(value)
    if not number.is_finite() or number < 0:
        raise ContractFormatError(file, name, key, f"must be a finite number >= 0, got {value}")
    return number


def _per_mtok(cost_per_token: Decimal, file: str, name: str, key: str) -> Decimal:
    value = canonical_decimal(cost_per_token * MTOK)
    try:
        return check_storable(value)
    except ValueError as error:
        raise ContractFormatError(file, name, key, str(error)) from error


def _ratio(part: Decimal, whole: Decimal) -> tuple[Decimal, bool]:
    """part / whole to the column's 10 decimal places; True when that rounded."""
    exact = part / whole
    stored = exact.quantize(_MULTIPLIER_QUANTUM)
    return canonical_decimal(stored), stored != exact


def _model_id(key: str, litellm_provider: str) -> str:
    prefix = f"{litellm_provider}/"
    if key.startswith(prefix):
        return key[len(prefix) :]
    for name in LITELLM_PROVIDERS:
        if key.startswith(f"{name}/"):
            return key[len(name) + 1 :]
    return key


def litellm_off_peak(
    entry: Mapping[str, Any], file: str = "", name: str = ""
) -> OffPeakPrices | None:
    """The entry's ``off_peak_pricing`` (DeepSeek) as off-peak prices; None without one or
    when its weekdays follow another time zone than UTC (``weekday_timezone``: not taken).
    LiteLLM writes midnight at a window's end as ``00:00``; ours is ``24:00``."""
    block = entry.get("off_peak_pricing")
    if block is None:
        return None
    try:
        if block.get("weekday_timezone") not in (None, "UTC"):
            return None
        windows = []
        for window in block["windows"]:
            hours = window["hours_utc"]
            for span in [hours] if isinstance(hours, str) else hours:
                start, _, end = str(span).partition("-")
                windows.append(
                    OffPeakWindow(
                        weekdays=tuple(int(day) for day in window["weekdays"]),
                        start=start,
                        end="24:00" if end == "00:00" else end,
                    )
                )
        input_cost = Decimal(block["input_cost_per_token"])
        read, _ = _ratio(Decimal(block["cache_read_input_token_cost"]), input_cost)
        return OffPeakPrices(
            windows=tuple(windows),
            input_per_mtok=_per_mtok(input_cost, file, name, "off_peak_pricing"),
            output_per_mtok=_per_mtok(
                Decimal(block["output_cost_per_token"]), file, name, "off_peak_pricing"
            ),
            read_multiplier=read,
        )
    except (AttributeError, KeyError, TypeError, ValueError, ArithmeticError) as error:
        raise ContractFormatError(
            file, name, "off_peak_pricing", f"not a LiteLLM off-peak block: {error!r}"
        ) from error


def plan_litellm_import(
    data: Any,
    *,
    file: str,
    effective_from: dt.date,
    verified_on: dt.date,
    source: str,
    lookup: Lookup,
) -> LiteLLMPlan:
    """Turn a LiteLLM price map into new dated versions of contracts the store knows.

    Every mapped entry is validated before anything is planned, so a malformed file fails
    as a whole with the entry and field named.
    """
    if not isinstance(data, Mapping):
        raise ContractFormatError(file, "", "", "a LiteLLM price map must be a JSON object")
    plan = LiteLLMPlan()
    candidates: list[tuple[bool, str, ContractTerms, ContractTerms]] = []
    for name, entry in data.items():
        if name == "sample_spec":
            continue
        if not isinstance(entry, Mapping):
            raise ContractFormatError(file, name, "", "entry must be an object")
        alias_of = entry.get("alias_of")
        if isinstance(alias_of, str) and "litellm_provider" not in entry:
            plan.skipped.append(f"{name}: alias of {alias_of!r}")
            continue
        if "litellm_provider" not in entry and not any(key in entry for key in _PRICE_FIELDS):
            # Metadata such as 'fallback_generalizations': not a model's prices.
            plan.skipped.append(f"{name}: not a model price entry")
            continue
        litellm_provider = entry.get("litellm_provider")
        if not isinstance(litellm_provider, str):
            raise ContractFormatError(file, name, "litellm_provider", "must be a string")
        provider = LITELLM_PROVIDERS.get(litellm_provider)
        if provider is None:
            plan.skipped.append(f"{name}: provider {litellm_provider!r} not stored")
            continue
        costs = {key: _number(entry, key, file, name) for key in _PRICE_FIELDS}
        minimum = entry.get("prompt_cache_min_tokens")
        if isinstance(minimum, Decimal) and minimum.is_finite() and minimum == int(minimum):
            minimum = int(minimum)  # the price map writes some counts as 4096.0
        if minimum is not None and (
            isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 0
        ):
            raise ContractFormatError(
                file, name, "prompt_cache_min_tokens", f"must be an integer >= 0, got {minimum!r}"
            )
        input_cost = costs["input_cost_per_token"]
        output_cost = costs["output_cost_per_token"]
        if input_cost is None or output_cost is None:
            plan.skipped.append(f"{name}: no input/output price")
            continue
        model_id = _model_id(name, litellm_provider)
        try:
            base = lookup(provider, model_id, effective_from)
        except UnknownContractError:
            plan.skipped.append(f"{name}: no stored {provider} contract in force to update")
            continue
        if input_cost == 0:
            plan.skipped.append(f"{name}: input price 0, cache multipliers undefined")
            continue
        terms = _updated_terms(
            base, name, costs, minimum, file, effective_from, verified_on, source
        )
        if base.off_peak is not None or "off_peak_pricing" in entry:
            # The map's off-peak prices replace the stored ones (none: the discount ended).
            terms = terms.model_copy(update={"off_peak": litellm_off_peak(entry, file, name)})
        candidates.append((model_id.lower() != base.model, name, base, terms))

    # Several entries can name one contract (an id and its dated aliases, regional
    # variants): the entry named exactly like the stored model wins, then file order.
    chosen: dict[tuple[str, str], str] = {}
    for _, name, base, terms in sorted(candidates, key=lambda item: item[0]):
        key = (terms.provider, terms.model)
        if key in chosen:
            plan.skipped.append(
                f"{name}: {terms.provider}/{terms.model} already taken from {chosen[key]!r}"
            )
            continue
        chosen[key] = name
        if _price_terms(base) == _price_terms(terms):
            plan.unchanged.append(name)
        else:
            plan.versions.append(terms)
    return plan


def _price_terms(terms: ContractTerms) -> tuple[Any, ...]:
    return (
        terms.input_per_mtok,
        terms.output_per_mtok,
        terms.read_multiplier,
        terms.min_cacheable_tokens,
        tuple((option.name, option.write_multiplier) for option in terms.ttl_options),
        terms.off_peak,
    )


def _updated_terms(
    base: ContractTerms,
    name: str,
    costs: Mapping[str, Decimal | None],
    minimum: int | None,
    file: str,
    effective_from: dt.date,
    verified_on: dt.date,
    source: str,
) -> ContractTerms:
    input_cost = costs["input_cost_per_token"]
    output_cost = costs["output_cost_per_token"]
    assert input_cost is not None and output_cost is not None
    rounded: list[str] = []
    updates: dict[str, Any] = {
        "effective_from": effective_from,
        "effective_to": None,
        "verified_on": verified_on,
        "source": source,
        "input_per_mtok": _per_mtok(input_cost, file, name, "input_cost_per_token"),
        "output_per_mtok": _per_mtok(output_cost, file, name, "output_cost_per_token"),
    }
    read_cost = costs["cache_read_input_token_cost"]
    explicit_read_cost = costs["explicit_cache_read_input_token_cost"]
    if not base.offers_caching:
        # A version without caching has no mechanics to carry a cache price over to: a
        # cache price in the map means caching began, which needs its own version.
        priced = [key for key, cost in costs.items() if "cache" in key and cost]
        if priced:
            raise ContractFormatError(
                file,
                name,
                priced[0],
                f"prices prompt caching, but the version it updates ({base.provider}/"
                f"{base.model} from {base.effective_from.isoformat()}) offers none: its"
                " caching mechanics cannot be carried over; add a version with caching terms"
                " first",
            )
    split_by_mode = explicit_read_cost is not None
    if split_by_mode and base.mode is not CacheMode.AUTOMATIC:
        # Qwen-style entries price implicit reads in the plain key and explicit reads in
        # their own; an explicit contract takes the explicit one.
        read_cost = explicit_read_cost
    if read_cost is not None:
        updates["read_multiplier"], was_rounded = _ratio(read_cost, input_cost)
        if was_rounded:
            rounded.append("read")
    if minimum is not None:
        updates["min_cacheable_tokens"] = minimum
    # The base write key prices TTLs under an hour (Anthropic 5m, OpenAI 30m); the
    # '_above_1hr' key prices the one-hour option.
    options = []
    for option in base.ttl_options:
        key = (
            "cache_creation_input_token_cost"
            if option.ttl_seconds < 3600
            else "cache_creation_input_token_cost_above_1hr"
            if option.ttl_seconds == 3600
            else None
        )
        write_cost = costs.get(key) if key else None
        if split_by_mode and base.mode is CacheMode.AUTOMATIC:
            write_cost = None  # the creation key prices explicit writes only
        if write_cost is not None and write_cost > 0:
            # 0 means 'not billed separately' in the price map, not a free write.
            multiplier, was_rounded = _ratio(write_cost, input_cost)
            if was_rounded:
                rounded.append(f"write {option.name}")
            option = option.model_copy(update={"write_multiplier": multiplier})
        options.append(option)
    updates["ttl_options"] = tuple(options)
    note = (
        f"Prices, cache multipliers and minimum from LiteLLM entry {name!r} ({source}); "
        f"caching mechanics carried over from the version of "
        f"{base.effective_from.isoformat()} ({base.source})."
    )
    if rounded:
        note += f" Multipliers rounded to {SCALE} decimal places: {', '.join(rounded)}."
    updates["notes"] = note
    merged = {**base.model_dump(), **updates}
    try:
        return ContractTerms.model_validate(merged)
    except ValueError as error:
        raise ContractFormatError(file, name, "", f"gives invalid terms: {error}") from error
