"""``contracts audit``: our stored terms on a date held against public price maps.

Two maps are read (:mod:`price_maps`): LiteLLM's
``model_prices_and_context_window_backup.json`` (the file its wheel ships, read without
importing litellm, or any file in that format) and genai-prices' bundled provider data (or
its ``data.json``). Both are optional dependencies (the ``audit`` extra). Every disagreement
names both values and both sources, so drift between our dated contracts and the maps is
visible; neither side is assumed right.

Prices are compared per million tokens as exact decimals. A map entry is matched to the
contract the store would choose for its model id (exact id, then aliases), on the day asked.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Mapping
from decimal import Decimal
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from cachecast.contracts.history import HistorySummary, history_gaps
from cachecast.contracts.importers import litellm_off_peak
from cachecast.contracts.model import ContractTerms, OffPeakPrices, derived_per_mtok
from cachecast.contracts.price_maps import (
    AuditError,
    genai_price,
    litellm_model_id,
    litellm_tiers,
    per_mtok,
    read_genai_prices,
    read_litellm,
)
from cachecast.contracts.sqltypes import canonical_decimal, decimal_text
from cachecast.contracts.store import ContractStore, _best_alias_match, normalize_provider
from cachecast.core.errors import UnknownContractError

# Modes whose prompts our simulator prices; image, audio and embedding entries are not compared.
TEXT_MODES = frozenset({"chat", "responses", "completion"})

# Our provider ids -> LiteLLM's ``litellm_provider`` values (key prefixes: ``price_maps``).
LITELLM_PROVIDERS: dict[str, tuple[str, ...]] = {
    "openai": ("openai",),
    "azure": ("azure",),
    "anthropic": ("anthropic",),
    "bedrock": ("bedrock", "bedrock_converse"),
    "google": ("gemini",),
    "vertex": ("vertex_ai-anthropic_models", "vertex_ai-language-models", "vertex_ai"),
    "deepseek": ("deepseek",),
    "moonshot": ("moonshot",),
    "xai": ("xai",),
    "alibaba": ("dashscope",),
}
# Our provider ids -> genai-prices provider ids.
GENAI_PROVIDERS: dict[str, str] = {
    "openai": "openai",
    "azure": "azure",
    "anthropic": "anthropic",
    "bedrock": "aws",
    "google": "google",
    "vertex": "google",
    "deepseek": "deepseek",
    "moonshot": "moonshotai",
    "xai": "x-ai",
}


# Map entries that name no model any provider serves, so no contract can be in force for them
# (docs/contracts.md, "contracts-v21"): LiteLLM's Bedrock "Claude 3.7 Sonnet" of Claude 3.5
# Sonnet's snapshot date (Claude 3.7 Sonnet came out in February 2025).
NOT_SERVED_IDS: frozenset[tuple[str, str]] = frozenset(
    {("bedrock", "anthropic.claude-3-7-sonnet-20240620-v1:0")}
)


class MapName(StrEnum):
    LITELLM = "litellm"
    GENAI_PRICES = "genai-prices"


class DisagreementKind(StrEnum):
    INPUT_PRICE = "input_price"
    OUTPUT_PRICE = "output_price"
    CACHE_READ = "cache_read"
    CACHE_WRITE = "cache_write"
    LONG_CONTEXT_TIER = "long_context_tier"
    MIN_TOKENS = "min_tokens"
    OFF_PEAK = "off_peak"
    MISSING_IN_OURS = "missing_in_ours"
    # Stored, but not in force on the day (retired before it, or launched after it).
    NOT_IN_FORCE = "not_in_force"
    MISSING_IN_MAP = "missing_in_map"


class Disagreement(BaseModel):
    """One term where our contract and a price map differ; values in USD per MTok as text."""

    kind: DisagreementKind
    map: MapName
    provider: str = Field(description="our provider id")
    model: str = Field(description="our contract's model id, or the map's id when ours lacks it")
    field: str = Field(description="what differs, e.g. 'cache_write[1h]', 'tier>200000.input'")
    ours: str | None = Field(description="our value (None: we have none)")
    theirs: str | None = Field(description="the map's value (None: the map has none)")
    our_source: str | None = Field(description="our contract version and its source address")
    their_source: str = Field(description="the map, its version and the entry compared")
    map_key: str | None = Field(default=None, description="the map's key or model id")
    note: str = ""


class MapSummary(BaseModel):
    """What was read from one map."""

    map: MapName
    version: str
    location: str
    entries_compared: int
    entries_not_compared: dict[str, int] = Field(
        default_factory=dict, description="reason -> number of map entries left out"
    )


class AuditReport(BaseModel):
    """Every disagreement between our contracts in force on ``at`` and the maps read, and
    the gaps in each stored contract's history up to ``at``."""

    at: dt.date
    contracts_in_force: int
    maps: list[MapSummary]
    disagreements: list[Disagreement]
    history: HistorySummary | None = None

    @property
    def counts_by_kind(self) -> dict[str, int]:
        return dict(Counter(item.kind.value for item in self.disagreements))


