"""``reconcile`` on a folder that mixes an agent session with recorded HTTP traffic: each file
is predicted the way it would be alone (the transcript under the Claude Code profile, the
cassette by the replay), and one report sums them (docs/predictions.md, "Logs that mix
clients").

The transcript is three responses of one turn in Claude Code's documented line format
(docs/clients.md, "Claude Code"; one line per content block, ``message.usage`` as the
Messages API states it) with usage made up here, claude-sonnet-4-5 on 2026-02-23 ($3 in,
$15 out a million; 5-minute writes x1.25 = $3.75, reads x0.1 = $0.30; explicit breakpoints,
at least 1,024 tokens cached):

  request  input  read   write  prompt  predicted read / write (the profile: every request
  R1       3      0      5,000  5,003   0 / 5,003 - 3 = 5,000   reads what the one before
  R2       3      5,000  400    5,403   5,000 / 5,403 - 5,000 - 3 = 400   cached, the
  R3       3      2,000  3,800  5,803   5,400 / 5,803 - 5,400 - 3 = 400   newest message
                                                                      written after it)
R1 and R2 match to the token; R3 read 3,400 tokens less than the 5,400 R2 left cached:
outside max(8, 1% of 5,803 = 58) tokens.

The cassette is vcrpy's: two gpt-4o chat completions dated 2026-04-01 (the ``Date`` header;
$2.50 in, $10 out; automatic caching from 1,024 tokens), each of a prompt of a few words,
reported as 1,000 prompt tokens, none cached, and 100 output tokens: nothing is predicted
cached (the body is far under 1,024 tokens), as observed: both exact. Each costs
1,000 x 2.5 + 100 x 10 = 3,500 / 1e6 = $0.0035.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.core.errors import BadInputError
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileReport, ReconcileRequest, reconcile
from tests.logs.helpers import vcr_cassette, vcr_interaction
from tests.sessions.helpers import codex_rollout

SESSION = "5c0e8f8a-0000-4000-8000-000000000001"
# (uncached input, read, written) of R1, R2, R3 (module docstring)
USAGE = [(3, 0, 5_000), (3, 5_000, 400), (3, 2_000, 3_800)]


def claude_transcript(path: Path) -> Path:
    """A prompt, then three responses each followed by its tool's result."""
    lines: list[dict[str, Any]] = []

    def add(kind: str, second: int, message: dict[str, Any]) -> None:
        lines.append(
            {
                "type": kind,
                "uuid": f"l{len(lines) + 1}",
                "parentUuid": lines[-1]["uuid"] if lines else None,
                "sessionId": SESSION,
                "cwd": "/w",
                "version": "2.0.28",
                "timestamp": f"2026-02-23T10:00:{second:02d}Z",
                "message": message,
            }
        )

    add("user", 0, {"role": "user", "content": "list the files"})
    for number, (uncached, read, written) in enumerate(USAGE, start=1):
        usage = {
            "input_tokens": uncached,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            "cache_creation": {
                "ephemeral_5m_input_tokens": written,
                "ephemeral_1h_input_tokens": 0,
            },
            "output_tokens": 10,
        }
        content = [{"type": "tool_use", "id": f"t{number}", "name": "Bash", "input": {}}]
        message = {
            "id": f"msg_{number}",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": content,
            "usage": usage,
        }
        add("assistant", 10 * number, message)
        result = [{"type": "tool_result", "tool_use_id": f"t{number}", "content": "done"}]
        add("user", 10 * number + 5, {"role": "user", "content": result})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def chat(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    request = {"model": "gpt-4o", "messages": [{"role": "user", "content": text}]}
    response = {
        "id": f"chatcmpl-{len(text)}",
        "object": "chat.completion",
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100},
    }
    return request, response


def cassette(path: Path) -> Path:
    uri = "https://api.openai.com/v1/chat/completions"
    return vcr_cassette(
        path,
        vcr_interaction(uri, *chat("Say hello.")),
        vcr_interaction(uri, *chat("Say goodbye.")),
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "sessions").mkdir(parents=True)
    (root / "cassettes").mkdir()
    claude_transcript(root / "sessions" / f"{SESSION}.jsonl")
    cassette(root / "cassettes" / "test_chat.yaml")
    return root


def run(paths: list[Path], url: str, **options: Any) -> ReconcileReport:
    request = ReconcileRequest(log=LogInput.of_paths(paths), **options)
    return reconcile(request, ContractStore(url))


