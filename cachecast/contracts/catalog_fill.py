"""Fill the catalog from the public price maps: models they price with caching that we lack,
and versions that carry a contract back to its model's launch.

This is how ``contracts-v3.json`` was built (``python -m cachecast.contracts.catalog_fill``):
the output is a contract document that a migration seeds, so the packaged catalog never
depends on which map is installed. Every version says where each of its terms comes from:

- prices (input, output, cache read and write, long-context tiers) from one map entry, named
  in ``source`` and ``notes`` with the map's version and key;
- caching mechanics (mode, minimum, TTLs, breakpoints, scope, usage convention) from the
  closest stored contract of the same family (the same model at another provider or data
  zone, else the provider's newest contract of the family), listed in ``inferred_fields``;
- the first day: the model's launch from ``lifecycle.json``, else the date in a dated
  snapshot id, else the family contract's first day when it is the same model elsewhere,
  else the day the map was read; the notes say which. A map's ``deprecation_date`` before
  that day ends the version (a retirement, docs/contracts.md).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from cachecast.contracts.history import Lifecycle
from cachecast.contracts.importers import (
    _PRICE_FIELDS,
    MTOK,
    _ratio,
    _updated_terms,
    litellm_off_peak,
)
from cachecast.contracts.model import (
    INFERABLE_FIELDS,
    ContractTerms,
    PriceTier,
    TtlOption,
)
from cachecast.contracts.price_maps import genai_price, litellm_model_id, litellm_tiers
from cachecast.contracts.sqltypes import canonical_decimal, decimal_text

# The mechanics a filled version takes over from its family (prices come from the map).
MECHANICS = tuple(
    sorted(
        INFERABLE_FIELDS
        - {"input_per_mtok", "output_per_mtok", "long_context_tiers", "read_multiplier"}
    )
)
_ZONES = ("global-standard", "global", "us-gov", "us", "eu", "apac", "jp", "au", "in", "regional")
_VENDORS = {
    "anthropic": "anthropic",
    "openai": "openai",
    "xai": "xai",
    "moonshotai": "moonshot",
    "deepseek": "deepseek",
    "google": "google",
}
_LINES = {
    "google": "gemini",
    "vertex": "gemini",
    "openai": "gpt",
    "azure": "gpt",
    "anthropic": "claude",
    "bedrock": "amazon.nova",
    "alibaba": "qwen",
    "deepseek": "deepseek",
    "xai": "grok",
    "moonshot": "kimi",
}
_DATED = re.compile(r"(20\d\d)-?([01]\d)-?([0-3]\d)")


def snapshot_date(model_id: str) -> dt.date | None:
    """The date a dated snapshot id carries (``gpt-4o-2024-08-06``, ``...-20250514-v1:0``)."""
    for match in _DATED.finditer(model_id):
        try:
            return dt.date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        except ValueError:
            continue
    return None


def our_model_id(map_id: str) -> tuple[str, tuple[str, ...]]:
    """A map id as our model id (``/`` is not allowed there: ``eu/gpt-4o`` -> ``eu.gpt-4o``)
    and the aliases that keep the map's spelling resolvable."""
    lowered = map_id.strip().lower()
    if "/" not in lowered:
        return lowered, ()
    return lowered.replace("/", "."), (lowered,)


def family_key(provider: str, model_id: str) -> tuple[str, str]:
    """(provider, model) of the plain model a regional, dated or re-hosted id stands for."""
    name = model_id.replace("/", ".")
    parts = name.split(".")
    while len(parts) > 1 and parts[0] in _ZONES:
        parts = parts[1:]
    if len(parts) > 1 and parts[0] in _VENDORS:
        provider, parts = _VENDORS[parts[0]], parts[1:]
    name = ".".join(parts)
    name = re.sub(r"-v\d+(:\d+)?$", "", name)
    name = re.sub(r"[-@](20\d\d-?[01]\d-?[0-3]\d|default)$", "", name)
    name = re.sub(r"-\d{4}$", "", name)  # xAI's -0825 style
    name = name.removesuffix("-latest")
    if provider in {"azure", "bedrock"} and name.startswith(("gpt", "o1", "o3", "o4", "codex")):
        provider = "openai" if provider == "bedrock" else provider
    if name.startswith("claude") and provider in {"google", "bedrock"}:
        provider = "anthropic"
    if name.startswith("grok") and provider == "vertex":
        provider = "xai"
    return provider, name


