"""``capacity``, ``compare`` and ``fleet`` on the command line: every exit code, one line per
error naming the option (or file and line) at fault, and never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from tests.economics.conftest import shared_prefix_file, tiny_gqa_config

TINY = ["--model", "llama-3.1-8b", "--gpu", "h100"]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.stdout, result.stderr


def one_error(err: str) -> str:
    """The one line a failed command prints."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    return lines[0]


# ------------------------------------------------------------------------------- capacity


def test_capacity_exit_codes() -> None:
    code, out, err = run("capacity", *TINY, "--json")
    assert code == 0 and json.loads(out)["fits"] is True and err == ""
    # An accelerator the table lacks is not found (exit 2), named by its option.
    code, _, err = run("capacity", "--model", "llama-3.1-8b", "--gpu", "tpu-v9")
    assert code == 2 and one_error(err).startswith("error: --gpu: unknown accelerator 'tpu-v9'")
    code, _, err = run("capacity", *TINY, "--kv-dtype", "fp3")
    assert code == 2 and one_error(err) == (
        "error: --kv-dtype: 'fp3': choose one of bf16, fp8, int4"
    )
    code, _, err = run("capacity", *TINY, "--gpu-memory-utilization", "1.5")
    assert (
        code == 2
        and one_error(err) == "error: --gpu-memory-utilization: must be in (0, 1], got 1.5"
    )
    code, _, err = run("capacity", *TINY, "--context", "100", "--cached", "100")
    assert code == 2 and one_error(err).startswith("error: --cached: must be in [0, context)")
    code, _, err = run("capacity", "--model", "no-such-model", "--gpu", "h100")
    assert code == 2 and "neither a preset" in one_error(err)


def test_capacity_config_errors_name_the_file_and_field(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"hidden_size": 64, "num_hidden_layers": 2}))
    code, _, err = run("capacity", "--model", str(config), "--gpu", "h100")
    # The file is named as a report would name it (its folder and name), then the field.
    assert code == 2 and one_error(err) == (
        f"error: {tmp_path.name}/config.json: num_attention_heads: must be a positive integer,"
        " got None"
    )
    config.write_bytes(b"\xff\xfe not json")
    code, _, err = run("capacity", "--model", str(config), "--gpu", "h100")
    assert code == 2 and "config.json is not JSON" in one_error(err)
    code, _, err = run("capacity", "--model", "/dev/null", "--gpu", "h100")
    assert code == 2 and "is not a regular file" in one_error(err)


def test_capacity_json_carries_no_absolute_path(tmp_path: Path) -> None:
    # A config saved from an absolute folder (as save_pretrained records it), read from a
    # folder outside the working directory: neither path reaches the report.
    folder = tmp_path / "checkpoints" / "tiny-gqa"
    folder.mkdir(parents=True)
    config = tiny_gqa_config(_name_or_path=str(tmp_path / "home" / "me" / "tiny-gqa"))
    (folder / "config.json").write_text(json.dumps(config))
    code, out, err = run("capacity", "--model", str(folder), "--gpu", "l40s", "--json")
    assert code == 0, err
    assert str(tmp_path) not in out
    report = json.loads(out)
    model = report["inputs"]["model"]
    assert model["name"] == "tiny-gqa"
    assert model["source"] == "config.json file tiny-gqa/config.json"
    assert report["formulas"]["source"].startswith("docs/economics.md")

    def strings(value: object) -> list[str]:
        if isinstance(value, dict):
            return [text for item in value.values() for text in strings(item)]
        if isinstance(value, list):
            return [text for item in value for text in strings(item)]
        return [value] if isinstance(value, str) else []

    assert [text for text in strings(report) if text.startswith("/")] == []


# -------------------------------------------------------------------------------- compare