def _text(value: Decimal | None) -> str | None:
    return None if value is None else decimal_text(canonical_decimal(value))


def _version_label(terms: ContractTerms) -> str:
    return f"{terms.provider}/{terms.model}@{terms.effective_from.isoformat()} ({terms.source})"


class _Differences:
    """One contract held against one map's entry (``their_source``): every disagreement, in
    the order the terms are compared. Both maps are compared through it."""

    def __init__(self, terms: ContractTerms, name: MapName, their_source: str) -> None:
        self.terms = terms
        self.name = name
        self.their_source = their_source
        self.found: list[Disagreement] = []

    def add(self, kind: DisagreementKind, field: str, ours: str | None, theirs: str | None) -> None:
        self.found.append(
            Disagreement(
                kind=kind,
                map=self.name,
                provider=self.terms.provider,
                model=self.terms.model,
                field=field,
                ours=ours,
                theirs=theirs,
                our_source=_version_label(self.terms),
                their_source=self.their_source,
            )
        )

    def differ(
        self, kind: DisagreementKind, field: str, ours: Decimal | None, theirs: Decimal | None
    ) -> None:
        """A disagreement where two prices (USD per MTok; None: none) are not equal."""
        if ours != theirs:
            self.add(kind, field, _text(ours), _text(theirs))

    def long_context_tiers(
        self,
        inputs: Mapping[int, Decimal],
        outputs: Mapping[int, Decimal],
        reads: Mapping[int, Decimal] | None = None,
    ) -> None:
        """Our long-context tiers against the map's, by threshold (input tokens above which a
        tier applies): input and output prices, and cache reads where the map prices them."""
        terms = self.terms
        ours = {tier.above_input_tokens: tier for tier in terms.long_context_tiers}
        kind = DisagreementKind.LONG_CONTEXT_TIER
        for threshold in sorted(set(inputs) | set(ours)):
            mine = ours.get(threshold)
            label = f"tier>{threshold}"
            ours_input = mine.input_per_mtok if mine else None
            ours_output = mine.output_per_mtok if mine else None
            self.differ(kind, f"{label}.input", ours_input, inputs.get(threshold))
            self.differ(kind, f"{label}.output", ours_output, outputs.get(threshold))
            read = None if reads is None else reads.get(threshold)
            if mine and read is not None:
                our_read = _our_read(terms, mine.input_per_mtok)
                self.differ(kind, f"{label}.cache_read", our_read, read)


def _our_read(terms: ContractTerms, input_per_mtok: Decimal) -> Decimal | None:
    """Our cache read price at ``input_per_mtok``; None where the version offers no caching
    (mode none): a map that prices no read agrees, one that prices a read disagrees."""
    if not terms.offers_caching:
        return None
    return derived_per_mtok(input_per_mtok, terms.read_multiplier)


