"""Model ids of Bedrock's OpenAI- and Anthropic-compatible APIs (docs/contracts.md, "Bedrock
Mantle ids"): the Mantle host ``bedrock-mantle.<region>.api.aws`` and bedrock-runtime's
``/openai/v1`` and ``/anthropic/v1`` take a base model id without its version suffix
(``anthropic.claude-haiku-4-5``, ``openai.gpt-oss-120b``; AWS's model cards list it beside the
versioned id, Bifrost's Mantle page: "no cross-region prefix ... and no version suffix"). It
names the stored versioned id: the in-region model of the Region the host serves.

Bills, by hand, from the stored prices (contracts-v2 anthropic.claude-haiku-4-5-20251001-v1:0:
$1 in / 5m writes x1.25 / $5 out per MTok; contracts-v16 regional.openai.gpt-oss-120b-1:0:
$0.15 in / $0.60 out, no caching):

* Mantle chat completion, openai.gpt-oss-120b, prompt_tokens 1,000, completion_tokens 200:
  1,000 x 0.15 / 1e6 + 200 x 0.60 / 1e6 = 0.00015 + 0.00012 = $0.00027.
* Mantle Messages, anthropic.claude-haiku-4-5, input_tokens 26, cache_creation_input_tokens
  4,200, output_tokens 29: 26 x 1 / 1e6 + 4,200 x 1 x 1.25 / 1e6 + 29 x 5 / 1e6
  = 0.000026 + 0.00525 + 0.000145 = $0.005421.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.contracts.rules import versioned_names
from cachecast.core.errors import UnknownContractError
from tests.logs.helpers import vcr_cassette, vcr_interaction
from tests.logs.test_heldout39_h42_heldJ import chat_reply, messages_reply

DAY = dt.date(2026, 8, 25)  # the day of the symfony/ai Mantle recordings
MANTLE = "https://bedrock-mantle.eu-central-1.api.aws"
HAIKU = "anthropic.claude-haiku-4-5-20251001-v1:0"
GPT_OSS = "regional.openai.gpt-oss-120b-1:0"


def test_versioned_names_match_only_the_suffix_the_id_lacks() -> None:
    names = [
        HAIKU,
        "us.anthropic.claude-haiku-4-5-20251001-v1:0",
        "anthropic.claude-haiku-4-5@20251001",
        GPT_OSS,
        "regional.openai.gpt-oss-120b-safeguard-1:0",
        "anthropic.claude-3-haiku-20240307-v1:0",
        "anthropic.claude-3-haiku-20250101-v2:0",
    ]
    assert versioned_names("anthropic.claude-haiku-4-5", names) == (HAIKU,)
    assert versioned_names("openai.gpt-oss-120b", names) == (GPT_OSS,)
    # A zone prefix names that inference profile, never the in-region id.
    assert versioned_names("us.anthropic.claude-haiku-4-5", names) == (
        "us.anthropic.claude-haiku-4-5-20251001-v1:0",
    )
    # Two snapshots: the newest first.
    assert versioned_names("anthropic.claude-3-haiku", names) == (
        "anthropic.claude-3-haiku-20250101-v2:0",
        "anthropic.claude-3-haiku-20240307-v1:0",
    )
    # An id that carries its suffix, or names no vendor, is not a Mantle id.
    assert versioned_names(HAIKU, names) == ()
    assert versioned_names("claude-haiku-4-5", names) == ()
    assert versioned_names("anthropic.claude", names) == ()


def test_mantle_ids_resolve_to_the_stored_versioned_ids(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    haiku = store.as_of("bedrock", "anthropic.claude-haiku-4-5", DAY)
    assert haiku.model == HAIKU
    assert (haiku.input_per_mtok, haiku.output_per_mtok) == (Decimal(1), Decimal(5))
    oss = store.as_of("bedrock", "openai.gpt-oss-120b", DAY)
    assert oss.model == GPT_OSS
    assert (oss.input_per_mtok, oss.output_per_mtok) == (Decimal("0.15"), Decimal("0.6"))
    # A geography's id without its suffix is that profile's alias (contracts-v2 lists
    # eu.anthropic.claude-haiku-4-5-20251001-v1:0 under the us. profile: $1.10 / $5.50).
    eu = store.as_of("bedrock", "eu.anthropic.claude-haiku-4-5", DAY)
    assert eu.model == "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    assert eu.input_per_mtok == Decimal("1.1")
    # Only Bedrock's ids are read so; a model Bedrock does not serve stays unknown.
    with pytest.raises(UnknownContractError):
        store.as_of("bedrock", "anthropic.claude-haiku-9-9", DAY)


def test_a_mantle_recording_is_billed_at_the_stored_in_region_prices(
    tmp_path: Path, migrated_db_url: str
) -> None:
    path = vcr_cassette(
        tmp_path / "mantle.yaml",
        vcr_interaction(
            f"{MANTLE}/v1/chat/completions",
            {"model": "openai.gpt-oss-120b", "messages": [{"role": "user", "content": "Hi"}]},
            chat_reply("openai.gpt-oss-120b", 1_000, 0, 200),
        ),
        vcr_interaction(
            f"{MANTLE}/anthropic/v1/messages",
            {
                "model": "anthropic.claude-haiku-4-5",
                "max_tokens": 100,
                "system": [
                    {"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}
                ],
                "messages": [{"role": "user", "content": "Hi"}],
            },
            messages_reply(26, 4_200, 0, 29),
        ),
    )
    result = CliRunner().invoke(
        app, ["reconcile", str(path), "--json", "--limit", "0", "--database-url", migrated_db_url]
    )
    assert result.exit_code == 0, result.output
    targets = {target["model"]: target for target in json.loads(result.stdout)["targets"]}
    assert set(targets) == {GPT_OSS, HAIKU}
    assert targets[GPT_OSS]["logged_models"] == ["openai.gpt-oss-120b"]
    assert Decimal(targets[GPT_OSS]["summary"]["observed_cost"]) == Decimal("0.00027")
    assert targets[HAIKU]["logged_models"] == ["anthropic.claude-haiku-4-5"]
    assert Decimal(targets[HAIKU]["summary"]["observed_cost"]) == Decimal("0.005421")
