"""Every exit code of ``cachecast check`` and ``cachecast suggest``, and one line per error.

0: the candidate passes (suggest: done); 1: a regression (check only); 2: bad input or
configuration, one line on stderr and no traceback; 3: a bug, one line too. The CI gate
relies on 1 meaning "regression" and nothing else: an unreadable side must not read as one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.layouts.conftest import (
    OPENAI,
    Invoke,
    agent_layout,
    run_python,
    token_log,
    write_yaml,
)

PREFIX = list(range(1000, 3048))  # 2,048 distinct token ids


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path]:
    baseline = write_yaml(tmp_path / "base.yaml", agent_layout(sessions=2, turns=2))
    candidate = write_yaml(
        tmp_path / "cand.yaml",
        agent_layout(sessions=2, turns=2, system_top="Current time: {{ now }}\n"),
    )
    return baseline, candidate


def _one_error_line(result: object) -> str:
    stderr = getattr(result, "stderr", "")
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in getattr(result, "output", "")
    return lines[0]


def test_check_exit_0_and_1(invoke: Invoke, sides: tuple[Path, Path]) -> None:
    baseline, candidate = sides
    assert invoke("check", baseline, baseline, "--target", OPENAI).exit_code == 0
    # The timestamp on top of the system prompt leaves only the tool schemas (~250 tokens)
    # in common, under gpt-4o's 1,024-token minimum: the hit rate falls from over 60% to 0.
    result = invoke("check", baseline, candidate, "--target", OPENAI)
    assert result.exit_code == 1, result.output
    assert "REGRESSION" in result.stdout


def test_check_on_a_binary_file_exits_2_with_one_line(tmp_path: Path) -> None:
    # The installed command, as CI runs it: no database is needed for a vllm target.
    layout = write_yaml(tmp_path / "base.yaml", agent_layout(sessions=1, turns=1))
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)) * 8)
    completed = run_python(
        "-m", "cachecast", "check", str(layout), str(binary), "-t", "vllm", cwd=tmp_path
    )
    assert completed.returncode == 2, completed.stderr
    assert completed.stdout == ""
    assert completed.stderr.splitlines() == [
        f"error: {binary}: is a binary file, not a prompt log or layout"
    ]


@pytest.mark.parametrize(
    ("make_args", "expected"),
    [
        # a side that is not UTF-8 text (no NUL byte, so only the decoding tells)
        (lambda b, c, t: (b, _write(t / "latin1.jsonl", "é".encode("latin-1"))), "not UTF-8"),
        (lambda b, c, t: (b, t), "is a directory"),
        (lambda b, c, t: (b, t / "missing.yaml"), "missing.yaml: no such file"),
        (lambda b, c, t: (b, c, "--target", "openai:gpt-4oo"), "targets[0]: openai:gpt-4oo"),
        (lambda b, c, t: (b, c, "--target", "vllm:0"), "block size must be positive"),
        (lambda b, c, t: (b, c, "--max-hit-rate-drop", "2%"), "--max-hit-rate-drop"),
        (lambda b, c, t: (b, c, "--min-hit-rate", "1.5"), "--min-hit-rate"),
        (lambda b, c, t: (b, c, "--json-file", t / "no" / "r.json"), "the folder"),
        (lambda b, c, t: (b, c, "--markdown", t), "--markdown: is a directory"),
        (lambda b, c, t: (b, c, "--config", t / "none.toml"), "--config: no such file"),
        (lambda b, c, t: (b, c, "--at", "soon"), "--at"),
        (lambda b, c, t: (c, "--baseline-ref", "no-such-ref"), "git show failed"),
        (lambda b, c, t: (b,), "BASELINE CANDIDATE"),
    ],
    ids=[
        "not-utf8",
        "directory",
        "missing",
        "unknown-target",
        "bad-block-size",
        "threshold-points",
        "threshold-rate",
        "json-folder",
        "markdown-directory",
        "config",
        "at",
        "ref",
        "one-path",
    ],
)
def test_check_bad_input_exits_2_with_one_line(
    invoke: Invoke, sides: tuple[Path, Path], tmp_path: Path, make_args, expected: str
) -> None:
    baseline, candidate = sides
    args = make_args(baseline, candidate, tmp_path)
    extra = () if "--target" in args else ("--target", OPENAI)
    result = invoke("check", *args, *extra)
    assert result.exit_code == 2, result.output
    line = _one_error_line(result)
    assert line.startswith("error: ") and expected in line, line


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_check_bad_json_lines_are_named_by_file_and_line(invoke: Invoke, tmp_path: Path) -> None:
    log = token_log(tmp_path / "log.jsonl", [PREFIX, PREFIX])
    broken = tmp_path / "broken.jsonl"
    broken.write_text(log.read_text() + "{not json\n[1, 2]\n")
    result = invoke("check", log, broken, "--target", "vllm")
    assert result.exit_code == 2
    line = _one_error_line(result)
    # Lines 3 and 4 of the file: the first is named, the other counted.
    assert "broken.jsonl:3: <line>: invalid JSON" in line and "(and 1 more)" in line


def test_output_paths_are_checked_before_the_work(
    invoke: Invoke, sides: tuple[Path, Path], tmp_path: Path
) -> None:
    # A side that is bad input too: the output path is what the command refuses first, so
    # nothing was read before the refusal.
    baseline, _ = sides
    result = invoke(
        "check", baseline, tmp_path / "missing.yaml", "--target", OPENAI,
        "--json-file", tmp_path / "no" / "report.json",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--json-file" in _one_error_line(result)


def _inject_a_bug(monkeypatch: pytest.MonkeyPatch, module: str, name: str) -> None:
    """Exit 3 means a bug, which correct code does not have: one is injected (a function of
    the use case raises an error no caller foresees) to see how the command reports it."""

    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("injected [fault]")

    monkeypatch.setattr(f"{module}.{name}", broken)


def test_check_internal_error_exits_3_with_one_line(
    invoke: Invoke, sides: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _inject_a_bug(monkeypatch, "cachecast.usecases.check", "find_divergence")
    result = invoke("check", *sides, "--target", OPENAI)
    assert result.exit_code == 3
    line = _one_error_line(result)
    assert line.startswith("internal error: ZeroDivisionError: injected [fault]"), line


def test_suggest_exit_codes(
    invoke: Invoke, sides: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, candidate = sides
    done = invoke("suggest", candidate, "--target", OPENAI, "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["suggestions"]
    for args, expected in [
        ((tmp_path / "missing.jsonl", "--target", OPENAI), "no such file"),
        ((candidate, "--target", "nope"), "targets[0]"),
        ((candidate,), "no target"),
    ]:
        result = invoke("suggest", *args)
        assert result.exit_code == 2, (args, result.output)
        assert expected in _one_error_line(result)
    _inject_a_bug(monkeypatch, "cachecast.usecases.suggest", "analyze")
    result = invoke("suggest", candidate, "--target", OPENAI)
    assert result.exit_code == 3
    assert _one_error_line(result).startswith("internal error: ZeroDivisionError")
