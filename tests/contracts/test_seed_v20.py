"""Revision 0028 (contracts-v20.json): Bedrock base models public recordings name that no
contract priced, from their Bedrock launch without caching.

Expected terms are what the sources in docs/contracts.md ("contracts-v20") state, written here
from those sources, not from the data file: AWS's on-demand us-east-1 prices
(https://aws.amazon.com/bedrock/pricing/) as LiteLLM 1.110.2's and genai-prices 0.2.5's maps
give them [S] (Command R / R+: public price tables [S]); launch and end-of-life days from
Bedrock's model cards, model-parameter pages and model-lifecycle page
(https://docs.aws.amazon.com/bedrock/latest/userguide/model-lifecycle.html) or the map's
deprecation_date [S]; no caching because Bedrock's prompt-caching page lists none of these
models (https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.core.errors import ContractNotYetInForceError, UnknownContractError
from tests.conftest import shared_data
from tests.contracts.builders import bill_of, bill_of_counts, seed_round_trip
from tests.logs.helpers import read

TODAY = dt.date(2026, 12, 5)


@pytest.mark.parametrize(
    ("name", "day", "prices"),
    [
        # Claude 2 on Bedrock: $8 / $24 per MTok after Anthropic's cut of 2023-11-21
        # (https://www.anthropic.com/news/claude-2-1; LiteLLM 'anthropic.claude-v2:1' $8 / $24).
        ("anthropic.claude-v2", dt.date(2024, 2, 1), ("8", "24")),
        ("anthropic.claude-v2:1", dt.date(2024, 2, 1), ("8", "24")),
        # Claude 2 at Bedrock's GA, before the cut: $11.02 / $32.68 [U].
        ("anthropic.claude-v2", dt.date(2023, 10, 2), ("11.02", "32.68")),
        # Command R $0.50 / $1.50 (getmaxim.ai's Bedrock calculator: "Input costs $0.50 and
        # output $1.50 per 1M tokens"); Command R+ $0.003 / $0.015 per 1K tokens [S].
        ("cohere.command-r-v1:0", dt.date(2025, 3, 3), ("0.5", "1.5")),
        ("cohere.command-r-plus-v1:0", dt.date(2025, 3, 3), ("3", "15")),
        # Jurassic-2 Mid $12.5 / $12.5, Ultra $18.8 / $18.8 (LiteLLM 'ai21.j2-mid-v1', '-ultra-').
        ("ai21.j2-mid-v1", dt.date(2024, 1, 10), ("12.5", "12.5")),
        ("ai21.j2-ultra-v1", dt.date(2024, 1, 10), ("18.8", "18.8")),
        # Pixtral Large 25.02 $2 / $6 (LiteLLM and genai-prices); its us. and eu. profiles
        # bill the same ("There's no additional charge for using cross-region inference").
        ("mistral.pixtral-large-2502-v1:0", dt.date(2025, 6, 1), ("2", "6")),
        ("us.mistral.pixtral-large-2502-v1:0", dt.date(2025, 6, 1), ("2", "6")),
        ("eu.mistral.pixtral-large-2502-v1:0", dt.date(2025, 6, 1), ("2", "6")),
        # Palmyra X5 $0.60 / $6, X4 $2.50 / $10 (LiteLLM and genai-prices, also the us. ids).
        ("writer.palmyra-x5-v1:0", dt.date(2025, 9, 10), ("0.6", "6")),
        ("us.writer.palmyra-x4-v1:0", dt.date(2025, 9, 10), ("2.5", "10")),
        # DeepSeek-V3.1 $0.58 / $1.68, V3.2 $0.62 / $1.85 (LiteLLM 'deepseek.v3-v1:0',
        # 'deepseek.v3.2').
        ("deepseek.v3-v1:0", dt.date(2025, 10, 1), ("0.58", "1.68")),
        ("us.deepseek.v3.2", dt.date(2026, 1, 15), ("0.62", "1.85")),
        # Qwen3: Coder 480B $0.45 / $1.80, Coder 30B and 32B $0.15 / $0.60, 235B $0.22 / $0.88.
        ("qwen.qwen3-coder-480b-a35b-v1:0", dt.date(2025, 10, 1), ("0.45", "1.8")),
        ("qwen.qwen3-coder-30b-a3b-v1:0", dt.date(2025, 10, 1), ("0.15", "0.6")),
        ("qwen.qwen3-32b-v1:0", dt.date(2025, 10, 1), ("0.15", "0.6")),
        ("qwen.qwen3-235b-a22b-2507-v1:0", dt.date(2025, 10, 1), ("0.22", "0.88")),
        # The open-weight models of December 2025 (LiteLLM, AWS's price list): Gemma 3 27B IT
        # $0.23 / $0.38, Mistral Large 3 $0.50 / $1.50, Kimi K2 Thinking $0.60 / $2.50 under
        # both ids the map gives it, gpt-oss-safeguard-20b $0.07 / $0.20.
        ("google.gemma-3-27b-it", dt.date(2026, 1, 15), ("0.23", "0.38")),
        ("mistral.mistral-large-3-675b-instruct", dt.date(2026, 1, 15), ("0.5", "1.5")),
        ("moonshot.kimi-k2-thinking", dt.date(2026, 1, 15), ("0.6", "2.5")),
        ("moonshotai.kimi-k2-thinking", dt.date(2026, 1, 15), ("0.6", "2.5")),
        ("openai.gpt-oss-safeguard-20b", dt.date(2026, 1, 15), ("0.07", "0.2")),
        # Those of February 2026: GLM 4.7 $0.60 / $2.20, Qwen3 Coder Next $0.50 / $1.20.
        ("zai.glm-4.7", dt.date(2026, 3, 2), ("0.6", "2.2")),
        ("qwen.qwen3-coder-next", dt.date(2026, 3, 2), ("0.5", "1.2")),
        # Claude 3 Sonnet's profiles bill the in-region $3 / $15 (genai-prices, "no additional
        # charge for using cross-region inference").
        ("us.anthropic.claude-3-sonnet-20240229-v1:0", dt.date(2024, 10, 1), ("3", "15")),
        ("apac.anthropic.claude-3-sonnet-20240229-v1:0", dt.date(2024, 10, 1), ("3", "15")),
        # DeepSeek V3.2's EU profile: the map's own entry, $0.74 / $2.22.
        ("eu.deepseek.v3.2", dt.date(2026, 1, 15), ("0.74", "2.22")),
    ],
)
def test_prices_the_sources_state_without_caching(
    migrated_db_url: str, name: str, day: dt.date, prices: tuple[str, str]
) -> None:
    terms = ContractStore(migrated_db_url).as_of("bedrock", name, day)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (
        Decimal(prices[0]),
        Decimal(prices[1]),
    )
    # Bedrock's prompt-caching page lists none of these models.
    assert terms.mode.value == "none"
    assert terms.read_multiplier == Decimal(1)


@pytest.mark.parametrize(
    ("name", "last_day"),
    [
        # Command R and R+ cards: "Model EOL date: August 19, 2026".
        ("cohere.command-r-v1:0", dt.date(2026, 8, 18)),
        ("cohere.command-r-plus-v1:0", dt.date(2026, 8, 18)),
    ],
)
def test_from_end_of_life_nothing_is_in_force(
    migrated_db_url: str, name: str, last_day: dt.date
) -> None:
    store = ContractStore(migrated_db_url)
    assert store.as_of("bedrock", name, last_day).mode.value == "none"
    with pytest.raises(UnknownContractError):
        store.as_of("bedrock", name, last_day + dt.timedelta(days=1))


@pytest.mark.parametrize(
    ("name", "day", "launch"),
    [
        # AWS's Palmyra X5 page: "Release date — April 28th, 2025".
        ("writer.palmyra-x5-v1:0", dt.date(2025, 4, 27), "2025-04-28"),
        # The DeepSeek V3.2 card: "Model launch date: 01 December 2025".
        ("deepseek.v3.2", dt.date(2025, 11, 30), "2025-12-01"),
        # The February 2026 models: the first of the month [U].
        ("zai.glm-4.7-flash", dt.date(2026, 1, 31), "2026-02-01"),
        # Bedrock's GA, 2023-09-28 ([S] hidekazu-konishi.com).
        ("anthropic.claude-v2", dt.date(2023, 9, 27), "2023-09-28"),
    ],
)
def test_before_launch_is_refused_with_the_launch_day(
    migrated_db_url: str, name: str, day: dt.date, launch: str
) -> None:
    with pytest.raises(ContractNotYetInForceError, match=launch):
        ContractStore(migrated_db_url).as_of("bedrock", name, day)


TOUCHED = [
    "eu.deepseek.v3.2",
    "regional.ai21.j2-mid-v1",
    "regional.ai21.j2-ultra-v1",
    "regional.anthropic.claude-v2",
    "regional.anthropic.claude-v2:1",
    "regional.cohere.command-r-plus-v1:0",
    "regional.cohere.command-r-v1:0",
    "regional.deepseek.v3-v1:0",
    "regional.deepseek.v3.2",
    "regional.google.gemma-3-12b-it",
    "regional.google.gemma-3-27b-it",
    "regional.google.gemma-3-4b-it",
    "regional.minimax.minimax-m2",
    "regional.minimax.minimax-m2.1",
    "regional.mistral.magistral-small-2509",
    "regional.mistral.ministral-3-14b-instruct",
    "regional.mistral.ministral-3-3b-instruct",
    "regional.mistral.ministral-3-8b-instruct",
    "regional.mistral.mistral-large-3-675b-instruct",
    "regional.mistral.pixtral-large-2502-v1:0",
    "regional.mistral.voxtral-mini-3b-2507",
    "regional.mistral.voxtral-small-24b-2507",
    "regional.moonshot.kimi-k2-thinking",
    "regional.moonshotai.kimi-k2.5",
    "regional.nvidia.nemotron-nano-12b-v2",
    "regional.nvidia.nemotron-nano-9b-v2",
    "regional.openai.gpt-oss-safeguard-120b",
    "regional.openai.gpt-oss-safeguard-20b",
    "regional.qwen.qwen3-235b-a22b-2507-v1:0",
    "regional.qwen.qwen3-32b-v1:0",
    "regional.qwen.qwen3-coder-30b-a3b-v1:0",
    "regional.qwen.qwen3-coder-480b-a35b-v1:0",
    "regional.qwen.qwen3-coder-next",
    "regional.qwen.qwen3-next-80b-a3b",
    "regional.qwen.qwen3-vl-235b-a22b",
    "regional.writer.palmyra-x4-v1:0",
    "regional.writer.palmyra-x5-v1:0",
    "regional.zai.glm-4.7",
    "regional.zai.glm-4.7-flash",
    "us.anthropic.claude-3-sonnet-20240229-v1:0",
]


@pytest.mark.parametrize("model", TOUCHED)
def test_no_gap_from_launch(migrated_db_url: str, model: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).history("bedrock", model), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1


@pytest.mark.parametrize(
    ("name", "day", "total"),
    [
        # Claude 2.1, 2024-02-01: 1,000 in x $8 / 1e6 = 0.008; 100 out x $24 / 1e6 = 0.0024;
        # total 0.0104.
        ("anthropic.claude-v2:1", dt.date(2024, 2, 1), "0.0104"),
        # Qwen3 Coder 480B, 2025-10-01: 1,000 x $0.45 / 1e6 = 0.00045; 100 x $1.80 / 1e6 =
        # 0.00018; total 0.00063.
        ("qwen.qwen3-coder-480b-a35b-v1:0", dt.date(2025, 10, 1), "0.00063"),
    ],
)
def test_a_bill_by_hand(migrated_db_url: str, name: str, day: dt.date, total: str) -> None:
    terms = ContractStore(migrated_db_url).as_of("bedrock", name, day)
    assert bill_of_counts(1_000, 100, terms) == Decimal(total)


RUNTIME = "https://bedrock-runtime.us-east-1.amazonaws.com/model"


def converse(model_id: str, date: str, usage: dict[str, int]) -> dict[str, object]:
    """One Bedrock Converse exchange as a VCR cassette records it: the model id in the path,
    URL-encoded (':' as %3A), the usage in the response body, the day in the Date header."""
    body = {"messages": [{"role": "user", "content": [{"text": "Summarize the ticket."}]}]}
    response = {
        "output": {"message": {"role": "assistant", "content": [{"text": "Done."}]}},
        "stopReason": "end_turn",
        "usage": {**usage, "totalTokens": usage["inputTokens"] + usage["outputTokens"]},
    }
    return {
        "request": {
            "method": "POST",
            "uri": f"{RUNTIME}/{model_id.replace(':', '%3A')}/converse",
            "body": json.dumps(body),
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Date": [date], "Content-Type": ["application/json"]},
            "body": {"string": json.dumps(response)},
        },
    }


def test_a_converse_cassette_is_priced_on_its_days(migrated_db_url: str, tmp_path: Path) -> None:
    cassette = {
        "interactions": [
            converse(
                "writer.palmyra-x5-v1:0",
                "Wed, 10 Sep 2025 12:00:00 GMT",
                {"inputTokens": 1_250, "outputTokens": 300},
            ),
            converse(
                "cohere.command-r-plus-v1:0",
                "Mon, 03 Mar 2025 09:30:00 GMT",
                {"inputTokens": 2_000, "outputTokens": 150},
            ),
        ],
        "version": 1,
    }
    path = tmp_path / "bedrock_converse.yaml"
    path.write_text(yaml.safe_dump(cassette), encoding="utf-8")
    result = read(path)
    assert result.format == "vcr" and result.errors == []
    store = ContractStore(migrated_db_url)
    bills = []
    for request in result.requests:
        assert request.observed is not None and request.timestamp is not None
        day = dt.datetime.fromtimestamp(request.timestamp, dt.UTC).date()
        bills.append(bill_of(request.observed, store.as_of("bedrock", request.model, day)))
    assert bills == [
        # Palmyra X5 on 2025-09-10: 1,250 x $0.60 / 1e6 = 0.00075; 300 x $6 / 1e6 = 0.0018;
        # total 0.00255.
        Decimal("0.00255"),
        # Command R+ on 2025-03-03: 2,000 x $3 / 1e6 = 0.006; 150 x $15 / 1e6 = 0.00225;
        # total 0.00825.
        Decimal("0.00825"),
    ]


def test_the_recorded_claude_v2_stream_is_priced(migrated_db_url: str) -> None:
    # openllmetry-js's Bedrock recording (the shared data's PROVENANCE.md: InvokeModel
    # WithResponseStream of anthropic.claude-v2, 16 in / 63 out in the last chunk's
    # amazon-bedrock-invocationMetrics), recorded 2024-02-12, after the cut of 2023-11-21.
    path = shared_data("recordings/har/openllmetry-js_bedrock_claude-v2_invoke_stream.har")
    (request,) = read(path).requests
    assert (request.provider, request.model) == ("bedrock", "anthropic.claude-v2")
    assert request.observed is not None and request.timestamp is not None
    day = dt.datetime.fromtimestamp(request.timestamp, dt.UTC).date()
    assert day == dt.date(2024, 2, 12)
    terms = ContractStore(migrated_db_url).as_of("bedrock", request.model, day)
    # 16 x $8 / 1e6 = 0.000128; 63 x $24 / 1e6 = 0.001512; total 0.00164.
    assert bill_of(request.observed, terms) == Decimal("0.00164")


def test_upgrade_only_adds_and_downgrade_gives_back_the_previous_rows(sqlite_url: str) -> None:
    added = seed_round_trip(sqlite_url, "0028_seed_contracts_v20")
    assert {row[5] for row in added} == {"seed:contracts-v20"}
    assert sorted({str(row[1]) for row in added}) == sorted(TOUCHED)
