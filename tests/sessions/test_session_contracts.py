"""Which contract a session's request is priced under: its own day's version (a session can
span a price change), and a model logged before its first stored version with no known
launch date is priced under that version with an [U] note (docs/predictions.md, "Contracts
of served models"), in reconcile and in usage alike."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cachecast.contracts import ContractStore
from cachecast.core import db
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from cachecast.usecases.usage import SessionFile, UsageRequest, usage_report
from tests.sessions.helpers import codex_rollout


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'cachecast.db'}"
    db.upgrade(url)
    return url


def opus_turn(
    message_id: str, when: str, model: str = "claude-opus-4-6", speed: str | None = None
) -> dict[str, Any]:
    # 1,000 uncached + 60,000 written (1h) + 150,000 read = 211,000 prompt tokens
    usage: dict[str, Any] = {
        "input_tokens": 1_000,
        "cache_read_input_tokens": 150_000,
        "cache_creation_input_tokens": 60_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 60_000},
        "output_tokens": 100,
    }
    if speed is not None:  # fast mode says "speed": "fast" (docs/clients.md)
        usage["speed"] = speed
    message = {"id": message_id, "model": model, "role": "assistant"}
    message |= {"content": [{"type": "text", "text": "ok"}], "usage": usage}
    return {
        "type": "assistant",
        "sessionId": "s-1",
        "uuid": f"u-{message_id}",
        "timestamp": when,
        "message": message,
    }


def test_a_session_across_a_price_change_is_priced_on_each_day(
    store_url: str, tmp_path: Path
) -> None:
    """Anthropic priced Opus 4.6 prompts over 200K tokens at $10 in / $37.50 out until 1M
    context went GA at flat prices on 2026-03-13 (docs/contracts.md; the stored versions
    start 2026-02-05 and 2026-03-13). One session with a 211,000-token request on each side.
    """
    path = tmp_path / "session.jsonl"
    turns = [opus_turn("m1", "2026-03-12T23:00:00Z"), opus_turn("m2", "2026-03-13T01:00:00Z")]
    path.write_text("".join(json.dumps(turn) + "\n" for turn in turns))
    report = reconcile(ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(store_url))
    by_start = {target.contract.effective_from.isoformat(): target for target in report.targets}
    assert sorted(by_start) == ["2026-02-05", "2026-03-13"]
    # Before: 1,000 x 10 + 60,000 x 20 (1h, 2x) + 150,000 x 1 (0.1x) + 100 x 37.5
    #   = 10,000 + 1,200,000 + 150,000 + 3,750 = 1,363,750 / 1e6 = $1.36375
    assert by_start["2026-02-05"].cost == Decimal("1.36375")
    # After: 1,000 x 5 + 60,000 x 10 + 150,000 x 0.5 + 100 x 25
    #   = 5,000 + 600,000 + 75,000 + 2,500 = 682,500 / 1e6 = $0.6825
    assert by_start["2026-03-13"].cost == Decimal("0.6825")
    usage = usage_report(UsageRequest(files=[SessionFile(path=path)]), ContractStore(store_url))
    assert usage.totals.cost == Decimal("1.36375") + Decimal("0.6825")


def test_a_model_logged_before_its_first_stored_version_is_priced_with_a_note(
    store_url: str, tmp_path: Path
) -> None:
    """gpt-5.3-chat-latest's first stored version starts on the day a price map was read
    (2026-12-03) and no source we hold gives its launch date; a rollout of 2026-02-23 proves
    it served then. Priced under that version ($1.75 in / $14 out a million, the map's
    price), with the note saying the price on that date is unverified."""
    rollout = codex_rollout(tmp_path / "rollout.jsonl", "gpt-5.3-chat-latest")
    store = ContractStore(store_url)
    report = reconcile(ReconcileRequest(log=LogInput.of_paths([rollout])), store)
    (target,) = report.targets
    assert target.model == "gpt-5.3-chat-latest"
    # 5,000 uncached x $1.75 + 10 output x $14 = 8,750 + 140 = 8,890 / 1e6 = $0.00889
    assert target.cost == Decimal("0.00889")
    (note,) = target.notes
    assert note.startswith("[U] price unverified on 2026-02-23")
    usage = usage_report(UsageRequest(files=[SessionFile(path=rollout)]), store)
    assert usage.complete_bill and usage.totals.cost == Decimal("0.00889")
    assert usage.notes == [note]


def test_gpt_5_2_codex_is_priced_on_the_days_it_served(store_url: str, tmp_path: Path) -> None:
    """gpt-5.2-codex in the API from 2026-01-15 at $1.75 in / $14 out, cached input $0.175
    (docs/contracts.md, contracts-v8): a rollout of 2026-02-23 is priced under that version,
    with no note."""
    rollout = codex_rollout(tmp_path / "rollout.jsonl", "gpt-5.2-codex")
    store = ContractStore(store_url)
    report = reconcile(ReconcileRequest(log=LogInput.of_paths([rollout])), store)
    (target,) = report.targets
    assert target.contract.effective_from.isoformat() == "2026-01-15"
    # 5,000 uncached x $1.75 + 10 output x $14 = 8,750 + 140 = 8,890 / 1e6 = $0.00889
    assert target.cost == Decimal("0.00889")
    assert target.notes == []
    usage = usage_report(UsageRequest(files=[SessionFile(path=rollout)]), store)
    assert usage.complete_bill and usage.notes == []


def test_fast_mode_is_priced_on_each_day_at_its_documented_rates(
    store_url: str, tmp_path: Path
) -> None:
    """A Claude Code session in fast mode (``usage.speed: "fast"``, read as
    ``claude-opus-4-6-fast``) on both sides of 2026-03-13, a 211,000-token prompt each. The
    prices are platform.claude.com's "Fast mode" page (docs/contracts.md, contracts-v8): 6x
    the standard Opus 4.6 rates up to 200K input tokens, and 6x the long-context rates above
    ($60 in / $225 out) until 1M context went flat; from then 6x across the whole window
    ($30 / $150). Prompt caching multipliers stack on top of the fast input price."""
    path = tmp_path / "session.jsonl"
    turns = [
        opus_turn("m1", "2026-02-20T10:00:00Z", speed="fast"),
        opus_turn("m2", "2026-03-20T10:00:00Z", speed="fast"),
    ]
    path.write_text("".join(json.dumps(turn) + "\n" for turn in turns))
    store = ContractStore(store_url)
    report = reconcile(ReconcileRequest(log=LogInput.of_paths([path])), store)
    assert {target.model for target in report.targets} == {"claude-opus-4-6-fast"}
    by_start = {target.contract.effective_from.isoformat(): target for target in report.targets}
    assert sorted(by_start) == ["2026-02-17", "2026-03-13"]
    # 2026-02-20, over 200K: 1,000 x 60 + 60,000 x 120 (1h, 2x) + 150,000 x 6 (0.1x)
    #   + 100 x 225 = 60,000 + 7,200,000 + 900,000 + 22,500 = 8,182,500 / 1e6 = $8.1825
    assert by_start["2026-02-17"].cost == Decimal("8.1825")
    # 2026-03-20, flat: 1,000 x 30 + 60,000 x 60 + 150,000 x 3 + 100 x 150
    #   = 30,000 + 3,600,000 + 450,000 + 15,000 = 4,095,000 / 1e6 = $4.095
    assert by_start["2026-03-13"].cost == Decimal("4.095")
    usage = usage_report(UsageRequest(files=[SessionFile(path=path)]), store)
    assert usage.complete_bill
    assert usage.totals.cost == Decimal("8.1825") + Decimal("4.095")


def test_fast_mode_of_later_opus_models_and_after_its_removal(
    store_url: str, tmp_path: Path
) -> None:
    """Opus 5.5 fast at 2x its standard $4 / $20 with reads at 0.05x (docs/contracts.md,
    contracts-v8); Opus 4.8 fast was removed on 2026-11-30 (code.claude.com "Fast mode"), so a
    request logged after that is listed as not priced, never at other rates."""
    path = tmp_path / "session.jsonl"
    turns = [
        opus_turn("m1", "2026-10-05T10:00:00Z", speed="fast", model="claude-opus-5-5"),
        opus_turn("m2", "2026-12-01T10:00:00Z", speed="fast", model="claude-opus-4-8"),
    ]
    path.write_text("".join(json.dumps(turn) + "\n" for turn in turns))
    usage = usage_report(
        UsageRequest(files=[SessionFile(path=path)], by=["model"]), ContractStore(store_url)
    )
    rows = {row.group["model"]: row for row in usage.rows}
    # $8 in, 1h writes 2 x 8 = $16, reads 0.05 x 8 = $0.40, $40 out:
    # 1,000 x 8 + 60,000 x 16 + 150,000 x 0.4 + 100 x 40
    #   = 8,000 + 960,000 + 60,000 + 4,000 = 1,032,000 / 1e6 = $1.032
    assert rows["claude-opus-5-5-fast"].cost == Decimal("1.032")
    assert rows["claude-opus-4-8-fast"].unpriced_requests == 1
    assert [model.model for model in usage.unpriced] == ["claude-opus-4-8-fast"]
    assert not usage.complete_bill