class Families:
    """The stored contracts, to find the one a new id should take its mechanics from."""

    def __init__(self, history: Iterable[ContractTerms]) -> None:
        self.newest: dict[tuple[str, str], ContractTerms] = {}
        self.first: dict[tuple[str, str], dt.date] = {}
        for terms in sorted(history, key=lambda t: t.effective_from):
            key = (terms.provider, terms.model)
            self.newest[key] = terms
            self.first.setdefault(key, terms.effective_from)

    def find(self, provider: str, model_id: str) -> tuple[ContractTerms, bool]:
        """The family contract and whether it is the same model (elsewhere or undated)."""
        plain_provider, plain = family_key(provider, model_id)
        for key in ((provider, plain), (plain_provider, plain)):
            if key in self.newest:
                return self.newest[key], True
        for other in ("openai", "anthropic", "google", "xai", "deepseek", "moonshot"):
            if (other, plain) in self.newest:
                return self.newest[(other, plain)], True
        # The provider's contract with the longest shared start, newest first among equals.
        candidates = [t for (p, _), t in self.newest.items() if p in {provider, plain_provider}]
        if not candidates:
            candidates = list(self.newest.values())

        def shared(terms: ContractTerms) -> tuple[int, dt.date]:
            length = 0
            for a, b in zip(terms.model, plain, strict=False):
                if a != b:
                    break
                length += 1
            return length, terms.effective_from

        best = max(candidates, key=shared)
        if shared(best)[0] < 3:
            # Nothing shares a name: the provider's own line of models (a Gemini-family
            # model on Vertex, not a Claude one).
            line = _LINES.get(provider, "")
            own = [terms for terms in candidates if terms.model.startswith(line)]
            best = max(own or candidates, key=lambda terms: terms.effective_from)
        return best, False


def off_peak_correction(
    stored: ContractTerms, key: str, entry: Mapping[str, Any], map_version: str, read_on: dt.date
) -> ContractTerms:
    """The stored version in force, with the off-peak prices of its LiteLLM entry, from the
    next day (a start date cannot be shared; the stored version is kept as history)."""
    off_peak = litellm_off_peak(entry)
    assert off_peak is not None
    return stored.model_copy(
        update={
            "effective_from": stored.effective_from + dt.timedelta(days=1),
            "effective_to": None,
            "verified_on": read_on,
            "off_peak": off_peak,
            "notes": (
                f"Correction of the version of {stored.effective_from.isoformat()}, which "
                f"lacked the off-peak prices: the same terms plus the off-peak windows and "
                f"prices of LiteLLM {map_version} entry {key!r} (off_peak_pricing, UTC windows; "
                f"half the peak prices). When the discount began is not in our sources [U]: it "
                f"applies here from the day after the stored version's start. "
                + stored.notes.replace(
                    " Off-peak half prices (LiteLLM off_peak_pricing) are not modelled.", ""
                )
            ),
        }
    )


TWELVE_HOURS = 12 * 3600


def with_12h_retention(
    stored: ContractTerms, key: str, entry: Mapping[str, Any], map_version: str, read_on: dt.date
) -> ContractTerms | None:
    """The stored version plus the 12-hour write option its LiteLLM entry prices
    (``cache_creation_input_token_cost_above_12hr``), from the day the map was read; None
    when the version has it already, offers no caching at all (mode none: a retention option
    has no caching to extend) or the entry gives no usable price."""
    price = entry.get("cache_creation_input_token_cost_above_12hr")
    base = entry.get("input_cost_per_token")
    if price is None or not base or not stored.offers_caching:
        return None
    if any(o.ttl_seconds == TWELVE_HOURS for o in stored.ttl_options):
        return None
    multiplier, rounded = _ratio(Decimal(price), Decimal(base))
    option = TtlOption(
        name="12h", ttl_seconds=TWELVE_HOURS, refresh_on_hit=True, write_multiplier=multiplier
    )
    return stored.model_copy(
        update={
            "effective_from": read_on,
            "effective_to": None,
            "verified_on": read_on,
            "ttl_options": (*stored.ttl_options, option),
            "notes": (
                f"The version of {stored.effective_from.isoformat()} plus the 12-hour cache "
                f"retention ('12h', the SDK's ttl_12h_tokens) at the write price of LiteLLM "
                f"{map_version} entry {key!r} (cache_creation_input_token_cost_above_12hr: "
                f"{decimal_text(canonical_decimal(Decimal(price) * MTOK))} per MTok, "
                f"x{decimal_text(multiplier)} the input price"
                + (", rounded to 10 places" if rounded else "")
                + "). No OpenAI guide text for the 12-hour tier is in our sources [U]: its "
                "start date (this version starts on the day the map was read) and whether a "
                "hit restarts its lifetime (assumed, as for 30m) are not stated. " + stored.notes
            ),
        }
    )


