"""Logs as users keep them: compressed files, folders, globs, runs over many files with an
unreadable one, files without timestamps (docs/log-formats.md, "Files, folders, globs";
docs/errors.md, "Runs over many files")."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.core.errors import LimitExceededError
from cachecast.core.limits import Limits, limits_in_force
from cachecast.passes.log_input import LogInput, LogReading, expand_log_paths
from tests.conftest import REPO_ROOT
from tests.logs.helpers import read

EXAMPLE = REPO_ROOT / "examples" / "agent-log.jsonl"


def records(path: Path, count: int, timed: bool = True) -> Path:
    lines = []
    for index in range(count):
        record = {"model": "gpt-4o", "request": {"tokens": [1, 2, 3, index]}}
        if timed:
            record["timestamp"] = 1_700_000_000 + index
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("suffix", "pack"),
    [(".gz", gzip.compress), (".bz2", bz2.compress), (".xz", lzma.compress)],
)
def test_compressed_logs_read_as_the_plain_file(tmp_path: Path, suffix: str, pack: object) -> None:
    plain = read(EXAMPLE)
    packed = tmp_path / f"agent-log.jsonl{suffix}"
    packed.write_bytes(pack(EXAMPLE.read_bytes()))  # type: ignore[operator]
    result = read(packed)
    assert (result.format, result.errors) == (plain.format, [])
    assert [r.input_tokens for r in result.requests] == [r.input_tokens for r in plain.requests]
    assert {r.source for r in result.requests} == {str(packed)}  # named as the user gave it


def test_a_compressed_log_is_bounded(tmp_path: Path) -> None:
    packed = tmp_path / "big.jsonl.gz"
    packed.write_bytes(gzip.compress(b"\n" * 5_000_000))  # 5 MB of newlines, ~5 KB packed
    with (
        limits_in_force(Limits(max_decompressed_bytes=1_000_000)),
        pytest.raises(LimitExceededError, match="max_decompressed_bytes"),
    ):
        read(packed)


def test_folders_and_globs(tmp_path: Path) -> None:
    records(tmp_path / "a.jsonl", 1)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.jsonl.gz").write_bytes(gzip.compress(b"{}\n"))
    (tmp_path / "notes.md").write_text("not a log")
    (tmp_path / ".cache").mkdir()
    records(tmp_path / ".cache" / "c.jsonl", 1)
    assert expand_log_paths([tmp_path]) == [tmp_path / "a.jsonl", tmp_path / "sub/b.jsonl.gz"]
    assert expand_log_paths([f"{tmp_path}/**/*.gz"]) == [tmp_path / "sub/b.jsonl.gz"]


def test_a_claude_code_projects_folder_gives_its_transcripts_only(tmp_path: Path) -> None:
    # ~/.claude/projects/<project>/ as recent Claude Code versions leave it: transcripts, and
    # beside them files that are no log (a session index, large tool results and background
    # shells' output as text, each sub-agent's type in agent-<id>.meta.json).
    project = tmp_path / "-home-u-app"
    session = project / "s-1"
    (session / "subagents").mkdir(parents=True)
    (session / "tool-results").mkdir()
    (project / "bash-outputs" / "s-1").mkdir(parents=True)
    transcript, agent = project / "s-1.jsonl", session / "subagents" / "agent-a1.jsonl"
    for log in (transcript, agent):
        log.write_text('{"type":"user","sessionId":"s-1"}\n')
    (session / "subagents" / "agent-a1.meta.json").write_text('{"agentType": "Explore"}')
    (project / "sessions-index.json").write_text('{"version": 1, "entries": []}')
    (session / "tool-results" / "toolu_01.txt").write_text("a long tool output")
    (project / "bash-outputs" / "s-1" / "shell.txt").write_text("a shell's output")
    assert expand_log_paths([tmp_path]) == [agent, transcript]  # in name order


def test_many_files_go_on_past_an_unreadable_one(tmp_path: Path) -> None:
    good = records(tmp_path / "good.jsonl", 2)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a log\n")
    reading = LogReading(LogInput.of_paths([good, bad]), None)
    assert len(list(reading.requests())) == 2
    reading.finish()  # not refused: the readable file was used
    (issue,) = reading.errors
    assert (issue.file, issue.location.line, issue.field) == (str(bad), None, "file")
    assert "not a log format cachecast reads" in issue.reason


def test_the_cli_reports_then_exits_2(tmp_path: Path, migrated_db_url: str) -> None:
    good = records(tmp_path / "good.jsonl", 2)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a log\n")
    args = ["estimate", str(good), str(bad), "-t", "openai:gpt-4o", "--json"]
    result = CliRunner().invoke(app, [*args, "--database-url", migrated_db_url])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["targets"][0]["requests"] == 2  # the report came first
    assert f"{bad}: file: not a log format" in result.stderr
    assert "1 file(s) could not be read" in result.stderr


def test_files_without_timestamps_keep_their_own_cache(tmp_path: Path) -> None:
    first = records(tmp_path / "one.jsonl", 2, timed=False)
    second = records(tmp_path / "two.jsonl", 2, timed=False)
    timed = records(tmp_path / "timed.jsonl", 1)
    reading = LogReading(LogInput.of_paths([first, second, timed]), None)
    scopes = {(r.source, r.scope) for r in reading.requests()}
    by_file: dict[str, set[str]] = {}
    for source, scope in scopes:
        by_file.setdefault(source, set()).add(scope)
    assert by_file[str(first)].isdisjoint(by_file[str(second)])
    assert all(str(first) in scope for scope in by_file[str(first)])
    assert not any(str(timed) in scope for scope in by_file[str(timed)])