def _uncached_in_force(resolver: _Resolver, provider: str, model_id: str) -> bool:
    """Whether the version in force for a map entry offers no caching: an entry without cache
    prices is then compared (its prices are the whole contract), not left out."""
    terms = resolver.find(provider, model_id)
    return terms is not None and not terms.offers_caching


class _Resolver:
    """The contract in force that a map's model id names, as ``ContractStore.as_of`` picks it."""

    def __init__(self, contracts: Iterable[ContractTerms], day: dt.date) -> None:
        self.day = day
        self.by_provider: dict[str, list[ContractTerms]] = {}
        for terms in contracts:
            self.by_provider.setdefault(terms.provider, []).append(terms)

    def find(self, provider: str, model_id: str) -> ContractTerms | None:
        versions = self.by_provider.get(provider, [])
        model_id = model_id.strip().lower()
        for terms in versions:
            if terms.model == model_id:
                return terms
        try:
            chosen = _best_alias_match(versions, model_id, self.day)
        except UnknownContractError:
            return None  # ambiguous: two contracts match equally; not guessed
        return next((terms for terms in versions if terms.model == chosen), None)


# ------------------------------------------------------------------------------- LiteLLM


def _compare_litellm(
    terms: ContractTerms, entry: Mapping[str, Any], their_source: str
) -> list[Disagreement]:
    found = _Differences(terms, MapName.LITELLM, their_source)
    differ = found.differ
    base = terms.input_per_mtok
    differ(DisagreementKind.INPUT_PRICE, "input", base, per_mtok(entry.get("input_cost_per_token")))
    differ(
        DisagreementKind.OUTPUT_PRICE,
        "output",
        terms.output_per_mtok,
        per_mtok(entry.get("output_cost_per_token")),
    )
    read_key = "cache_read_input_token_cost"
    if terms.mode.value != "automatic" and "explicit_cache_read_input_token_cost" in entry:
        read_key = "explicit_cache_read_input_token_cost"  # Qwen: explicit reads priced apart
    theirs_read = per_mtok(entry.get(read_key) or entry.get("input_cost_per_token_cache_hit"))
    differ(DisagreementKind.CACHE_READ, "cache_read", _our_read(terms, base), theirs_read)
    for option in terms.ttl_options:
        key = {
            3600: "cache_creation_input_token_cost_above_1hr",
            12 * 3600: "cache_creation_input_token_cost_above_12hr",
        }.get(option.ttl_seconds)
        if option.ttl_seconds < 3600:
            key = "cache_creation_input_token_cost"
        theirs = per_mtok(entry.get(key)) if key else None
        ours = derived_per_mtok(base, option.write_multiplier)
        # The map writes 0 or leaves the key out when writes cost the plain input price.
        if option.write_multiplier == 1 and theirs in (None, Decimal(0)):
            continue
        differ(DisagreementKind.CACHE_WRITE, f"cache_write[{option.name}]", ours, theirs)
    found.long_context_tiers(*litellm_tiers(entry))
    theirs_off_peak = litellm_off_peak(entry, their_source, str(entry.get("litellm_provider")))
    if terms.off_peak != theirs_off_peak:
        found.add(
            DisagreementKind.OFF_PEAK,
            "off_peak",
            _off_peak_text(terms.off_peak),
            _off_peak_text(theirs_off_peak),
        )
    minimum = entry.get("prompt_cache_min_tokens")
    if (
        minimum is not None
        and not isinstance(minimum, bool)
        and Decimal(minimum) != terms.min_cacheable_tokens
    ):
        found.add(
            DisagreementKind.MIN_TOKENS,
            "min_cacheable_tokens",
            str(terms.min_cacheable_tokens),
            decimal_text(canonical_decimal(Decimal(minimum))),
        )
    return found.found


