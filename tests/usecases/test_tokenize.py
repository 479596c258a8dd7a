"""``tokenize``: the library and ``cachecast tokenize --json`` give the same requests, and
every way the command ends (0, or 2 with one line on stderr and no traceback)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.core.errors import BadInputError
from cachecast.passes.log_input import LogInput
from cachecast.usecases.tokenize import RequestTokens, TokenizeRequest, tokenize
from tests.conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "agent-log.jsonl"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["tokenize", *args])
    return result.exit_code, result.stdout, result.stderr


def library(path: Path, **options: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The use case's requests (as JSON) and its report, called directly."""
    rows: list[RequestTokens] = []
    request = TokenizeRequest(log=LogInput.of_paths([path]), **options)
    report = tokenize(request, on_request=rows.append)
    return [row.model_dump(mode="json") for row in rows], report.model_dump(mode="json")


def cli_rows(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def empty_folder(tmp: Path) -> Path:
    """A folder holding no log file (a folder stands for the logs in it)."""
    folder = tmp / "empty"
    folder.mkdir(exist_ok=True)
    (folder / "notes.md").write_text("not a log")
    return folder


@pytest.fixture
def small_log(tmp_path: Path) -> Path:
    log = tmp_path / "log.jsonl"
    records: list[Any] = [
        {"model": "gpt-4o", "messages": [{"role": "user", "content": "hello world"}]},
        {"timestamp": 5, "tokens": [11, 12, 13]},
        {"input_length": 10, "output_length": 2, "hash_ids": [7]},
    ]
    log.write_text("".join(json.dumps(record) + "\n" for record in records) + "{broken\n")
    return log


def test_library_equals_cli_json_on_a_small_log(small_log: Path) -> None:
    rows, report = library(small_log)
    code, out, err = run(str(small_log), "--json")
    assert code == 0, err
    assert cli_rows(out) == rows
    # Hand-derived: OpenAI's chat rule counts 3 framing tokens for the message, 1 for
    # "user", 2 for "hello world" and 3 priming the reply = 9; the token record has 3 ids;
    # the trace record states 10 tokens in one 512-token block key.
    assert [(r["line"], r["input_tokens"], r["exact"]) for r in rows] == [
        (1, 9, True),
        (2, 3, True),
        (3, 10, True),
    ]
    assert rows[2]["blocks"] == 1
    assert (report["requests"], report["input_tokens"], report["skipped_lines"]) == (3, 22, 1)
    (issue,) = report["errors"]
    assert (issue["file"], issue["line"], issue["field"]) == (str(small_log), 4, "<line>")
    assert f"skipped: {small_log}:4: <line>: invalid JSON" in err
    assert "3 requests, 22 input tokens; 1 bad lines skipped" in err


def test_library_equals_cli_json_on_the_example_log() -> None:
    rows, report = library(EXAMPLE, model="gpt-4o")
    code, out, err = run(str(EXAMPLE), "--model", "gpt-4o", "--json")
    assert code == 0, err
    assert cli_rows(out) == rows
    # Every non-blank line of the example is a request (counted with the json module).
    lines = [line for line in EXAMPLE.read_text("utf-8").splitlines() if line.strip()]
    assert all(isinstance(json.loads(line), dict) for line in lines)
    assert report["requests"] == len(rows) == len(lines)
    assert {row["tokenizer"] for row in rows} == {"o200k_base"}
    assert report["input_tokens"] == sum(row["input_tokens"] for row in rows)


def test_text_output_lists_segments(small_log: Path) -> None:
    code, out, _ = run(str(small_log))
    assert code == 0
    assert "9 tokens\texact\to200k_base" in out
    # The message: 3 framing + 1 role + 2 content = tokens [0, 6); the priming [6, 9).
    assert "  [0, 6)\tmessage\tmessages[0]\n  [6, 9)\ttemplate\treply_priming" in out


def test_strict_stops_at_the_first_bad_line(small_log: Path) -> None:
    with pytest.raises(BadInputError) as raised:
        tokenize(
            TokenizeRequest(log=LogInput.of_paths([small_log], on_bad_record="stop")),
            on_request=lambda row: None,
        )
    assert raised.value.location.line == 4


@pytest.mark.parametrize(
    ("make_args", "needle"),
    [
        (lambda log, tmp: [str(tmp / "missing.jsonl")], "no such file"),
        (lambda log, tmp: [str(empty_folder(tmp))], "a folder without log files"),
        (lambda log, tmp: ["/dev/null"], "not a regular file"),
        (lambda log, tmp: [str(log), "--model", "zz-1"], "model: unknown model 'zz-1'"),
        (lambda log, tmp: [str(log), "--strict"], ":4: <line>: invalid JSON"),
        (lambda log, tmp: [str(log), "--format", "no-such-format"], "no-such-format"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    make_args: Any, needle: str, small_log: Path, tmp_path: Path
) -> None:
    code, _, err = run(*make_args(small_log, tmp_path))
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in err


def test_a_log_without_a_readable_record_exits_2(tmp_path: Path) -> None:
    log = tmp_path / "bad.jsonl"
    log.write_text('{"tokens": "x"}\n{"tokens": [-1]}\n')
    code, _, err = run(str(log), "--json")
    assert code == 2
    assert f"error: {log}: no readable record; {log}:1: tokens" in err
    assert "Traceback" not in err


def test_token_ids_beyond_uint32_are_refused_by_name(tmp_path: Path) -> None:
    # Ids are hashed as 32-bit unsigned integers: 2**32 cannot be a token id.
    log = tmp_path / "big.jsonl"
    log.write_text('{"tokens": [1, 4294967296]}\n{"tokens": [1, 4294967295]}\n')
    code, out, err = run(str(log), "--json")
    assert code == 0, err
    assert [row["line"] for row in cli_rows(out)] == [2]
    assert f"{log}:1: tokens[1]: expected a token id" in err
