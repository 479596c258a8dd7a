"""Reading the public price maps that ``contracts audit`` holds our contracts against.

LiteLLM's ``model_prices_and_context_window_backup.json`` (the file its wheel ships, read
without importing litellm, or any file in that format) and genai-prices' bundled provider
data (or its ``data.json``); both are optional dependencies (the ``audit`` extra). Prices
come out as exact decimals in USD per million tokens.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from cachecast.contracts.errors import ContractFormatError
from cachecast.contracts.serialize import loads_json
from cachecast.contracts.sqltypes import canonical_decimal
from cachecast.core.errors import MissingExtraError

_MILLION = Decimal(1_000_000)
LITELLM_DATA_FILE = "litellm/model_prices_and_context_window_backup.json"
# The routing prefixes of LiteLLM keys whose rest is the provider's model id.
_KEY_PREFIXES = ("azure/", "gemini/", "vertex_ai/", "xai/", "moonshot/", "dashscope/", "deepseek/")


class AuditError(ContractFormatError):
    """A price map cannot be read (not installed, unreadable, malformed)."""


def per_mtok(value: Any) -> Decimal | None:
    """A price per token (LiteLLM's unit) in USD per million tokens; None: no price."""
    if value is None or isinstance(value, bool):
        return None
    return canonical_decimal(Decimal(value) * _MILLION)


def litellm_bundled_file() -> tuple[Path, str]:
    """The price map inside the installed litellm wheel (found without importing litellm)."""
    try:
        distribution = importlib.metadata.distribution("litellm")
    except importlib.metadata.PackageNotFoundError:
        # A LiteLLM-format file given instead needs no package.
        raise MissingExtraError(
            "contracts audit without --litellm FILE", "audit", "litellm"
        ) from None
    path = Path(str(distribution.locate_file(LITELLM_DATA_FILE)))
    return path, distribution.version


def read_litellm(path: Path | None = None) -> tuple[dict[str, Any], str, str]:
    """(entries, version, location) of a LiteLLM price map; the bundled one by default."""
    version = "file"
    if path is None:
        path, version = litellm_bundled_file()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise AuditError(str(path), "", "", f"cannot read: {error.strerror}") from error
    data = loads_json(text, str(path))
    if not isinstance(data, dict):
        raise AuditError(str(path), "", "", "a LiteLLM price map must be a JSON object")
    return data, version, str(path)


def litellm_model_id(key: str) -> str:
    """The model id of a LiteLLM key (its routing prefix, e.g. ``azure/``, dropped)."""
    for prefix in _KEY_PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


def litellm_tiers(
    entry: Mapping[str, Any],
) -> tuple[dict[int, Decimal], dict[int, Decimal], dict[int, Decimal]]:
    """The entry's long-context tiers by threshold: input, output and cache-read prices."""
    inputs: dict[int, Decimal] = {}
    outputs: dict[int, Decimal] = {}
    reads: dict[int, Decimal] = {}
    for key, value in entry.items():
        match = re.fullmatch(r"input_cost_per_token_above_(\d+)k_tokens", key)
        if match is None:
            continue
        size = match.group(1)
        output = entry.get(f"output_cost_per_token_above_{size}k_tokens")
        read = per_mtok(entry.get(f"cache_read_input_token_cost_above_{size}k_tokens"))
        tier_input = per_mtok(value)
        tier_output = per_mtok(output if output is not None else entry["output_cost_per_token"])
        if tier_input is not None and tier_output is not None:
            threshold = int(size) * 1000
            inputs[threshold], outputs[threshold] = tier_input, tier_output
            if read is not None:
                reads[threshold] = read
    return inputs, outputs, reads


def read_genai_prices(path: Path | None = None) -> tuple[list[Any], str, str]:
    """(providers, version, location): the installed package's data, or a ``data.json``."""
    try:
        version = importlib.metadata.version("genai-prices")
        from genai_prices import types as genai_types
    except (importlib.metadata.PackageNotFoundError, ImportError):
        raise MissingExtraError("contracts audit", "audit", "genai-prices") from None
    if path is None:
        from genai_prices.data import providers

        return list(providers), version, "genai_prices.data (bundled)"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise AuditError(str(path), "", "", f"cannot read: {error.strerror}") from error
    except json.JSONDecodeError as error:
        raise AuditError(str(path), f"line {error.lineno}", "", "invalid JSON") from error
    try:
        # The package's own reader of its data.json (the format its updater fetches).
        parsed = genai_types._providers_from_raw(raw)
    except ValueError as error:
        raise AuditError(str(path), "", "", f"not genai-prices data: {error}") from error
    return list(parsed), f"{version} reader", str(path)


def genai_price(value: Any) -> tuple[Decimal | None, dict[int, Decimal]]:
    """A genai-prices price: a Decimal, or tiered (base plus thresholds)."""
    if value is None:
        return None, {}
    tiers = getattr(value, "tiers", None)
    if tiers is not None:
        return canonical_decimal(value.base), {
            int(tier.start): canonical_decimal(tier.price) for tier in tiers
        }
    return canonical_decimal(Decimal(value)), {}