def _off_peak_text(prices: OffPeakPrices | None) -> str | None:
    if prices is None:
        return None
    windows = "; ".join(window.text() for window in prices.windows)
    return (
        f"in {decimal_text(prices.input_per_mtok)} out {decimal_text(prices.output_per_mtok)}"
        f" read x{decimal_text(prices.read_multiplier)} during {windows}"
    )


def _other_dates(history: list[ContractTerms], provider: str, model_id: str) -> str:
    """Why a model the map prices has no contract on the day, when we store it on others."""
    resolver = _Resolver(history, dt.date.min)
    terms = resolver.find(provider, model_id)
    if terms is None:
        return ""
    spans = sorted(
        (t.effective_from, t.effective_to)
        for t in history
        if (t.provider, t.model) == (terms.provider, terms.model)
    )
    shown = ", ".join(f"[{a.isoformat()}, {b.isoformat() if b else 'open'})" for a, b in spans)
    return f"{terms.provider}/{terms.model} is stored, but not in force on the day: {shown}"


def audit_litellm(
    contracts: list[ContractTerms],
    day: dt.date,
    path: Path | None = None,
    history: list[ContractTerms] | None = None,
) -> tuple[MapSummary, list[Disagreement]]:
    """Disagreements between ``contracts`` (in force on ``day``) and a LiteLLM price map;
    ``history`` (every stored version) explains models not in force on the day."""
    data, version, location = read_litellm(path)
    resolver = _Resolver(contracts, day)
    ours_by_litellm = {
        litellm: ours for ours, names in LITELLM_PROVIDERS.items() for litellm in names
    }
    left_out: Counter[str] = Counter()
    found: list[Disagreement] = []
    matched: set[tuple[str, str]] = set()
    compared = 0
    for key, entry in data.items():
        if not isinstance(entry, Mapping) or "litellm_provider" not in entry:
            left_out["not a model entry"] += 1
            continue
        provider = ours_by_litellm.get(str(entry["litellm_provider"]))
        if provider is None:
            left_out["provider not stored"] += 1
            continue
        if entry.get("mode") not in TEXT_MODES:
            left_out["not a text model (image, audio, embedding...)"] += 1
            continue
        model_id = litellm_model_id(key)
        if (
            "cache_read_input_token_cost" not in entry
            and "input_cost_per_token_cache_hit" not in entry
            and not _uncached_in_force(resolver, provider, model_id)
        ):
            left_out["no cache price"] += 1
            continue
        if model_id.startswith("ft:"):
            left_out["fine-tuned model"] += 1
            continue
        if provider == "bedrock" and "/" in model_id:
            # LiteLLM's own routing keys (bedrock/us-gov-east-1/..., bedrock/claude_platform/...):
            # no request names a model this way.
            left_out["LiteLLM routing key (bedrock/<region or platform>/...)"] += 1
            continue
        if (provider, model_id) in NOT_SERVED_IDS:
            left_out["an id no provider serves"] += 1
            continue
        source = f"LiteLLM {version} {location} entry {key!r}"
        terms = resolver.find(provider, model_id)
        if terms is None:
            elsewhen = _other_dates(history or [], provider, model_id)
            found.append(
                Disagreement(
                    kind=DisagreementKind.NOT_IN_FORCE
                    if elsewhen
                    else DisagreementKind.MISSING_IN_OURS,
                    map=MapName.LITELLM,
                    provider=provider,
                    model=model_id,
                    field="contract",
                    ours=None,
                    theirs=f"priced with cache costs ({entry.get('mode')})",
                    our_source=None,
                    their_source=source,
                    map_key=key,
                    note=elsewhen,
                )
            )
            continue
        compared += 1
        matched.add((terms.provider, terms.model))
        found += _compare_litellm(terms, entry, source)
    for terms in contracts:
        if (terms.provider, terms.model) not in matched and terms.provider in LITELLM_PROVIDERS:
            found.append(_missing_in_map(terms, MapName.LITELLM, f"LiteLLM {version} {location}"))
    summary = MapSummary(
        map=MapName.LITELLM,
        version=version,
        location=location,
        entries_compared=compared,
        entries_not_compared=dict(left_out),
    )
    return summary, found