def _first_day(
    model_key: tuple[str, str],
    map_id: str,
    same_model: bool,
    family: ContractTerms,
    families: Families,
    lifecycle: Mapping[tuple[str, str], Lifecycle],
    read_on: dt.date,
) -> tuple[dt.date, str]:
    life = lifecycle.get(model_key)
    if life is not None and life.launched_on is not None:
        return life.launched_on, f"launch {life.launched_on.isoformat()} ({life.launch_source})"
    dated = snapshot_date(map_id)
    if dated is not None:
        return dated, f"first day = the date of the snapshot id {map_id!r}"
    if same_model:
        first = families.first[(family.provider, family.model)]
        launched = lifecycle.get((family.provider, family.model), Lifecycle()).launched_on
        if launched is not None and launched < first:
            first = launched  # the family's versions are carried back to its launch too
        return first, (
            f"first day = the first day (launch or first version) of the same model as "
            f"{family.provider}/{family.model} ({first.isoformat()}); its own launch date is "
            f"in none of our sources"
        )
    return read_on, (
        f"launch date in none of our sources [U]: first day = the day the map was read "
        f"({read_on.isoformat()}); a log before it meets 'no contract before'"
    )


def _with_prices(
    family: ContractTerms,
    model_key: tuple[str, str],
    aliases: tuple[str, ...],
    costs: Mapping[str, Decimal | None],
    tiers: list[PriceTier],
    minimum: int | None,
    label: str,
    source: str,
    start: tuple[dt.date, str],
    end: dt.date | None,
    read_on: dt.date,
) -> ContractTerms:
    terms = _updated_terms(family, label, costs, minimum, label, start[0], read_on, source)
    inferred = [name for name in MECHANICS if not (name == "min_cacheable_tokens" and minimum)]
    notes = (
        f"Imported from {label}: prices, cache read and write prices"
        + (", minimum" if minimum else "")
        + f" from that entry. Caching mechanics ({', '.join(inferred)}) taken from "
        f"{family.provider}/{family.model} as of {family.effective_from.isoformat()} "
        f"({family.source}); not stated for this id by any source we have. {start[1]}."
    )
    if end is not None:
        notes += f" Ends on the map's deprecation_date {end.isoformat()} (retired)."
    return terms.model_copy(
        update={
            "provider": model_key[0],
            "model": model_key[1],
            "aliases": aliases,
            "effective_to": end,
            "notes": notes,
            "long_context_tiers": tuple(tiers),
            "inferred_fields": tuple(inferred),
        }
    )