def test_each_file_is_predicted_as_its_client_does(folder: Path, migrated_db_url: str) -> None:
    report = run([folder], migrated_db_url)
    rows = {row.request_id: row for row in report.requests}
    session = {f"msg_{n}": rows[f"msg_{n}"] for n in (1, 2, 3)}
    predicted = {
        key: (row.predicted_cache_read_tokens, row.predicted_cache_write_tokens)
        for key, row in session.items()
    }
    assert predicted == {"msg_1": (0, 5_000), "msg_2": (5_000, 400), "msg_3": (5_400, 400)}
    observed = {
        key: (row.observed_cache_read_tokens, row.observed_cache_write_tokens)
        for key, row in session.items()
    }
    assert observed == {"msg_1": (0, 5_000), "msg_2": (5_000, 400), "msg_3": (2_000, 3_800)}
    assert [session[k].within_tolerance for k in session] == [True, True, False]
    assert session["msg_3"].classification is not None
    # 3 x 3 + 5,000 x 3.75 + 10 x 15 = 18,909 / 1e6; R3 predicted 9 + 5,400 x 0.3 + 400 x 3.75
    # + 150 = 3,279, observed 9 + 2,000 x 0.3 + 3,800 x 3.75 + 150 = 15,009.
    assert session["msg_1"].predicted_cost == session["msg_1"].observed_cost == Decimal("0.018909")
    assert session["msg_3"].predicted_cost == Decimal("0.003279")
    assert session["msg_3"].observed_cost == Decimal("0.015009")
    replayed = [row for row in report.requests if row.source.endswith("test_chat.yaml")]
    assert [(r.predicted_cache_read_tokens, r.observed_cache_read_tokens) for r in replayed] == [
        (0, 0),
        (0, 0),
    ]
    assert all(r.exact_match and r.target == "openai:gpt-4o" for r in replayed)
    # (The predicted bill prices the prompt as tokenized from the body, a few tokens.)
    assert all(r.observed_cost == Decimal("0.0035") for r in replayed)
    # The summary counts every request of both kinds.
    summary = report.summary
    assert (summary.requests, summary.within_tolerance, summary.exact_matches) == (5, 4, 4)
    # 0.018909 + 0.003159 (R2: 9 + 1,500 + 1,500 + 150) + 0.015009 + 2 x 0.0035
    assert summary.observed_cost == Decimal("0.044077")
    assert sum(summary.classes.values()) == 1
    # Each file names the profile it was read with; the client is the one profile used.
    assert [(f.client, f.requests, f.within_tolerance, f.exact) for f in report.files] == [
        ("none", 2, 2, 2),
        ("claude-code", 3, 2, 2),
    ]
    assert report.client is not None and report.client.name == "claude-code"
    assert report.client.chosen_by == "log format" and report.client.versions == ["2.0.28"]
    assert [client.name for client in report.clients] == ["claude-code"]
    assert report.errors == [] and report.unpriced == {}


def test_the_mixed_report_is_each_file_reconciled_alone(folder: Path, migrated_db_url: str) -> None:
    whole = run([folder], migrated_db_url)
    transcript = run([folder / "sessions" / f"{SESSION}.jsonl"], migrated_db_url)
    recorded = run([folder / "cassettes" / "test_chat.yaml"], migrated_db_url)
    alone = {(row.source, row.line): row for row in transcript.requests + recorded.requests}
    assert {(row.source, row.line): row for row in whole.requests} == alone
    assert [t.name for t in whole.targets] == [
        t.name for t in recorded.targets + transcript.targets
    ]
    for field in ("requests", "within_tolerance", "exact_matches", "within_one_percent"):
        parts = getattr(transcript.summary, field) + getattr(recorded.summary, field)
        assert getattr(whole.summary, field) == parts, field
    assert whole.summary.predicted_cost == (
        transcript.summary.predicted_cost + recorded.summary.predicted_cost
    )


def test_two_clients_each_keep_their_profile(folder: Path, migrated_db_url: str) -> None:
    codex_rollout(folder / "sessions" / "rollout.jsonl", "gpt-5.2-codex")
    whole = run([folder], migrated_db_url)
    assert whole.client is None  # several profiles: each file's entry names its own
    assert sorted(client.name for client in whole.clients) == ["claude-code", "codex"]
    clients = {Path(f.source).name: f.client for f in whole.files}
    assert clients == {
        f"{SESSION}.jsonl": "claude-code",
        "rollout.jsonl": "codex",
        "test_chat.yaml": "none",
    }
    codex = run([folder / "sessions" / "rollout.jsonl"], migrated_db_url)
    (row,) = [row for row in whole.requests if row.source.endswith("rollout.jsonl")]
    assert [row] == codex.requests
    assert whole.summary.requests == 6


