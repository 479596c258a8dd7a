"""``cachecast contracts``: each command's JSON is its use case's report, ``audit`` over a
hand-made map, and every way the commands end (0, or 2 with one line, no traceback)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.usecases.contracts import (
    AuditRequest,
    ExportRequest,
    HistoryRequest,
    ListRequest,
    ShowRequest,
    audit,
    contract_history,
    export_contracts,
    list_contracts,
    show_contract,
)
from tests.contracts.test_audit import hand_made_litellm_map

NOV = dt.date(2026, 11, 1)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["contracts", *args])
    return result.exit_code, result.stdout, result.stderr


def cli_json(url: str, *args: str) -> Any:
    code, out, err = run(*args, "--json", "--database-url", url)
    assert code == 0, err
    return json.loads(out)


def test_json_of_the_read_commands_is_the_use_cases_report(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    listed = list_contracts(ListRequest(at=NOV, provider="google"), store)
    assert cli_json(migrated_db_url, "list", "--provider", "google", "--at", "2026-11-01") == [
        terms.model_dump(mode="json") for terms in listed.contracts
    ]
    shown = show_contract(ShowRequest(provider="openai", model="gpt-5.6", at=NOV), store)
    args = ("show", "openai", "gpt-5.6", "--at", "2026-11-01")
    assert cli_json(migrated_db_url, *args) == shown.contract.model_dump(mode="json")
    # Reference: GPT-5.6+ writes at 1.25x for a 30-minute TTL refreshed on hit, reads 0.1x.
    assert str(shown.contract.read_multiplier) == "0.1"
    history = contract_history(HistoryRequest(provider="google", model="gemini-2.5-flash"), store)
    assert cli_json(migrated_db_url, "history", "google", "gemini-2.5-flash") == [
        terms.model_dump(mode="json") for terms in history.versions
    ]
    # Reference section 5: 2.5 Flash's minimum was 1024 on the Feb-2026 page, 2048 later;
    # contracts-v3 carries the Feb-2026 terms back to the GA launch (2025-06-17); contracts-v28
    # starts 2048 on 2026-06-26, the first dated copy of the page showing it.
    assert [terms.min_cacheable_tokens for terms in history.versions] == [1024, 1024, 2048, 2048]
    assert history.versions[2].effective_from.isoformat() == "2026-06-26"
    assert history.versions[0].effective_from.isoformat() == "2025-06-17"


def test_export_is_the_document_import_reads(migrated_db_url: str, tmp_path: Path) -> None:
    store = ContractStore(migrated_db_url)
    document = export_contracts(ExportRequest(at=NOV, provider="openai"), store)
    code, out, err = run("export", "--at", "2026-11-01", "--provider", "openai",
                         "--database-url", migrated_db_url)  # fmt: skip
    assert code == 0, err
    assert json.loads(out) == document.model_dump(mode="json")
    assert json.loads(out)["format"] == "cachecast-contracts"
    # Importing it back finds every version already stored.
    path = tmp_path / "openai.json"
    path.write_text(out)
    code, out, err = run("import", str(path), "--database-url", migrated_db_url)
    assert code == 0, err
    assert f"imported 0 version(s) from {path} (cachecast format)" in out
    assert f"unchanged {len(document.contracts)}" in out


def test_audit_json_is_the_library_report(migrated_db_url: str, tmp_path: Path) -> None:
    # tests/contracts/test_audit.py's map: OpenAI prices gpt-4o-mini $0.15 in, $0.075 cached.
    path = hand_made_litellm_map(tmp_path)
    # genai-prices' bundled data is read too: the report holds both maps.
    request = AuditRequest(at=NOV, provider="openai", litellm_file=path)
    expected = audit(request, ContractStore(migrated_db_url)).model_dump(mode="json")
    args = ("audit", "--at", "2026-11-01", "--provider", "openai", "--litellm", str(path))
    answered = cli_json(migrated_db_url, *args)
    assert answered == expected
    assert [entry["map"] for entry in answered["maps"]] == ["litellm", "genai-prices"]
    rows = {
        (d["map"], d["kind"], d["model"], d["field"], d["ours"], d["theirs"])
        for d in answered["disagreements"]
    }
    assert ("litellm", "input_price", "gpt-4o-mini", "input", "0.15", "0.2") in rows
    assert ("litellm", "cache_read", "gpt-4o-mini", "cache_read", "0.075", "0.1") in rows
    assert any(row[1] == "missing_in_ours" and row[2] == "gpt-unknown-9" for row in rows)
    code, out, err = run(*args, "--database-url", migrated_db_url)
    assert code == 0, err
    assert "gpt-4o-mini" in out and "input_price" in out


@pytest.mark.parametrize(
    ("make_args", "needle"),
    [
        (lambda tmp: ["history", "openai", "gpt-zz-404"], "gpt-zz-404"),
        (lambda tmp: ["show", "openai", "gpt-5.6", "--at", "2026-02-30"], "--at:"),
        (lambda tmp: ["list", "--at", "yesterday"], "--at:"),
        (lambda tmp: ["import", str(tmp / "absent.json")], "cannot read"),
        (
            lambda tmp: ["import", str(export_of(tmp)), "--effective-from", "2026-11-01"],
            "effective_from: applies to LiteLLM price maps only (--effective-from)",
        ),
        (lambda tmp: ["export", "--output", str(tmp / "no" / "dir" / "x.json")], "does not exist"),
        (lambda tmp: ["export", "--output", str(tmp)], "is a directory"),
        (lambda tmp: ["audit", "--litellm", str(tmp / "absent.json")], "cannot read"),
        (lambda tmp: ["audit", "--at", "soon"], "--at:"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    make_args: Any, needle: str, migrated_db_url: str, tmp_path: Path
) -> None:
    code, _, err = run(*make_args(tmp_path), "--database-url", migrated_db_url)
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert needle in lines[0] and "Traceback" not in err
    assert len(lines) <= 2  # and the close matches, where there are some
    assert not (tmp_path / "no").exists()


def export_of(tmp_path: Path) -> Path:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({"format": "cachecast-contracts", "format_version": 1,
                                "contracts": []}))  # fmt: skip
    return path


@pytest.mark.parametrize("command", [["list"], ["show", "openai", "gpt-4o"], ["audit"]])
def test_a_database_that_is_not_there_is_named_never_created(
    command: list[str], tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere" / "cachecast.db"
    code, _, err = run(*command, "--database-url", f"sqlite:///{missing}")
    assert code == 2 and "cachecast db upgrade" in err and "Traceback" not in err
    assert not missing.parent.exists()
    code, _, err = run(*command, "--database-url", "nonsense://user:hunter22@")
    assert code == 2 and "--database-url" in err and "hunter22" not in err
