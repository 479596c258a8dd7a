"""Every way ``cachecast estimate`` ends: exit 0, 2 (bad input or configuration, one line on
stderr, never a traceback) and 3 (a bug: one line too)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.cli.common import command
from tests.conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "agent-log.jsonl"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["estimate", *args])
    return result.exit_code, result.stderr


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


def empty_folder(tmp: Path) -> Path:
    """A folder holding no log file (a folder stands for the logs in it)."""
    folder = tmp / "empty"
    folder.mkdir(exist_ok=True)
    (folder / "notes.md").write_text("not a log")
    return folder


@pytest.fixture
def good_log(tmp_path: Path) -> Path:
    path = tmp_path / "good.jsonl"
    record = {"timestamp": 0, "model": "gpt-4o", "request": {"tokens": [1, 2, 3]}}
    path.write_text(json.dumps(record) + "\n")
    return path


def test_success_exits_0(migrated_db_url: str) -> None:
    code, err = run(str(EXAMPLE), "-t", "openai:gpt-4o", "--database-url", migrated_db_url)
    assert code == 0, err


@pytest.mark.parametrize(
    ("make_args", "needle"),
    [
        (lambda log, tmp: [str(tmp / "missing.jsonl"), "-t", "openai:gpt-4o"], "no such file"),
        (
            lambda log, tmp: [str(empty_folder(tmp)), "-t", "openai:gpt-4o"],
            "a folder without log files",
        ),
        (lambda log, tmp: ["/dev/null", "-t", "openai:gpt-4o"], "not a regular file"),
        (lambda log, tmp: [str(log), "-t", "gpt-4o"], "PROVIDER:MODEL"),
        (lambda log, tmp: [str(log), "-t", "openai:gpt-4oo"], "unknown model"),
        (lambda log, tmp: [str(log), "-t", "openai:gpt-4o", "--at", "tomorrow"], "--at"),
        (
            lambda log, tmp: [str(log), "-t", "openai:gpt-4o", "--per-request", str(tmp / "x.txt")],
            ".csv or .parquet",
        ),
        (
            lambda log, tmp: [
                str(log),
                "-t",
                "openai:gpt-4o",
                "--per-request",
                str(tmp / "no" / "such" / "dir" / "rows.csv"),
            ],
            "does not exist",
        ),
        (lambda log, tmp: [str(log), "-t", "openai:gpt-4o", "--json", "--csv"], "at most one"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    make_args: object, needle: str, good_log: Path, tmp_path: Path, migrated_db_url: str
) -> None:
    args = make_args(good_log, tmp_path)  # type: ignore[operator]
    code, err = run(*args, "--database-url", migrated_db_url)
    assert code == 2, err
    lines = error_lines(err)
    assert needle in lines[0]
    # One line, plus at most the close-matches line; never a traceback.
    assert len(lines) <= 2 and "Traceback" not in err
    assert not (tmp_path / "no").exists()


def test_a_binary_file_is_bad_input_not_a_zero_bill(tmp_path: Path, migrated_db_url: str) -> None:
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(bytes(range(256)) * 40)
    code, err = run(str(binary), "-t", "openai:gpt-4o", "--database-url", migrated_db_url)
    assert code == 2
    (line,) = error_lines(err)
    assert line.startswith(f"error: {binary}: not a log format cachecast reads")
    # A file of our own format whose every record is bad is bad input too.
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"timestamp": 0, "request": {"tokens": "x"}}\n' * 2)
    code, err = run(str(bad), "-t", "openai:gpt-4o", "--database-url", migrated_db_url)
    assert code == 2
    assert f"error: {bad}: no readable record; {bad}:1: " in err and "Traceback" not in err


def test_strict_stops_at_the_first_bad_line_with_exit_2(
    tmp_path: Path, migrated_db_url: str
) -> None:
    log = tmp_path / "log.jsonl"
    good = json.dumps({"timestamp": 0, "model": "gpt-4o", "request": {"tokens": [1, 2]}})
    log.write_text(good + "\n{not json\n")
    code, err = run(str(log), "-t", "openai:gpt-4o", "--strict", "--database-url", migrated_db_url)
    (line,) = error_lines(err)
    assert code == 2 and line.startswith(f"error: {log}:2: <line>: invalid JSON")


def test_database_problems_exit_2_and_create_nothing(good_log: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "cachecast.db"
    code, err = run(str(good_log), "-t", "openai:gpt-4o", "--database-url", f"sqlite:///{missing}")
    assert code == 2 and "cachecast db upgrade" in err
    assert not missing.parent.exists()  # a read command never creates a database
    code, err = run(str(good_log), "-t", "openai:gpt-4o", "--database-url", "nonsense://x:secret@")
    assert code == 2 and "--database-url" in err and "secret" not in err


def test_an_unforeseen_error_exits_3_with_one_line() -> None:
    # The wrapper every command is registered through (not a fake of a command: the
    # wrapper itself is what is under test).
    bug = typer.Typer()

    @bug.command()
    @command
    def broken() -> None:
        raise RuntimeError("an invariant broke")

    result = CliRunner().invoke(bug, [])
    assert result.exit_code == 3
    assert error_lines(result.stderr) == [
        "internal error: RuntimeError: an invariant broke (a bug in cachecast; set"
        " CACHECAST_DEBUG=1 for the traceback)"
    ]