def litellm_version(
    provider: str,
    key: str,
    entry: Mapping[str, Any],
    map_version: str,
    families: Families,
    lifecycle: Mapping[tuple[str, str], Lifecycle],
    read_on: dt.date,
) -> ContractTerms | None:
    """A version for one LiteLLM entry of a model we lack (None: no usable input price)."""
    map_id = litellm_model_id(key)
    model, aliases = our_model_id(map_id)
    costs = {
        name: None if entry.get(name) is None else Decimal(entry[name]) for name in _PRICE_FIELDS
    }
    if costs["cache_read_input_token_cost"] is None and "input_cost_per_token_cache_hit" in entry:
        costs["cache_read_input_token_cost"] = Decimal(entry["input_cost_per_token_cache_hit"])
    if not costs["input_cost_per_token"] or costs["output_cost_per_token"] is None:
        return None
    family, same = families.find(provider, map_id)
    start = _first_day((provider, model), map_id, same, family, families, lifecycle, read_on)
    end = None
    deprecated = entry.get("deprecation_date")
    if isinstance(deprecated, str):
        day = dt.date.fromisoformat(deprecated)
        end = day if day > start[0] and day <= read_on else None
    inputs, outputs, _ = litellm_tiers(entry)
    tiers = [
        PriceTier(above_input_tokens=t, input_per_mtok=inputs[t], output_per_mtok=outputs[t])
        for t in sorted(inputs)
    ]
    minimum = entry.get("prompt_cache_min_tokens")
    label = f"LiteLLM {map_version} entry {key!r}"
    source = str(entry.get("source") or family.source)
    terms = _with_prices(
        family,
        (provider, model),
        aliases,
        costs,
        tiers,
        int(minimum)
        if isinstance(minimum, int | Decimal) and not isinstance(minimum, bool)
        else None,
        label,
        source,
        start,
        end,
        read_on,
    )
    off_peak = litellm_off_peak(entry)
    if off_peak is None:
        return terms
    return terms.model_copy(
        update={
            "off_peak": off_peak,
            "notes": terms.notes + " Off-peak prices from the same entry.",
        }
    )


def genai_version(
    provider: str,
    genai_provider: str,
    model: Any,
    map_version: str,
    families: Families,
    lifecycle: Mapping[tuple[str, str], Lifecycle],
    read_on: dt.date,
) -> ContractTerms | None:
    """A version for one genai-prices model we lack (None: no usable input price)."""
    prices = model.get_prices(dt.datetime.combine(read_on, dt.time(12), tzinfo=dt.UTC))
    input_base, input_tiers = genai_price(getattr(prices, "input_mtok", None))
    output_base, output_tiers = genai_price(getattr(prices, "output_mtok", None))
    read_base, _ = genai_price(getattr(prices, "cache_read_mtok", None))
    write_5m, _ = genai_price(getattr(prices, "cache_write_mtok", None))
    write_1h, _ = genai_price(getattr(prices, "cache_write_1h_mtok", None))
    if not input_base or output_base is None:
        return None

    def per_token(value: Decimal | None) -> Decimal | None:
        return None if value is None else value / MTOK

    costs = {
        "input_cost_per_token": per_token(input_base),
        "output_cost_per_token": per_token(output_base),
        "cache_read_input_token_cost": per_token(read_base),
        "cache_creation_input_token_cost": per_token(write_5m),
        "cache_creation_input_token_cost_above_1hr": per_token(write_1h),
        "explicit_cache_read_input_token_cost": None,
    }
    map_id = str(model.id)
    our_id, aliases = our_model_id(map_id)
    family, same = families.find(provider, map_id)
    start = _first_day((provider, our_id), map_id, same, family, families, lifecycle, read_on)
    tiers = [
        PriceTier(
            above_input_tokens=t,
            input_per_mtok=input_tiers[t],
            output_per_mtok=output_tiers.get(t, output_base),
        )
        for t in sorted(input_tiers)
    ]
    label = f"genai-prices {map_version} provider {genai_provider!r} model {map_id!r}"
    return _with_prices(
        family, (provider, our_id), aliases, costs, tiers, None, label, label, start, None, read_on
    )


def backfills(
    history: Iterable[ContractTerms],
    lifecycle: Mapping[tuple[str, str], Lifecycle],
    read_on: dt.date,
) -> list[ContractTerms]:
    """A version from each model's known launch to its first stored version, where the first
    starts later: the first version's terms, carried back (the notes say so)."""
    first: dict[tuple[str, str], ContractTerms] = {}
    for terms in sorted(history, key=lambda t: t.effective_from, reverse=True):
        first[(terms.provider, terms.model)] = terms
    found = []
    for key, terms in sorted(first.items()):
        life = lifecycle.get(key)
        if life is None or life.launched_on is None or life.launched_on >= terms.effective_from:
            continue
        found.append(
            terms.model_copy(
                update={
                    "effective_from": life.launched_on,
                    "effective_to": terms.effective_from,
                    "verified_on": read_on,
                    "notes": (
                        f"From the launch ({life.launched_on.isoformat()}, {life.launch_source}) "
                        f"to the first version we had ({terms.effective_from.isoformat()}): "
                        f"its terms carried back, since no source we have shows a change in "
                        f"between. {life.launch_note}"
                    ).strip(),
                }
            )
        )
    return found


