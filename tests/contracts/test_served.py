"""The contract of a served model on a logged request's date (cachecast.contracts.served),
held against the packaged catalog at head: dates and versions below are the stored ones
(contracts-v2/v3/v4.json, lifecycle.json), each named where the test uses it."""

from __future__ import annotations

import datetime as dt

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.history import Lifecycle
from cachecast.contracts.served import served_contract
from cachecast.core.errors import ContractNotYetInForceError, UnknownContractError

TODAY = dt.date(2026, 12, 4)


def test_a_version_in_force_is_used_as_is(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    found = served_contract(store, "anthropic", "claude-haiku-4-5", dt.date(2026, 3, 1), TODAY)
    assert found.note is None
    assert found.terms.in_force_on(dt.date(2026, 3, 1))


def test_a_dateless_log_of_a_retired_model_uses_its_last_version(migrated_db_url: str) -> None:
    # anthropic/claude-sonnet-4: stored [2025-05-22, 2026-06-15), nothing in force today.
    store = ContractStore(migrated_db_url)
    found = served_contract(store, "anthropic", "claude-sonnet-4-20250514", None, TODAY)
    assert (found.terms.effective_from, found.terms.effective_to) == (
        dt.date(2025, 5, 22),
        dt.date(2026, 6, 15),
    )
    assert found.note is not None and "[2025-05-22, 2026-06-15)" in found.note
    # A dateless log of a model in force today gets today's version, with no note.
    current = served_contract(store, "anthropic", "claude-haiku-4-5", None, TODAY)
    assert current.note is None and current.terms.in_force_on(TODAY)


def test_before_a_first_version_that_is_no_launch_the_price_is_unverified(
    migrated_db_url: str,
) -> None:
    # openai/gpt-5.3-chat-latest: first stored version 2026-12-03, the day the price map was
    # read; lifecycle.json gives no launch date.
    store = ContractStore(migrated_db_url)
    day = dt.date(2026, 11, 2)
    found = served_contract(store, "openai", "gpt-5.3-chat-latest", day, TODAY)
    assert found.terms.effective_from == dt.date(2026, 12, 3)
    assert found.note is not None and found.note.startswith("[U] price unverified on 2026-11-02")


def test_before_a_known_launch_is_one_error_naming_the_launch(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    # anthropic/claude-haiku-4-5 launched on 2025-10-15 (lifecycle.json).
    with pytest.raises(ContractNotYetInForceError, match="launched on 2025-10-15"):
        served_contract(store, "anthropic", "claude-haiku-4-5", dt.date(2025, 9, 1), TODAY)
    # The same refusal for a model given a launch in the lifecycle data passed in.
    life = {("openai", "gpt-5.3-chat-latest"): Lifecycle(launched_on=dt.date(2026, 12, 3))}
    with pytest.raises(ContractNotYetInForceError, match="launched on 2026-12-03"):
        served_contract(store, "openai", "gpt-5.3-chat-latest", dt.date(2026, 11, 2), TODAY, life)


def test_served_in_its_vendors_agent_before_the_api_launch_is_priced_unverified(
    migrated_db_url: str,
) -> None:
    store = ContractStore(migrated_db_url)
    # openai/gpt-5.3-codex (lifecycle.json): in Codex from 2026-02-05, in the API from
    # 2026-02-24, the first stored version's start ($1.75 in, $14 out). A Codex rollout of
    # 2026-02-23 is priced at the launch's prices, with a note saying the price is unverified.
    found = served_contract(store, "openai", "gpt-5.3-codex", dt.date(2026, 2, 23), TODAY)
    assert found.terms.effective_from == dt.date(2026, 2, 24)
    assert (str(found.terms.input_per_mtok), str(found.terms.output_per_mtok)) == ("1.75", "14")
    assert found.note is not None
    assert found.note.startswith("[U] price unverified on 2026-02-23")
    assert "from 2026-02-05" in found.note and "launched on 2026-02-24" in found.note
    # The first day in Codex too; the day before it is refused, naming the API launch.
    first = served_contract(store, "openai", "gpt-5.3-codex", dt.date(2026, 2, 5), TODAY)
    assert first.note is not None and first.note.startswith("[U]")
    with pytest.raises(ContractNotYetInForceError, match="launched on 2026-02-24"):
        served_contract(store, "openai", "gpt-5.3-codex", dt.date(2026, 2, 4), TODAY)
    # From the API launch on, the version in force, with no note.
    assert (
        served_contract(store, "openai", "gpt-5.3-codex", dt.date(2026, 2, 24), TODAY).note is None
    )


@pytest.mark.parametrize(
    ("model", "released", "launched"),
    [
        # lifecycle.json: in Codex from the first date, in the API from the second; the stored
        # version starts at the Codex release ($1.25 / $10 for both).
        ("gpt-5-codex", dt.date(2025, 9, 15), dt.date(2025, 9, 23)),
        ("gpt-5.1-codex-max", dt.date(2025, 11, 19), dt.date(2025, 12, 4)),
    ],
)
def test_client_only_days_get_the_note_where_a_stored_version_is_in_force(
    migrated_db_url: str, model: str, released: dt.date, launched: dt.date
) -> None:
    store = ContractStore(migrated_db_url)
    day_before_launch = launched - dt.timedelta(days=1)
    in_codex = served_contract(store, "openai", model, day_before_launch, TODAY)
    assert in_codex.terms.effective_from == released
    assert str(in_codex.terms.input_per_mtok) == "1.25"
    note = in_codex.note or ""
    assert note.startswith(f"[U] price unverified on {day_before_launch.isoformat()}")
    assert f"from {released.isoformat()}" in note and f"launched on {launched.isoformat()}" in note
    assert "priced at the stored version's prices" in note
    in_api = served_contract(store, "openai", model, launched, TODAY)
    assert (in_api.terms, in_api.note) == (in_codex.terms, None)


def test_gpt_5_2_codex_has_a_dated_history_from_its_codex_release(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    # In Codex from 2025-12-18, in the API from 2026-01-15 (contracts-v8: $1.75 / $14 from the
    # API launch); a rollout of 2025-12-20 is priced at the launch's prices with the note.
    early = served_contract(store, "openai", "gpt-5.2-codex", dt.date(2025, 12, 20), TODAY)
    assert early.terms.effective_from == dt.date(2026, 1, 15)
    assert early.note is not None and "priced at that launch's prices" in early.note
    later = served_contract(store, "openai", "gpt-5.2-codex", dt.date(2026, 2, 23), TODAY)
    assert (later.terms.effective_from, later.note) == (dt.date(2026, 1, 15), None)
    assert (str(later.terms.input_per_mtok), str(later.terms.output_per_mtok)) == ("1.75", "14")
    with pytest.raises(ContractNotYetInForceError, match="launched on 2026-01-15"):
        served_contract(store, "openai", "gpt-5.2-codex", dt.date(2025, 12, 17), TODAY)


def test_codex_models_without_a_per_token_price_say_why(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    with pytest.raises(UnknownContractError, match="ChatGPT Pro") as spark:
        served_contract(store, "openai", "gpt-5.3-codex-spark", dt.date(2026, 3, 1), TODAY)
    assert "no per-token price was published" in spark.value.message
    with pytest.raises(UnknownContractError, match=r"no.*per-token price") as mini:
        served_contract(store, "openai", "gpt-5-codex-mini", dt.date(2025, 11, 20), TODAY)
    assert "unknown model" not in mini.value.message
    # codex-mini-latest, codex-mini's id in the API ($1.50 / $6): an alias, on every day.
    for day in (dt.date(2025, 6, 1), TODAY):
        found = served_contract(store, "openai", "codex-mini-latest", day, TODAY)
        assert (found.terms.model, str(found.terms.input_per_mtok)) == ("codex-mini", "1.5")


@pytest.mark.parametrize(
    ("vertex_id", "day", "model", "input_price"),
    [
        # Claude Code on Vertex AI names models by their Vertex ids (contracts-v8).
        ("claude-opus-4-1@20250805", dt.date(2025, 9, 1), "claude-opus-4-1", "15"),
        ("claude-opus-4@20250514", dt.date(2025, 7, 1), "claude-4-opus", "15"),
        ("claude-sonnet-4@20250514", dt.date(2025, 7, 1), "claude-4-sonnet", "3"),
        ("claude-3-5-haiku@20241022", dt.date(2025, 7, 1), "claude-3-5-haiku", "0.8"),
        ("claude-3-7-sonnet@20250219", dt.date(2025, 5, 1), "claude-3-7-sonnet", "3"),
    ],
)
def test_claude_codes_vertex_ids_are_priced(
    migrated_db_url: str, vertex_id: str, day: dt.date, model: str, input_price: str
) -> None:
    found = served_contract(ContractStore(migrated_db_url), "vertex", vertex_id, day, TODAY)
    assert found.note is None
    assert (found.terms.model, str(found.terms.input_per_mtok)) == (model, input_price)


@pytest.mark.parametrize(
    "fields",
    [
        {"client_only_from": "2026-02-05", "client_only_source": "page"},  # no API launch
        {
            "launched_on": "2026-02-05",
            "client_only_from": "2026-02-05",  # not before the launch
            "client_only_source": "page",
        },
        {"launched_on": "2026-02-24", "client_only_from": "2026-02-05"},  # no source
    ],
)
def test_a_client_only_span_needs_a_later_api_launch_and_a_source(fields: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="client_only_from"):
        Lifecycle.model_validate(fields)


def test_launch_versions_seeded_by_0011(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    # xai/grok-4.3: API access 2026-04-30 [S]; the RubyLLM cassette is of 2026-08-10.
    # 0011's launch version [2026-04-30, 2026-10-01) keeps its first day; from 2026-05-01
    # revision 0013's correction (xAI's token-exact cache counts) is in force.
    assert store.as_of("xai", "grok-4.3", dt.date(2026, 4, 30)).effective_from == (
        dt.date(2026, 4, 30)
    )
    grok = served_contract(store, "xai", "grok-4.3", dt.date(2026, 8, 10), TODAY)
    assert (grok.terms.effective_from, grok.terms.effective_to, grok.note) == (
        dt.date(2026, 5, 1),
        dt.date(2026, 10, 1),
        None,
    )
    # The stored prices, carried back: $1.25 in, $2.50 out, reads 0.16x ($0.20).
    assert (str(grok.terms.input_per_mtok), str(grok.terms.output_per_mtok)) == ("1.25", "2.5")
    with pytest.raises(ContractNotYetInForceError, match="launched on 2026-04-30"):
        served_contract(store, "xai", "grok-4.3", dt.date(2026, 4, 1), TODAY)
    # Bedrock Nova 2 Lite and its profiles: launched 2025-12-02 [S]; the ConverseStream
    # cassette is of 2026-08-19.
    for model in (
        "amazon.nova-2-lite-v1:0",
        "global.amazon.nova-2-lite-v1:0",
        "us.amazon.nova-2-lite-v1:0",
        "eu.amazon.nova-2-lite-v1:0",
        "apac.amazon.nova-2-lite-v1:0",
    ):
        # On 2026-08-19: revision 0012's correction (explicit caching) from 2025-12-03; the
        # launch version keeps its first day (test_seed_v5.py).
        nova = served_contract(store, "bedrock", model, dt.date(2026, 8, 19), TODAY)
        assert nova.terms.effective_from == dt.date(2025, 12, 3), model
        assert nova.note is None
        launch = served_contract(store, "bedrock", model, dt.date(2025, 12, 2), TODAY)
        assert launch.terms.effective_from == dt.date(2025, 12, 2), model


def test_an_unknown_model_is_still_an_error(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    # An id no contract names (anthropic.claude-v2, the earlier example, is priced since
    # contracts-v20).
    with pytest.raises(UnknownContractError):
        served_contract(store, "bedrock", "acme.no-such-model-v1:0", None, TODAY)
    with pytest.raises(UnknownContractError):
        served_contract(store, "bedrock", "acme.no-such-model-v1:0", dt.date(2024, 1, 1), TODAY)


def test_a_not_priced_reason_needs_a_source() -> None:
    with pytest.raises(ValueError, match="not_priced"):
        Lifecycle.model_validate({"not_priced": "served only in an agent"})
