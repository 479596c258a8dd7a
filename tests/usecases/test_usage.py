"""``usage``: the session usage report, on real sessions written by other people
(../shared/data/recordings/claude_code, codex_cli) and on small sessions written here.

Expected token totals come from parsing the shared files with plain ``json`` in this test
(counting each Claude Code ``message.id`` once, Codex ``token_count`` events once), never
from cachecast's readers; expected bills are computed by hand from the list prices in force
on each request's date (written out in the comments, $ per million tokens).
"""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.service.app import create_app
from cachecast.usecases.session_files import default_locations, find_sessions
from cachecast.usecases.usage import SessionFile, UsageReport, UsageRequest, usage_report
from tests.conftest import shared_data
from tests.service.conftest import make_settings

CLAUDE = "recordings/claude_code"
SHORT = "recordings/claude_code/spotter/short.jsonl"
SONNET = "recordings/claude_code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
CODEX_FIXTURE = "recordings/codex_cli/ccusage_fixture_session-alpha.jsonl"
CODEX = "recordings/codex_cli/localpush/raw/sessions"
MILLION = Decimal(1_000_000)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def report_of(url: str, *paths: Path, **options: Any) -> UsageReport:
    files = [SessionFile(path=path) for path in paths]
    return usage_report(UsageRequest(files=files, **options), ContractStore(url))


# --- independent parsing of the shared files -------------------------------------------


def claude_usage(path: Path) -> dict[str, dict[str, Any]]:
    """message id -> usage of its last line (plain json; <synthetic> lines are no request)."""
    found: dict[str, dict[str, Any]] = {}
    for text in path.read_text(encoding="utf-8").splitlines():
        event = json.loads(text)
        message = event.get("message") if isinstance(event, dict) else None
        if event.get("type") != "assistant" or not isinstance(message, dict):
            continue
        if "usage" not in message or message.get("model") == "<synthetic>":
            continue
        found[message["id"]] = message["usage"]
    return found