def test_compare_exit_codes(tmp_path: Path, migrated_db_url: str) -> None:
    log = shared_prefix_file(tmp_path)
    code, out, _ = run("compare", str(log), *TINY, "--json")
    assert code == 0 and json.loads(out)["log"]["requests"] == 3
    code, _, err = run("compare", str(tmp_path / "missing.jsonl"), *TINY)
    assert code == 2 and one_error(err) == f"error: {tmp_path / 'missing.jsonl'}: no such file"
    empty = tmp_path / "empty"  # a folder stands for the logs in it: this one holds none
    empty.mkdir()
    code, _, err = run("compare", str(empty), *TINY)
    assert code == 2 and "a folder without log files" in one_error(err)
    code, _, err = run("compare", "/dev/null", *TINY)
    assert code == 2 and "is not a regular file" in one_error(err)
    code, _, err = run("compare", str(log), *TINY, "--gpu-price", "two")
    assert code == 2 and one_error(err) == "error: --gpu-price: 'two' is not a decimal number"
    code, _, err = run("compare", str(log), *TINY, "--max-utilization", "1")
    assert code == 2 and one_error(err) == "error: --max-utilization: must be in (0, 1), got 1.0"
    code, _, err = run("compare", str(log), *TINY, "--tokenizer", "no-such-model")
    assert code == 2 and one_error(err).startswith("error: --tokenizer: unknown model")
    # A log that does not fit the deployment: bad input, said in one line.
    code, _, err = run("compare", str(log), "--model", "llama-3.3-70b", "--gpu", "h100")
    assert code == 2 and "does not fit" in one_error(err)
    # Targets and measurements need a migrated database; an unknown one is named.
    database = ["--database-url", migrated_db_url]
    code, _, err = run("compare", str(log), *TINY, "--target", "openai:gpt-4oo", *database)
    assert code == 2 and "gpt-4o" in err
    code, _, err = run("compare", str(log), *TINY, "--measurement-id", "7", *database)
    assert code == 2 and one_error(err).startswith(
        "error: --measurement-id: no engine measurement with id 7"
    )
    unmigrated = f"sqlite:///{tmp_path / 'empty.db'}"
    code, _, err = run(
        "compare", str(log), *TINY, "--target", "openai:gpt-4o", "--database-url", unmigrated
    )
    assert code == 2 and "empty.db" in one_error(err)


def test_compare_output_paths_are_checked_before_the_work(tmp_path: Path) -> None:
    # The log is missing too: the output path is refused first, before anything is read.
    missing_log = str(tmp_path / "missing.jsonl")
    chart = tmp_path / "no-such-folder" / "chart.png"
    code, _, err = run("compare", missing_log, *TINY, "--plot", str(chart))
    assert code == 2 and one_error(err) == (
        f"error: {chart}: --plot: the folder {chart.parent} does not exist"
    )
    code, _, err = run("compare", missing_log, *TINY, "--html", str(tmp_path))
    assert code == 2 and one_error(err) == f"error: {tmp_path}: --html: is a directory"


def test_compare_bad_lines_skipped_or_strict(tmp_path: Path) -> None:
    log = shared_prefix_file(tmp_path)
    lines = log.read_text().splitlines()
    log.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    code, out, err = run("compare", str(log), *TINY, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["skipped_lines"] == 1 and report["log"]["requests"] == 3
    (issue,) = report["errors"]
    assert (issue["file"], issue["line"], issue["field"]) == (str(log), 2, "<line>")
    assert f"{log}:2: <line>: invalid JSON" in err
    code, _, err = run("compare", str(log), *TINY, "--strict")
    assert code == 2 and one_error(err).startswith(f"error: {log}:2: <line>:")


# ---------------------------------------------------------------------------------- fleet


def test_fleet_exit_codes(tmp_path: Path) -> None:
    log = shared_prefix_file(tmp_path)
    fleet = ["fleet", str(log), *TINY, "--replicas", "2"]
    code, out, _ = run(*fleet, "--json", "--routing", "round-robin")
    assert code == 0 and [p["routing"] for p in json.loads(out)["policies"]] == ["round-robin"]
    code, _, err = run(*fleet, "--window", "0")
    assert code == 2 and one_error(err) == "error: --window: must be positive, got 0.0"
    code, _, err = run(*fleet, "--gpu-price", "-2")
    assert (
        code == 2
        and one_error(err) == "error: --gpu-price: must be a non-negative number, got '-2'"
    )
    code, _, err = run("fleet", str(tmp_path / "none.jsonl"), *TINY, "--replicas", "2")
    assert code == 2 and one_error(err).endswith("none.jsonl: no such file")
    code, _, err = run(*fleet, "--gpu", "h20")
    assert code == 2 and "unknown accelerator 'h20'" in err and "h200" in err


@pytest.mark.parametrize("command", ["capacity", "compare", "fleet"])
def test_usage_errors_exit_2(command: str) -> None:
    # A missing required option is typer's usage error: exit 2, no traceback.
    code, _, _ = run(command)
    assert code == 2