def test_the_client_option_still_forces_one_profile(folder: Path, migrated_db_url: str) -> None:
    report = run([folder], migrated_db_url, client="claude-code")
    assert report.client is not None and report.client.chosen_by == "client option"
    # The cassette's requests too are predicted under the named profile, as before.
    assert [(Path(f.source).name, f.client, f.requests) for f in report.files] == [
        (f"{SESSION}.jsonl", "claude-code", 3),
        ("test_chat.yaml", "claude-code", 2),
    ]
    assert [client.name for client in report.clients] == ["claude-code"]
    assert report.errors == [] and report.summary.requests == 5


def test_an_unreadable_file_is_reported_and_exits_2(folder: Path, migrated_db_url: str) -> None:
    (folder / "sessions" / "manifest.json").write_text('{"manifest_version": 1}\n')
    report = run([folder], migrated_db_url)
    (issue,) = report.errors
    assert issue.file.endswith("manifest.json") and issue.field == "file" and issue.line is None
    assert report.summary.requests == 5
    result = CliRunner().invoke(
        app, ["reconcile", str(folder), "--json", "--database-url", migrated_db_url]
    )
    assert result.exit_code == 2, result.output
    assert json.loads(result.stdout)["summary"]["within_tolerance"] == 4


def test_per_request_tables_are_refused_on_a_mixed_log(
    folder: Path, migrated_db_url: str, tmp_path: Path
) -> None:
    with pytest.raises(BadInputError, match="per-request on a log that mixes"):
        run([folder], migrated_db_url, per_request=tmp_path / "rows.csv")


def test_a_kind_of_file_with_nothing_priced_is_listed_unpriced(
    folder: Path, migrated_db_url: str
) -> None:
    # A cassette of a model no contract covers beside the transcript: its requests are
    # unpriced, as in a run of one kind whose other requests are priced; the run goes on.
    uri = "https://api.openai.com/v1/chat/completions"
    request, response = chat("Hi.")
    request["model"] = response["model"] = "gpt-nonexistent-9"
    (folder / "cassettes" / "test_chat.yaml").unlink()
    vcr_cassette(folder / "cassettes" / "other.yaml", vcr_interaction(uri, request, response))
    report = run([folder], migrated_db_url)
    assert report.summary.requests == 3 and report.errors == []
    ((reason, count),) = report.unpriced.items()
    assert count == 1 and "gpt-nonexistent-9" in reason


def test_nothing_priced_in_any_kind_is_refused(folder: Path, migrated_db_url: str) -> None:
    (folder / "cassettes" / "test_chat.yaml").unlink()
    uri = "https://api.openai.com/v1/chat/completions"
    request, response = chat("Hi.")
    request["model"] = response["model"] = "gpt-nonexistent-9"
    vcr_cassette(folder / "cassettes" / "other.yaml", vcr_interaction(uri, request, response))
    transcript = folder / "sessions" / f"{SESSION}.jsonl"
    transcript.write_text(transcript.read_text().replace("claude-sonnet-4-5", "claude-nonexistent"))
    with pytest.raises(BadInputError, match="nothing to reconcile") as raised:
        run([folder], migrated_db_url)
    assert "gpt-nonexistent-9" in raised.value.message
    assert "claude-nonexistent" in raised.value.message


def test_a_kind_that_cannot_be_read_is_reported_per_file(
    folder: Path, migrated_db_url: str
) -> None:
    # A Codex rollout cut before its first response: alone it is refused ("no readable
    # record"); beside other files it is reported as not read, exit 2, the others reconciled.
    rollout = codex_rollout(folder / "sessions" / "rollout.jsonl", "gpt-5.2-codex")
    rollout.write_text("".join(rollout.read_text().splitlines(keepends=True)[:2]))
    with pytest.raises(BadInputError, match="no readable record"):
        run([rollout], migrated_db_url)
    report = run([folder], migrated_db_url)
    (issue,) = report.errors
    assert issue.file == str(rollout) and issue.field == "file" and issue.line is None
    assert issue.reason.startswith("not reconciled: ")
    assert report.summary.requests == 5
    assert [client.name for client in report.clients] == ["claude-code"]