def fill(
    history: list[ContractTerms],
    missing: Iterable[tuple[str, str, str]],
    litellm: tuple[Mapping[str, Any], str],
    genai: tuple[list[Any], str],
    lifecycle: Mapping[tuple[str, str], Lifecycle],
    read_on: dt.date,
    written: Iterable[ContractTerms] = (),
) -> list[ContractTerms]:
    """Backfills to launch and one version per missing model: ``missing`` holds (map, our
    provider, map key) from the audit. ``written`` are hand-written versions; a model that
    has some gets neither a backfill nor an import."""
    by_hand = list(written)
    manual = {(terms.provider, terms.model) for terms in by_hand}
    families = Families(history)
    found = [
        t for t in backfills(history, lifecycle, read_on) if (t.provider, t.model) not in manual
    ]
    genai_by_id = {provider.id: provider for provider in genai[0]}
    taken = set(manual) | set(families.newest)
    for map_name, provider, key in missing:
        if map_name == "litellm":
            terms = litellm_version(
                provider, key, litellm[0][key], litellm[1], families, lifecycle, read_on
            )
        else:
            genai_provider, _, model_id = key.partition("/")
            model = next(m for m in genai_by_id[genai_provider].models if str(m.id) == model_id)
            terms = genai_version(
                provider, genai_provider, model, genai[1], families, lifecycle, read_on
            )
        if terms is None or (terms.provider, terms.model) in taken:
            continue
        taken.add((terms.provider, terms.model))
        found.append(terms)
    return sorted([*found, *by_hand], key=lambda t: (t.provider, t.model, t.effective_from))


# Stored versions in force whose LiteLLM entry has off-peak prices they lack.
OFF_PEAK_CORRECTIONS = (("deepseek", "deepseek-v4-flash", "deepseek-v4-flash"),)


def main(argv: list[str] | None = None) -> None:
    """Write the filled catalog document: ``catalog_fill DATABASE_URL HAND.json OUT.json``
    (the database migrated to the revision before the one that seeds the output)."""
    import sys
    from pathlib import Path

    from cachecast.contracts.audit import DisagreementKind, audit_contracts
    from cachecast.contracts.history import read_lifecycle
    from cachecast.contracts.price_maps import read_genai_prices, read_litellm
    from cachecast.contracts.serialize import dumps_document, loads_json, parse_document
    from cachecast.contracts.store import ContractStore

    url, hand, out = argv or sys.argv[1:]
    read_on = dt.date(2026, 12, 3)
    store = ContractStore(url)
    report = audit_contracts(store, read_on)
    missing = [
        (item.map.value, item.provider, item.map_key or item.model)
        for item in report.disagreements
        if item.kind is DisagreementKind.MISSING_IN_OURS
    ]
    data, version, _ = read_litellm()
    providers, genai_version_text, _ = read_genai_prices()
    written = parse_document(loads_json(Path(hand).read_text("utf-8"), hand), hand)
    for provider, model, key in OFF_PEAK_CORRECTIONS:
        stored = store.as_of(provider, model, read_on)
        written.append(off_peak_correction(stored, key, data[key], version, read_on))
    for key, entry in data.items():
        if not isinstance(entry, Mapping) or entry.get("litellm_provider") != "openai":
            continue
        if "cache_creation_input_token_cost_above_12hr" not in entry:
            continue
        longer = with_12h_retention(
            store.as_of("openai", key, read_on), key, entry, version, read_on
        )
        if longer is not None:
            written.append(longer)
    versions = fill(
        store.list(),
        missing,
        (data, version),
        (providers, genai_version_text),
        read_lifecycle(),
        read_on,
        written,
    )
    Path(out).write_text(dumps_document(versions), "utf-8")
    print(f"{len(versions)} version(s) written to {out}")


if __name__ == "__main__":
    main()
