"""Every command's help and output for a newcomer (issue 29, points 5, 6, 8 and 12): help
that names values, not Python types, keeps bracketed text, wraps at the terminal's width; a
``--version`` that works alone; tables that fit 80 and 120 columns and, piped, lines as long
as their content; ``PROVIDER:MODEL`` and ``--target a,b`` everywhere; ``| head`` exits 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
import typer
from typer.testing import CliRunner

from cachecast import __version__
from cachecast.cli import app
from tests.conftest import REPO_ROOT

AGENT_LOG = REPO_ROOT / "examples" / "agent-log.jsonl"
TARGETS = "openai:gpt-4o,openai:gpt-5.6,anthropic:claude-sonnet-4-5,deepseek:deepseek-chat"


def _commands() -> list[list[str]]:
    """Every command path of the app (``['contracts', 'show']``...)."""
    root = typer.main.get_command(app)
    found: list[list[str]] = []

    def walk(command: click.Command, path: list[str]) -> None:
        found.append(path)
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk(sub, [*path, name])

    walk(root, [])
    return found


def _run(args: list[str], columns: int, **env: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, env={"COLUMNS": str(columns), **env})
    return result.exit_code, result.output


@pytest.mark.parametrize("columns", [80, 120])
def test_every_help_names_values_and_fits(columns: int) -> None:
    for path in _commands():
        code, text = _run([*path, "--help"], columns)
        assert code == 0, (path, text)
        for forbidden in ("<bool>", "<str>", "<list[", "<path>", "<int>"):
            assert forbidden not in text, (path, forbidden)
        assert all(len(line) <= columns for line in text.splitlines()), path


def test_help_keeps_bracketed_text_and_lists_the_formats() -> None:
    _, check_help = _run(["check", "--help"], 100)
    assert "[tool.cachecast]" in check_help
    _, estimate_help = _run(["estimate", "--help"], 100)
    flat = " ".join(estimate_help.split())
    for name in ("claude-code", "har", "vcr", "otel", "langfuse", "codex", "cachecast"):
        assert name in flat
    assert "one request a line" not in flat
    assert "--at DATE" in estimate_help and "PROVIDER:MODEL" in estimate_help


def test_version_alone() -> None:
    code, text = _run(["--version"], 80)
    assert (code, text.strip()) == (0, __version__)


def test_estimate_table_fits_80_and_120_columns_and_is_not_cut_when_piped(
    migrated_db_url: str,
) -> None:
    args = ["estimate", str(AGENT_LOG), "--target", TARGETS, "--database-url", migrated_db_url]
    for columns in (80, 120):
        code, text = _run(args, columns)
        assert code == 0, text
        table = text.split("openai:gpt-4o: contract")[0]
        assert all(len(line) <= columns for line in table.splitlines()), columns
        assert "…" not in table
        # Identifiers whole: every target on one line (4 targets asked with one --target a,b).
        for name in TARGETS.split(","):
            assert any(line.lstrip().startswith(name) for line in table.splitlines()), name
    # Piped (no COLUMNS, not a terminal): nothing wrapped or cut.
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    piped = subprocess.run(
        [sys.executable, "-m", "cachecast", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=REPO_ROOT,
    )
    assert piped.returncode == 0, piped.stderr
    assert "…" not in piped.stdout
    assert any("no cache" in line and "saved" in line for line in piped.stdout.splitlines())
    # Money for people: cents, thousands separators; no "$-".
    assert "$-" not in piped.stdout


def test_contracts_list_fits_or_stacks_and_show_takes_provider_model(
    migrated_db_url: str,
) -> None:
    db = ["--database-url", migrated_db_url]
    for columns in (80, 120):
        code, text = _run(["contracts", "list", *db], columns)
        assert code == 0
        assert all(len(line) <= columns for line in text.splitlines()), columns
        # The longest seeded id is whole on its line, never split or cut.
        assert "bedrock/us-gov.anthropic.claude-sonnet-4-5-20250929-v1:0" in text
    code, joined = _run(["contracts", "show", "openai:gpt-5.6", "--json", *db], 80)
    code2, split = _run(["contracts", "show", "openai", "gpt-5.6", "--json", *db], 80)
    assert code == code2 == 0 and json.loads(joined) == json.loads(split)
    assert json.loads(joined)["model"] == "gpt-5.6"


def test_a_reader_that_stops_early_is_not_an_error(migrated_db_url: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    command = (
        f"{sys.executable} -m cachecast estimate {AGENT_LOG} --target {TARGETS}"
        f" --database-url {migrated_db_url} | head -1 >/dev/null; echo ${{PIPESTATUS[0]}}"
    )
    done = subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=REPO_ROOT,
    )
    assert done.stdout.strip() == "0", done.stderr
    assert "Traceback" not in done.stderr and "error" not in done.stderr


def test_check_json_is_a_flag_like_everywhere_else(migrated_db_url: str, tmp_path: Path) -> None:
    log = str(REPO_ROOT / "examples" / "faulty-agent-log.jsonl")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        app, ["check", log, log, "-t", "vllm:32", "--json", "--json-file", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == json.loads(out.read_text())
