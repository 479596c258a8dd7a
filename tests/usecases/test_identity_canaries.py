"""Identity fields used as a cache scope are hashed before any output (issue 28, item 8: an
``api_key`` was written verbatim into ``--per-request`` CSV as the scope). Every output of
``estimate`` and ``reconcile`` (text, JSON, CSV, Parquet, HTML, stderr) is searched for the
canaries a log carries; the scopes stay apart, each the keyed hash of its value."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.core.identity import SCOPE_KEY_ENV

KEY = "test-key-of-this-run"
CANARIES = ("sk-CANARY-a1b2c3d4e5f6", "sk-CANARY-z9y8x7w6", "CANARY-ORG", "CANARY-USER")
SYSTEM = "You are a careful assistant. " * 200  # about 1,200 tokens: long enough to cache


def expected_hash(value: str) -> str:
    # core.identity: "#" and the first 16 hex digits of HMAC-SHA-256(key, value).
    return "#" + hmac.new(KEY.encode(), value.encode(), hashlib.sha256).hexdigest()[:16]


def record(index: int, api_key: str) -> dict[str, object]:
    return {
        "timestamp": 1_762_074_000 + index,
        "provider": "openai",
        "model": "gpt-4o",
        "api_key": api_key,
        "org": "CANARY-ORG",
        "request": {
            "model": "gpt-4o",
            "user": "CANARY-USER",
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"question {index}"},
            ],
        },
        "usage": {"prompt_tokens": 1210, "completion_tokens": 5},
    }


@pytest.mark.parametrize("table", ["csv", "parquet"])
def test_no_canary_reaches_any_output_and_scopes_stay_apart(
    migrated_db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str
) -> None:
    monkeypatch.setenv(SCOPE_KEY_ENV, KEY)
    log = tmp_path / "log.jsonl"
    rows = [record(0, CANARIES[0]), record(1, CANARIES[0]), record(2, CANARIES[1])]
    log.write_text("".join(json.dumps(row) + "\n" for row in rows))
    per_request = tmp_path / f"rows.{table}"
    html = tmp_path / "report.html"
    common = ["--at", "2026-11-01", "--database-url", migrated_db_url]
    outputs: list[str] = []
    for arguments in (
        ["estimate", str(log), "--target", "openai:gpt-4o", *common, "--json"],
        ["estimate", str(log), "--target", "openai:gpt-4o", *common, "--miss-causes"],
        [
            *("estimate", str(log), "--target", "openai:gpt-4o", *common),
            *("--per-request", str(per_request), "--html", str(html)),
        ],
        ["reconcile", str(log), "--json", "--database-url", migrated_db_url],
    ):
        result = CliRunner().invoke(app, arguments)
        assert result.exit_code == 0, result.stdout + result.stderr
        outputs += [result.stdout, result.stderr]
    frame = pd.read_csv(per_request) if table == "csv" else pd.read_parquet(per_request)
    outputs += [html.read_text(), per_request.read_bytes().decode("latin-1")]
    for output in outputs:
        for canary in ("CANARY", *CANARIES):
            assert canary not in output
    # The scope of each request: its identity fields in the reader's order (org,
    # organization, project, api_key, prompt_cache_key, cache_salt, user), each hashed.
    first = f"org={expected_hash('CANARY-ORG')};api_key={expected_hash(CANARIES[0])}"
    second = f"org={expected_hash('CANARY-ORG')};api_key={expected_hash(CANARIES[1])}"
    user = f";user={expected_hash('CANARY-USER')}"
    assert list(frame["scope"]) == [first + user, first + user, second + user]
