"""Model names as providers return them, resolved to the contract they name
(docs/contracts.md, "Keys and aliases"): a Gemini stable version ``-001``/``-002``, Azure's
``gpt-35-turbo...`` spelling, and a Bedrock base model id priced under the ``regional.`` id."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from cachecast.contracts import ContractStore
from cachecast.contracts.rules import fallback_names

DAY = dt.date(2026, 12, 4)


def test_gemini_stable_versions_fall_back_to_the_model() -> None:
    # Google: "the three-digit number appended to the model name" is a stable version.
    assert fallback_names("gemini-1.5-flash-002") == ("gemini-1.5-flash",)
    assert fallback_names("gemini-1.5-pro-001") == ("gemini-1.5-pro",)
    assert fallback_names("gemini-2.5-flash-preview-05-20") == ()  # a date, not a version
    assert fallback_names("gemini-1.5-flash-8b") == ()


def test_gemini_1_5_flash_002_is_priced_as_gemini_1_5_flash(migrated_db_url: str) -> None:
    # The day of OpenTelemetry's Vertex cassette; the model served until 2025-09-24.
    day = dt.date(2025, 3, 7)
    store = ContractStore(migrated_db_url)
    served = store.as_of("google", "gemini-1.5-flash-002", day)
    assert served == store.as_of("google", "gemini-1.5-flash", day)
    assert served.model == "gemini-1.5-flash"


def test_azure_gpt_35_names_are_openais_gpt_3_5() -> None:
    assert fallback_names("gpt-35-turbo") == ("gpt-3.5-turbo",)
    assert fallback_names("gpt-35-turbo-16k") == ("gpt-3.5-turbo-16k",)
    assert fallback_names("gpt-35-turbo-instruct") == ("gpt-3.5-turbo-instruct",)
    assert fallback_names("gpt-35-turbo-0613") == ("gpt-3.5-turbo-0613",)


def test_bedrock_base_ids_try_the_in_region_price() -> None:
    assert fallback_names("anthropic.claude-3-sonnet-20240229-v1:0") == (
        "regional.anthropic.claude-3-sonnet-20240229-v1:0",
    )
    # Inference profiles are their own ids; a name without a vendor is no base id.
    assert fallback_names("us.anthropic.claude-3-sonnet-20240229-v1:0") == ()
    assert fallback_names("regional.anthropic.claude-3-sonnet-20240229-v1:0") == ()
    assert fallback_names("gpt-4.1") == ()


def test_claude_3_sonnets_base_id_is_priced_in_region(migrated_db_url: str) -> None:
    # A base model id runs in the one region it is sent to (Bedrock's "How inference
    # works"); genai-prices names that price `regional.`: $3 / $15 per MTok for Claude 3
    # Sonnet, its on-demand price.
    store = ContractStore(migrated_db_url)
    day = dt.date(2024, 3, 27)
    served = store.as_of("bedrock", "anthropic.claude-3-sonnet-20240229-v1:0", day)
    assert served.model == "regional.anthropic.claude-3-sonnet-20240229-v1:0"
    assert (served.input_per_mtok, served.output_per_mtok) == (Decimal(3), Decimal(15))