def claude_sums(paths: list[Path]) -> dict[str, int]:
    sums = {"requests": 0, "prompt": 0, "read": 0, "w5": 0, "w1": 0, "output": 0}
    seen: set[str] = set()
    for path in paths:
        for message_id, usage in claude_usage(path).items():
            if message_id in seen:
                continue
            seen.add(message_id)
            created = usage.get("cache_creation_input_tokens", 0)
            hour = (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens", 0)
            sums["requests"] += 1
            sums["prompt"] += usage["input_tokens"] + usage["cache_read_input_tokens"] + created
            sums["read"] += usage["cache_read_input_tokens"]
            sums["w1"] += hour
            sums["w5"] += created - hour
            sums["output"] += usage["output_tokens"]
    return sums


def codex_sums(paths: list[Path]) -> dict[str, int]:
    sums = {"requests": 0, "prompt": 0, "read": 0, "output": 0}
    for path in paths:
        total = None
        for text in path.read_text(encoding="utf-8").splitlines():
            event = json.loads(text)
            payload = event.get("payload") or {}
            if payload.get("type") != "token_count" or payload.get("info") is None:
                continue
            if payload["info"].get("total_token_usage") == total:
                continue  # written twice
            total = payload["info"].get("total_token_usage")
            last = payload["info"]["last_token_usage"]
            sums["requests"] += 1
            sums["prompt"] += last["input_tokens"]
            sums["read"] += last["cached_input_tokens"]
            sums["output"] += last["output_tokens"]
    return sums


def test_token_totals_of_every_shared_session(migrated_db_url: str) -> None:
    claude = sorted(shared_data(CLAUDE).rglob("*.jsonl"))
    codex = [*sorted(shared_data(CODEX).glob("*.jsonl")), shared_data(CODEX_FIXTURE)]
    report = report_of(migrated_db_url, *claude, *codex, by=["session"])
    expected_claude, expected_codex = claude_sums(claude), codex_sums(codex)
    totals = report.totals
    assert report.clients == {
        "claude-code": expected_claude["requests"],
        "codex": expected_codex["requests"],
    }
    assert totals.requests == expected_claude["requests"] + expected_codex["requests"]
    assert totals.prompt_tokens == expected_claude["prompt"] + expected_codex["prompt"]
    assert totals.cache_read_tokens == expected_claude["read"] + expected_codex["read"]
    assert totals.cache_write_5m_tokens == expected_claude["w5"]
    assert totals.cache_write_1h_tokens == expected_claude["w1"]
    assert totals.output_tokens == expected_claude["output"] + expected_codex["output"]
    # PROVENANCE.md's own figures for two of the files: 1h writes 260,451 (main spotter
    # session), 5m writes 137,976 (fe5e1c67): both are in the 1h / 5m totals.
    assert totals.cache_write_1h_tokens >= 260_451
    assert totals.cache_write_5m_tokens >= 137_976
    assert sum(row.requests for row in report.rows) == totals.requests
    assert report.issue_count == 0
    # Every request is priced: gpt-5.3-codex's rollouts of 2026-02-23 (in Codex from
    # 2026-02-05, in the API from 2026-02-24) with a note that the price on that day is
    # unverified; the fixture's gpt-5.2-codex (2026-05-13) under its API launch version of
    # 2026-01-15 (contracts-v8), with none.
    assert report.complete_bill and report.unpriced == [] and totals.unpriced_requests == 0
    assert sum(note.startswith("[U] price unverified") for note in report.notes) == 1


def test_codex_rollouts_billed_at_the_api_launch_prices(migrated_db_url: str) -> None:
    rollouts = sorted(shared_data(CODEX).rglob("*.jsonl"))
    report = report_of(migrated_db_url, *rollouts)
    sums = codex_sums(rollouts)
    # gpt-5.3-codex at its API launch (2026-02-24): $1.75 input, reads 0.1x = $0.175, $14
    # output (reasoning inside the output count, billed once); cached inside the input.
    expected = (
        (sums["prompt"] - sums["read"]) * Decimal("1.75")
        + sums["read"] * Decimal("0.175")
        + sums["output"] * 14
    ) / MILLION
    assert report.totals.requests == sums["requests"]
    assert report.totals.cost == expected


def test_one_opus_response_billed_by_hand(migrated_db_url: str) -> None:
    report = report_of(migrated_db_url, shared_data(SHORT))
    # One response over five lines (PROVENANCE.md): input 3, 1h writes 13,835, reads 11,515,
    # output 13, claude-opus-4-6 on 2026-02-10: $5 input, $25 output, 1h writes 2x = $10,
    # reads 0.1x = $0.50 (the launch contract, 2026-02-05).
    row = report.totals
    assert (row.requests, row.prompt_tokens) == (1, 3 + 13_835 + 11_515)
    expected = (3 * 5 + 13_835 * 10 + 11_515 * Decimal("0.5") + 13 * 25) / MILLION
    assert row.cost == expected == Decimal("0.1444475")
    # Caching off: every prompt token at $5.
    assert row.cost_without_cache == ((3 + 13_835 + 11_515) * 5 + 13 * 25) / MILLION
    assert row.saved == row.cost_without_cache - row.cost
    assert [c.version for c in report.contracts] == ["anthropic/claude-opus-4-6@2026-02-05"]
    assert report.rows[0].group == {"day": "2026-02-10"}


def test_sonnet_session_billed_by_hand(migrated_db_url: str) -> None:
    path = shared_data(SONNET)
    usages = list(claude_usage(path).values())
    assert len(usages) == 7  # PROVENANCE.md: 7 unique messages
    # claude-sonnet-4 (2025-09): $3 input, $15 output, 5m writes 1.25x = $3.75, reads $0.30.
    expected = (
        sum(
            (
                u["input_tokens"] * 3
                + u["cache_creation_input_tokens"] * Decimal("3.75")
                + u["cache_read_input_tokens"] * Decimal("0.3")
                + u["output_tokens"] * 15
                for u in usages
            ),
            Decimal(0),
        )
        / MILLION
    )
    report = report_of(migrated_db_url, path)
    assert report.totals.cost == expected
    assert report.totals.cache_write_5m_tokens == 12_698  # PROVENANCE.md
    assert report.totals.cache_read_tokens == 103_219


def write_lines(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    return path


def assistant(
    message_id: str,
    when: str,
    *,
    model: str = "claude-sonnet-4-20250514",
    uncached: int = 3,
    read: int = 0,
    five: int = 0,
    hour: int = 0,
    output: int = 10,
) -> dict[str, Any]:
    return {
        "type": "assistant",
        "sessionId": "s-1",
        "uuid": f"u-{message_id}-{when}",
        "timestamp": when,
        "message": {
            "id": message_id,
            "model": model,
            "role": "assistant",
            "content": [{"type": "text", "text": "ok"}],
            "usage": {
                "input_tokens": uncached,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": five + hour,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": five,
                    "ephemeral_1h_input_tokens": hour,
                },
                "output_tokens": output,
            },
        },
    }


def test_long_context_tier_counts_cache_writes(migrated_db_url: str, tmp_path: Path) -> None:
    # Uncached 1,000 + read 150,000 = 151,000 is under opus-4-6's 200K threshold; with the
    # 60,000 written (1h) the prompt is 211,000 and the whole request pays the tier's
    # $10 input / $37.50 output: 1,000 x 10 + 60,000 x 20 (2x) + 150,000 x 1 (0.1x)
    # + 100 x 37.5 = 10,000 + 1,200,000 + 150,000 + 3,750 = 1,363,750 -> $1.36375.
    path = write_lines(
        tmp_path / "long.jsonl",
        [
            assistant(
                "m1",
                "2026-02-20T10:00:00Z",
                model="claude-opus-4-6",
                uncached=1_000,
                read=150_000,
                hour=60_000,
                output=100,
            )
        ],
    )
    assert report_of(migrated_db_url, path).totals.cost == Decimal("1.36375")


def test_response_counted_once_with_its_last_output(migrated_db_url: str, tmp_path: Path) -> None:
    first = assistant("m1", "2026-01-10T10:00:00Z", five=2_000, output=1)
    last = assistant("m1", "2026-01-10T10:00:02Z", five=2_000, output=42)
    synthetic = assistant("m2", "2026-01-10T10:00:03Z", model="<synthetic>", output=0)
    path = write_lines(tmp_path / "s.jsonl", [first, last, synthetic])
    totals = report_of(migrated_db_url, path, path).totals  # the same file twice: once
    assert (totals.requests, totals.output_tokens, totals.cache_write_5m_tokens) == (1, 42, 2_000)


def test_idle_gap_over_the_ttl_is_priced_as_lost(migrated_db_url: str, tmp_path: Path) -> None:
    # Request 1 writes 5,000 tokens (5m) and sends 3 after its breakpoint: Claude Code's
    # profile (docs/clients.md) leaves 5,000 cached. Request 2 comes 10 minutes later: the
    # 5m cache expired and it writes 5,100 tokens again (read 0). The prediction, which knows
    # the TTL, says read 0 (within tolerance); had the cache lived it would have read the
    # 5,000. Those were paid at the input price or above instead of reads: on sonnet-4
    # (2025-09) $3 input - $0.30 reads = $2.70 a million: 5,000 x 2.70 / 1e6 = $0.0135 lost
    # to the idle gap.
    path = write_lines(
        tmp_path / "gap.jsonl",
        [
            assistant("m1", "2025-09-01T10:00:00Z", five=5_000),
            assistant("m2", "2025-09-01T10:10:00Z", five=5_100),
        ],
    )
    report = report_of(migrated_db_url, path, ttl="1h")
    assert report.totals.lost_by_cause == {"idle_gap_outlived_ttl": Decimal("0.0135")}
    assert report.totals.missed_tokens_by_cause == {"idle_gap_outlived_ttl": 5_000}
    assert report.totals.top_causes == ["idle_gap_outlived_ttl"]
    worst = report.worst_requests[0]
    assert (worst.request_id, worst.cause) == ("m2", "idle_gap_outlived_ttl")
    assert (worst.expected_read_tokens, worst.cacheable_tokens) == (0, 5_000)
    assert "10m 00s" in worst.detail and "5m 00s" in worst.detail
    # What-if 1h: request 1 writes 5,000 at 2x ($6); request 2 (10 minutes < 1h) reads the
    # 5,000 and writes the other 100 at $6. Input 3 + 3 at $3, output 10 + 10 at $15:
    # (5,000 x 6 + 5,000 x 0.3 + 100 x 6 + 6 x 3 + 20 x 15) / 1e6
    # = (30,000 + 1,500 + 600 + 18 + 300) / 1e6 = 32,418 / 1e6.
    (what_if,) = report.what_if
    assert what_if.scenario == "ttl 1h"
    assert what_if.cost == Decimal("0.032418")
    # Observed: (10,100 x 3.75 + 6 x 3 + 20 x 15) / 1e6 = 38,193 / 1e6.
    assert report.totals.cost == Decimal("0.038193")
    assert what_if.difference == Decimal("0.032418") - Decimal("0.038193")


def test_a_miss_outside_tolerance_is_lost_and_one_inside_is_not(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # Request 1 writes 10,000 (5m) + 3 uncached: 10,000 cached. A minute later request 2
    # (a 10,503-token prompt) reads only 2,000 and writes 8,500: the prediction says 10,000
    # (the prefix request 1 cached), 8,000 more than read, beyond the tolerance of
    # max(8, 10,503 // 100 = 105). Same model, no compaction, Anthropic's cache is not best
    # effort: the tools or system prompt changed (docs/predictions.md). Lost on sonnet-4:
    # 8,000 x ($3 - $0.30) / 1e6 = 8,000 x 2.7 / 1e6 = $0.0216.
    changed = write_lines(
        tmp_path / "changed.jsonl",
        [
            assistant("m1", "2025-09-01T10:00:00Z", five=10_000),
            assistant("m2", "2025-09-01T10:01:00Z", read=2_000, five=8_500),
        ],
    )
    report = report_of(migrated_db_url, changed)
    assert report.totals.missed_tokens_by_cause == {"tools_or_system_prompt_changed": 8_000}
    assert report.totals.lost_by_cause == {"tools_or_system_prompt_changed": Decimal("0.0216")}
    (worst,) = report.worst_requests
    assert (worst.request_id, worst.expected_read_tokens, worst.cache_read_tokens) == (
        "m2",
        10_000,
        2_000,
    )
    # Request 2 reads 9,950 of the 10,000 instead (and writes 550): 50 short, within the
    # tolerance of 105 tokens: the prediction's own margin, nothing lost.
    close = write_lines(
        tmp_path / "close.jsonl",
        [
            assistant("n1", "2025-09-01T10:00:00Z", five=10_000),
            assistant("n2", "2025-09-01T10:01:00Z", read=9_950, five=550),
        ],
    )
    report = report_of(migrated_db_url, close)
    assert (report.totals.lost_by_cause, report.worst_requests) == ({}, [])


def test_codex_events_and_models(migrated_db_url: str, tmp_path: Path) -> None:
    events = [
        {"timestamp": "2026-10-05T09:00:00Z", "type": "session_meta", "payload": {"id": "c-1"}},
        {"timestamp": "2026-10-05T09:00:01Z", "type": "turn_context",
         "payload": {"model": "gpt-5.3-codex", "cwd": "/w/p"}},
        {"timestamp": "2026-10-05T09:00:02Z", "type": "event_msg",
         "payload": {"type": "token_count", "info": None}},
    ]  # fmt: skip
    usage = {"input_tokens": 4_000, "cached_input_tokens": 3_072, "output_tokens": 200}
    count = {
        "timestamp": "2026-10-05T09:00:05Z",
        "type": "event_msg",
        "payload": {
            "type": "token_count",
            "info": {"last_token_usage": usage, "total_token_usage": usage},
        },
    }
    path = write_lines(tmp_path / "rollout-x.jsonl", [*events, count, count])
    report = report_of(migrated_db_url, path, by=["project", "model"])
    (row,) = report.rows
    assert row.group == {"project": "/w/p", "model": "gpt-5.3-codex"}
    # One request (the event written twice counts once; info null is rate limits only).
    # gpt-5.3-codex on 2026-10-05: $1.75 input, reads 0.1x = $0.175, $14 output; cached is a
    # subset of input: (928 x 1.75 + 3,072 x 0.175 + 200 x 14) / 1e6 = 4,961.6 / 1e6.
    assert (row.requests, row.prompt_tokens, row.cache_read_tokens) == (1, 4_000, 3_072)
    assert row.cost == Decimal("0.0049616")
    assert report.complete_bill


def test_days_since_until_and_timezone(migrated_db_url: str) -> None:
    path = shared_data(CODEX_FIXTURE)
    # Events at 2026-05-13T09:01Z and 2026-05-14T10:00Z; at UTC+14 (Pacific/Kiritimati)
    # they fall on 05-13 23:01 and 05-15 00:00.
    report = report_of(migrated_db_url, path, timezone="Pacific/Kiritimati")
    assert [row.group["day"] for row in report.rows] == ["2026-05-13", "2026-05-15"]
    report = report_of(migrated_db_url, path, since="2026-05-14", until="2026-05-14")
    assert [(row.group["day"], row.prompt_tokens) for row in report.rows] == [("2026-05-14", 2_500)]


def test_default_locations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".claude" / "projects" / "p").mkdir(parents=True)
    (home / ".claude" / "projects" / "p" / "a.jsonl").write_text("{}\n")
    (home / ".codex" / "sessions" / "2026" / "01").mkdir(parents=True)
    (home / ".codex" / "sessions" / "2026" / "01" / "rollout-1.jsonl").write_text("{}\n")
    # Codex moves an archived session's rollout to archived_sessions/ (flat).
    (home / ".codex" / "archived_sessions").mkdir(parents=True)
    (home / ".codex" / "archived_sessions" / "rollout-0.jsonl").write_text("{}\n")
    assert default_locations({}, home) == [
        home / ".claude" / "projects",
        home / ".codex" / "sessions",
        home / ".codex" / "archived_sessions",
    ]
    one, two, codex, other = (tmp_path / name for name in ("one", "two", "codex", "other"))
    for folder in (one / "projects", two / "projects", codex / "sessions", other / "sessions"):
        folder.mkdir(parents=True)
    # Both variables are comma-separated lists (blank entries left out).
    env = {
        "CLAUDE_CONFIG_DIR": f"{one}, {two}",
        "CODEX_HOME": f"{codex}, ,{other}",
        "HOME": str(home),
    }
    assert default_locations(env, home) == [
        one / "projects",
        two / "projects",
        codex / "sessions",
        other / "sessions",
    ]
    found = find_sessions([], {"HOME": str(home)})
    assert [path.name for path in found] == ["a.jsonl", "rollout-1.jsonl", "rollout-0.jsonl"]
    with pytest.raises(Exception, match="no session folder found"):
        find_sessions([], {"HOME": str(tmp_path / "nobody")})


def cli(*args: str, database: str) -> Any:
    return CliRunner().invoke(app, ["usage", *args, "--database-url", database])


def test_cli_json_csv_html(
    migrated_db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # remembered answers
    path = shared_data(SONNET)
    result = cli(str(path), "--json", database=migrated_db_url)
    assert result.exit_code == 0, result.output
    expected = report_of(migrated_db_url, path).model_dump(mode="json")
    assert json.loads(result.stdout) == expected
    result = cli(str(path), "--csv", "--by", "model", "--by", "day", database=migrated_db_url)
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [row["model"] for row in rows] == ["claude-sonnet-4-20250514", "total"]
    assert rows[-1]["cost"] == expected["totals"]["cost"]
    page = tmp_path / "usage.html"
    result = cli(str(path.parent / "*.jsonl"), "--html", str(page), database=migrated_db_url)
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert "Hit rate over time" in html and "<svg" in html and "claude-sonnet-4" in html
    missing = cli(str(tmp_path / "nothing.jsonl"), database=migrated_db_url)
    assert missing.exit_code == 2 and "nothing.jsonl" in missing.output
    bad = cli(str(path), "--by", "week", database=migrated_db_url)
    assert bad.exit_code == 2 and "--by" in bad.output


@pytest.mark.anyio
async def test_api_multipart_and_json(migrated_db_url: str) -> None:
    path = shared_data(SHORT)
    expected = report_of(migrated_db_url, path, by=["model"]).model_dump(mode="json")
    expected["files"] = ["short.jsonl"]
    app_ = create_app(make_settings(migrated_db_url))
    transport = httpx.ASGITransport(app=app_)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.post(
            "/v1/usage-reports",
            files={"log": ("short.jsonl", path.read_bytes())},
            data={"by": "model"},
        )
        assert response.status_code == 200, response.text
        body = response.json()
        for key in ("rows", "totals", "contracts", "worst_requests"):
            assert body[key] == expected[key]
        assert body["files"] == ["short.jsonl"]
        response = await client.post(
            "/v1/usage-reports",
            json={
                "sessions": [{"name": "short.jsonl", "content": path.read_text()}],
                "by": ["model"],
            },
        )
        assert response.status_code == 200, response.text
        assert response.json()["totals"] == expected["totals"]
        empty = await client.post("/v1/usage-reports", json={"sessions": []})
        assert empty.status_code == 422
        # A day is YYYY-MM-DD: pydantic alone reads "0" as 1970-01-01 (schemathesis found it).
        for since in ("0", "1700000000", "2026-01-01T00:00:00", ""):
            sessions = [{"name": "short.jsonl", "content": path.read_text()}]
            as_json = await client.post(
                "/v1/usage-reports", json={"sessions": sessions, "since": since}
            )
            as_form = await client.post(
                "/v1/usage-reports",
                files={"log": ("short.jsonl", path.read_bytes())},
                data={"since": since},
            )
            for refused in (as_json, as_form):
                assert refused.status_code == 422, refused.text
                assert "since" in refused.text