def _missing_in_map(terms: ContractTerms, name: MapName, source: str) -> Disagreement:
    return Disagreement(
        kind=DisagreementKind.MISSING_IN_MAP,
        map=name,
        provider=terms.provider,
        model=terms.model,
        field="contract",
        ours=f"contract in force from {terms.effective_from.isoformat()}",
        theirs=None,
        our_source=_version_label(terms),
        their_source=source,
    )


# --------------------------------------------------------------------------- genai-prices


def _compare_genai(terms: ContractTerms, prices: Any, their_source: str) -> list[Disagreement]:
    found = _Differences(terms, MapName.GENAI_PRICES, their_source)
    differ = found.differ
    base = terms.input_per_mtok
    input_base, input_tiers = genai_price(getattr(prices, "input_mtok", None))
    output_base, output_tiers = genai_price(getattr(prices, "output_mtok", None))
    read_base, _ = genai_price(getattr(prices, "cache_read_mtok", None))
    differ(DisagreementKind.INPUT_PRICE, "input", base, input_base)
    differ(DisagreementKind.OUTPUT_PRICE, "output", terms.output_per_mtok, output_base)
    if read_base is not None:
        differ(DisagreementKind.CACHE_READ, "cache_read", _our_read(terms, base), read_base)
    for option in terms.ttl_options:
        if option.ttl_seconds > 3600:
            continue  # genai-prices has no price for longer retention (OpenAI's 12h, 24h)
        key = "cache_write_1h_mtok" if option.ttl_seconds == 3600 else "cache_write_5m_mtok"
        theirs, _ = genai_price(getattr(prices, key, None))
        if theirs is None:
            theirs, _ = genai_price(getattr(prices, "cache_write_mtok", None))
        if theirs is None and option.write_multiplier == 1:
            continue  # no write price listed: writes cost the input price
        if theirs is not None:
            differ(
                DisagreementKind.CACHE_WRITE,
                f"cache_write[{option.name}]",
                derived_per_mtok(base, option.write_multiplier),
                theirs,
            )
    found.long_context_tiers(input_tiers, output_tiers)
    return found.found


def audit_genai_prices(
    contracts: list[ContractTerms],
    day: dt.date,
    path: Path | None = None,
    history: list[ContractTerms] | None = None,
) -> tuple[MapSummary, list[Disagreement]]:
    """Disagreements between ``contracts`` (in force on ``day``) and genai-prices' data;
    ``history`` (every stored version) tells models stored on other days from missing ones."""
    providers, version, location = read_genai_prices(path)
    by_id = {provider.id: provider for provider in providers}
    moment = dt.datetime.combine(day, dt.time(12), tzinfo=dt.UTC)
    found: list[Disagreement] = []
    matched_models: set[tuple[str, str]] = set()
    compared = 0
    for terms in contracts:
        provider = by_id.get(GENAI_PROVIDERS.get(terms.provider, ""))
        if provider is None:
            continue  # e.g. Alibaba: genai-prices has no such provider
        source_base = f"genai-prices {version} {location}, provider {provider.id!r}"
        model = provider.find_model(terms.model, all_providers=providers)
        if model is None:
            found.append(_missing_in_map(terms, MapName.GENAI_PRICES, source_base))
            continue
        compared += 1
        matched_models.add((provider.id, model.id))
        prices = model.get_prices(moment)
        found += _compare_genai(terms, prices, f"{source_base} model {model.id!r}")
    # Models of the mapped providers that priced cache reads but match none of ours.
    ours_by_genai: dict[str, list[ContractTerms]] = {}
    for terms in contracts:
        genai_id = GENAI_PROVIDERS.get(terms.provider)
        if genai_id:
            ours_by_genai.setdefault(genai_id, []).append(terms)
    left_out: Counter[str] = Counter()
    for provider_id, ours in sorted(ours_by_genai.items()):
        provider = by_id.get(provider_id)
        if provider is None:
            continue
        for model in provider.models:
            if (provider.id, model.id) in matched_models:
                continue
            try:
                prices = model.get_prices(moment)
            except (LookupError, ValueError):
                left_out["no price on the date"] += 1
                continue
            if getattr(prices, "cache_read_mtok", None) is None:
                left_out["no cache price"] += 1
                continue
            if any(_genai_matches(model, terms) for terms in ours):
                continue
            stored = [t for t in history or [] if t.provider in {x.provider for x in ours}]
            elsewhen = next((t for t in stored if _genai_matches(model, t)), None)
            found.append(
                Disagreement(
                    kind=DisagreementKind.NOT_IN_FORCE
                    if elsewhen
                    else DisagreementKind.MISSING_IN_OURS,
                    map=MapName.GENAI_PRICES,
                    provider=_genai_our_provider(provider_id, str(model.id), ours),
                    model=model.id,
                    field="contract",
                    ours=None,
                    theirs="priced with a cache read price",
                    our_source=None if elsewhen is None else _version_label(elsewhen),
                    their_source=f"genai-prices {version} {location}, provider {provider.id!r}",
                    map_key=f"{provider.id}/{model.id}",
                    note="" if elsewhen is None else "stored, but not in force on the day",
                )
            )
    summary = MapSummary(
        map=MapName.GENAI_PRICES,
        version=version,
        location=location,
        entries_compared=compared,
        entries_not_compared=dict(left_out),
    )
    return summary, found


def _genai_our_provider(genai_id: str, model_id: str, ours: list[ContractTerms]) -> str:
    """Our provider for a genai-prices model: genai-prices' 'google' holds both Gemini API
    and Vertex models; its Claude models are Vertex's."""
    providers = sorted({terms.provider for terms in ours})
    if len(providers) == 1:
        return providers[0]
    return "vertex" if model_id.startswith("claude") else genai_id


def _genai_matches(model: Any, terms: ContractTerms) -> bool:
    names = [terms.model, *(alias for alias in terms.aliases if not _is_pattern(alias))]
    # A model imported from genai-prices keeps its id, which its own match rule may not take.
    return str(model.id).lower() in names or any(model.is_match(name) for name in names)


def _is_pattern(alias: str) -> bool:
    return any(char in alias for char in "*?[")


# ------------------------------------------------------------------------------- the audit


def audit_contracts(
    store: ContractStore,
    at: dt.date,
    *,
    litellm: bool = True,
    litellm_file: Path | None = None,
    genai_prices: bool = True,
    genai_prices_file: Path | None = None,
    provider: str | None = None,
) -> AuditReport:
    """Our contracts in force on ``at`` against the maps asked for; every disagreement."""
    contracts = store.list(at=at, provider=provider)
    history = store.list(provider=provider)
    maps: list[MapSummary] = []
    disagreements: list[Disagreement] = []
    if litellm:
        summary, found = audit_litellm(contracts, at, litellm_file, history)
        maps.append(summary)
        disagreements += found
    if genai_prices:
        summary, found = audit_genai_prices(contracts, at, genai_prices_file, history)
        maps.append(summary)
        disagreements += found
    if provider is not None:
        wanted = normalize_provider(provider)
        disagreements = [item for item in disagreements if item.provider == wanted]
    return AuditReport(
        at=at,
        contracts_in_force=len(contracts),
        maps=maps,
        disagreements=disagreements,
        history=history_gaps(history, at),
    )


__all__ = [
    "AuditError",
    "AuditReport",
    "Disagreement",
    "DisagreementKind",
    "MapName",
    "MapSummary",
    "audit_contracts",
    "audit_genai_prices",
    "audit_litellm",
]
