"""``reconcile`` on the shared agent sessions: observed values taken from the files by plain
JSON parsing here, the share within tolerance counted here from them; the CLI and the API
name the client; a log that can price nothing is exit 2 / 422 saying why."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.core import db
from cachecast.core.errors import BadInputError
from cachecast.passes.log_input import LogInput
from cachecast.service.app import create_app
from cachecast.simulator.types import fraction_text
from cachecast.usecases.reconcile import ReconcileReport, ReconcileRequest, reconcile
from tests.conftest import shared_data
from tests.service.conftest import make_settings
from tests.sessions.helpers import codex_rollout


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'cachecast.db'}"
    db.upgrade(url)
    return url


def claude_files() -> list[Path]:
    root = shared_data("recordings/claude_code")
    return sorted(root.rglob("*.jsonl"))


def codex_files() -> list[Path]:
    root = shared_data("recordings/codex_cli")
    return sorted(root.rglob("*.jsonl"))


def claude_usage(path: Path) -> dict[str, tuple[int, int, int]]:
    """message.id -> (prompt total, read, written) of its last line, as PROVENANCE.md says:
    usage counted once per message.id; <synthetic> lines are not API calls."""
    found: dict[str, tuple[int, int, int]] = {}
    for line in path.read_text().splitlines():
        event = json.loads(line)
        message = event.get("message") or {}
        if event.get("type") != "assistant" or message.get("model") == "<synthetic>":
            continue
        usage = message["usage"]
        read = usage.get("cache_read_input_tokens") or 0
        written = usage.get("cache_creation_input_tokens") or 0
        found[message["id"]] = (usage["input_tokens"] + read + written, read, written)
    return found


def run(files: list[Path], url: str, **options: Any) -> ReconcileReport:
    request = ReconcileRequest(log=LogInput.of_paths(files), **options)
    return reconcile(request, ContractStore(url))


def test_claude_code_sessions_within_tolerance(store_url: str) -> None:
    files = claude_files()
    report = run(files, store_url)
    assert report.client is not None and report.client.name == "claude-code"
    assert report.client.versions == ["1.0.108", "1.0.98", "2.1.38", "2.1.39"]
    observed = {mid: each for path in files for mid, each in claude_usage(path).items()}
    assert report.summary.requests == len(report.requests)
    within = 0
    for row in report.requests:
        total, read, written = observed[row.request_id]
        assert (row.input_tokens, row.observed_cache_read_tokens) == (total, read)
        assert row.observed_cache_write_tokens == written
        allowed = max(8, total // 100)
        ok = (
            abs(row.predicted_cache_read_tokens - read) <= allowed
            and abs(row.predicted_cache_write_tokens - written) <= allowed
        )
        assert ok == row.within_tolerance
        within += ok
        if not ok:  # every other request is explained in words, with a cause
            assert row.classification is not None and len(row.explanation) > 40
    # Every request is priced: the haiku sub-agent's 13 requests too, since the catalog holds
    # each model's price history back to its launch (docs/contracts.md).
    assert report.unpriced == {}
    assert report.summary.requests == len(observed)
    assert within >= 0.95 * report.summary.requests
    # Per file, every request is predicted, priced or not: the sub-agent's 13 included.
    assert sum(f.requests for f in report.files) == len(observed)
    assert sum(f.within_tolerance for f in report.files) >= 0.95 * len(observed)


def test_codex_sessions_within_tolerance(store_url: str) -> None:
    # The rollouts (2026-02-23) predate gpt-5.3-codex's API launch (2026-02-24) but not its
    # release in Codex (2026-02-05, lifecycle.json): priced at the launch's prices, with a
    # note that the price on that day is unverified.
    report = run(codex_files(), store_url)
    assert report.client is not None and report.client.name == "codex"
    assert report.unpriced == {}
    (codex,) = [t for t in report.targets if t.model == "gpt-5.3-codex"]
    assert any(n.startswith("[U] price unverified on 2026-02-23") for n in codex.notes)
    within = 0
    for row in report.requests:
        assert row.observed_cache_write_tokens is None  # OpenAI reports no writes
        allowed = max(8, row.input_tokens // 100)
        ok = abs(row.predicted_cache_read_tokens - row.observed_cache_read_tokens) <= allowed
        assert ok == row.within_tolerance
        within += ok
        if not ok:
            assert row.classification is not None
    # All 487 requests priced: the ccusage fixture's gpt-5.2-codex request too (2026-05-13),
    # under its API launch version of 2026-01-15 (contracts-v8).
    assert report.summary.requests == 487
    # 461 of the 487 (94.7%): the others are OpenAI's best effort (misses of a prefix the log
    # shows cached seconds before, a read after an idle gap past the lifetime assumed at a new
    # user turn), the first request of the log (a cache warm before it), compaction and the
    # hand-written fixture's model change (docs/predictions.md).
    assert within >= 461
    assert report.summary.classes.get("provider_best_effort", 0) > 0
    # The summary counts the requests explained as a cache warm before the log began, and
    # gives the share within tolerance of the others.
    warm = sum(row.classification == "warm_cache_at_log_start" for row in report.requests)
    assert warm > 0 and report.summary.warm_at_log_start == warm
    rest = report.summary.requests - warm
    assert report.summary.within_tolerance_share_after_warm_start == fraction_text(
        Fraction(within, rest)
    )


def test_nothing_priced_is_bad_input(store_url: str, tmp_path: Path) -> None:
    rollout = codex_rollout(tmp_path / "rollout.jsonl", "gpt-nothing-9")
    with pytest.raises(BadInputError, match=r"nothing in the log can be priced: .*gpt-nothing-9"):
        run([rollout], store_url)
    result = CliRunner().invoke(
        app, ["reconcile", str(rollout), "--json", "--database-url", store_url]
    )
    assert result.exit_code == 2
    assert "gpt-nothing-9" in result.output and "Traceback" not in result.output


def test_client_option_cli_and_unknown_client(store_url: str) -> None:
    path = shared_data("recordings/claude_code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl")
    base = ["reconcile", str(path), "--database-url", store_url]
    result = CliRunner().invoke(app, [*base, "--json", "--client", "claude-code"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["client"]["chosen_by"] == "client option"
    assert data["files"][0]["requests"] == 7  # PROVENANCE.md: 7 unique messages
    result = CliRunner().invoke(app, [*base, "--client", "nobody"])
    assert result.exit_code == 2
    assert "unknown client 'nobody'" in result.output and "claude-code, codex" in result.output
    table = CliRunner().invoke(app, base)
    assert table.exit_code == 0 and "client: Claude Code" in table.stdout


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_api_names_the_client(store_url: str) -> None:
    path = shared_data("recordings/claude_code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl")
    service = create_app(make_settings(store_url))
    transport = httpx.ASGITransport(app=service)
    async with httpx.AsyncClient(transport=transport, base_url="http://cachecast") as client:
        files = {"log": (path.name, path.read_bytes(), "application/x-ndjson")}
        answer = await client.post(
            "/v1/reconciliations", files=files, data={"client": "claude-code"}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["client"]["name"] == "claude-code"
        answer = await client.post("/v1/reconciliations", files=files, data={"client": "nobody"})
        assert answer.status_code == 422 and "unknown client" in answer.text


@pytest.mark.anyio
async def test_api_inline_records_under_a_named_client(store_url: str) -> None:
    # Two requests of one session, 5 minutes' TTL: the second (60 s later) reads the 10,000
    # tokens the first wrote; the first (nothing before it) writes 10,000 of its 10,003.
    def record(at: str, read: int, written: int) -> dict[str, Any]:
        return {
            "timestamp": at,
            "session": "s1",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "request": {"messages": [{"role": "user", "content": "hi"}]},
            "prompt_complete": False,
            "observed": {
                "input_tokens": read + written + 3,
                "cache_read_tokens": read,
                "cache_write_tokens": written,
                "output_tokens": 5,
            },
        }

    body = {
        "records": [
            record("2026-01-10T10:00:00Z", 0, 10_000),
            record("2026-01-10T10:01:00Z", 10_000, 497),
        ],
        "client": "claude-code",
    }
    service = create_app(make_settings(store_url))
    transport = httpx.ASGITransport(app=service)
    async with httpx.AsyncClient(transport=transport, base_url="http://cachecast") as client:
        answer = await client.post("/v1/reconciliations", json=body)
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert report["client"]["chosen_by"] == "client option"
    rows = sorted(report["requests"], key=lambda row: row["line"])
    assert [row["predicted_cache_read_tokens"] for row in rows] == [0, 10_000]
    assert [row["predicted_cache_write_tokens"] for row in rows] == [10_000, 497]
    assert all(row["within_tolerance"] for row in rows)


def test_generic_log_that_prices_nothing_is_exit_2(store_url: str, tmp_path: Path) -> None:
    # Not a session: a cachecast JSON-lines record of a model no contract knows (its name
    # picks a public tokenizer, so the log is read and replayed).
    record = {
        "timestamp": "2026-02-23T11:40:00Z",
        "provider": "openai",
        "model": "gpt-4o-nothing-9",
        "request": {"messages": [{"role": "user", "content": "hello"}]},
        "observed": {"input_tokens": 12, "cache_read_tokens": 0, "output_tokens": 3},
    }
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps(record) + "\n")
    result = CliRunner().invoke(app, ["reconcile", str(log), "--database-url", store_url])
    assert result.exit_code == 2, result.output
    assert "nothing to reconcile" in result.output
    assert "gpt-4o-nothing-9" in result.output


def test_per_request_table_of_a_session(store_url: str, tmp_path: Path) -> None:
    path = shared_data("recordings/claude_code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl")
    table = tmp_path / "rows.csv"
    report = run([path], store_url, per_request=table)
    lines = table.read_text().splitlines()
    assert len(lines) == 1 + 20  # a header and PROVENANCE.md's 20 unique messages
    header = lines[0].split(",")
    assert header[:3] == ["target", "source", "line"] and "classification" in header
    observed = claude_usage(Path(path))
    column = header.index("observed_cache_read_tokens")
    ids = header.index("request_id")
    for line in lines[1:]:
        cells = line.split(",")
        assert int(cells[column]) == observed[cells[ids]][1]
    assert report.summary.requests == 20
    # Nothing priced: no table is left behind.
    rollout = codex_rollout(tmp_path / "rollout.jsonl", "gpt-nothing-9")
    with pytest.raises(BadInputError):
        run([rollout], store_url, per_request=tmp_path / "none.csv")
    assert not (tmp_path / "none.csv").exists()


def test_a_session_folder_with_a_file_no_format_reads(store_url: str, tmp_path: Path) -> None:
    # A session folder as users keep it: a rollout beside a manifest that is no log. The
    # rollout is reconciled as a Codex session (the manifest does not hide the client), the
    # manifest is named, and the exit code says a file could not be read (docs/errors.md).
    folder = tmp_path / "sessions"
    folder.mkdir()
    codex_rollout(folder / "rollout.jsonl", "gpt-5.1-codex")
    (folder / "manifest.json").write_text('{"files": 1}\n')
    result = CliRunner().invoke(
        app, ["reconcile", str(folder), "--json", "--database-url", store_url]
    )
    assert result.exit_code == 2, result.output
    report = json.loads(result.stdout)
    assert report["client"]["name"] == "codex"
    # One request of 5,000 prompt tokens, none cached (the helper's usage): one row.
    assert report["summary"]["requests"] == 1
    assert "manifest.json" in result.stderr and "could not be read" in result.stderr


def test_an_indented_manifest_is_named_as_one_json_document(store_url: str, tmp_path: Path) -> None:
    # The same folder with the manifest written over several lines (as the shared Codex
    # captures keep theirs): the reason says it is one JSON document, and the exit code still
    # says a file could not be read.
    folder = tmp_path / "sessions"
    folder.mkdir()
    codex_rollout(folder / "rollout.jsonl", "gpt-5.1-codex")
    (folder / "manifest.json").write_text('{\n  "manifest_version": 1,\n  "files": 1\n}\n')
    result = CliRunner().invoke(
        app, ["reconcile", str(folder), "--json", "--database-url", store_url]
    )
    assert result.exit_code == 2, result.output
    assert json.loads(result.stdout)["summary"]["requests"] == 1
    reason = "one JSON document, not JSON lines (top-level keys: manifest_version, files)"
    assert reason in result.stderr
    assert "neither JSON lines nor one JSON document" not in result.stderr


def test_idle_gap_is_measured_between_sends_not_response_lines(
    store_url: str, tmp_path: Path
) -> None:
    """docs/clients.md, "When a request was sent": request m2 leaves at 10:00:03 (its tool
    results' line) but its first line is written at 10:04:40, after a long block; m3 leaves
    at 10:06:00. Between sends the gap is 5 min 57 s, past the 5-minute TTL the writes
    asked for, so m3 reads nothing; between response lines it would be 1 min 20 s (a hit)."""
    from tests.sessions.test_reading import line, user, write

    def answer(uuid: str, parent: str, when: str, message_id: str, usage: dict[str, Any]) -> Any:
        message = {"id": message_id, "model": "claude-sonnet-4-5", "role": "assistant",
                   "content": [{"type": "text", "text": "ok"}], "usage": usage}  # fmt: skip
        return line("assistant", uuid, parent, when, message=message)

    def counts(read: int, written: int) -> dict[str, Any]:
        split = {"ephemeral_5m_input_tokens": written, "ephemeral_1h_input_tokens": 0}
        return {"input_tokens": 3, "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written, "cache_creation": split,
                "output_tokens": 5}  # fmt: skip

    path = write(
        tmp_path / "s-1.jsonl",
        [
            user("u1", None, "2026-01-10T10:00:00Z", "write the report"),
            answer("a1", "u1", "2026-01-10T10:00:02Z", "m1", counts(0, 5_000)),
            user("u2", "a1", "2026-01-10T10:00:03Z", "tool result"),
            answer("a2", "u2", "2026-01-10T10:04:40Z", "m2", counts(5_000, 200)),
            user("u3", "a2", "2026-01-10T10:06:00Z", "tool result"),
            answer("a3", "u3", "2026-01-10T10:06:02Z", "m3", counts(0, 5_300)),
        ],
    )
    report = run([path], store_url)
    rows = {row.request_id: row for row in report.requests}
    # The times are the sends: 10:00:00, 10:00:03, 10:06:00 (epoch 1768039200 = 10:00:00).
    assert [rows[m].timestamp for m in ("m1", "m2", "m3")] == [1768039200, 1768039203, 1768039560]
    # m2 continues 3 s after m1's send: it reads m1's 5,000 and writes its 200.
    assert (rows["m2"].predicted_cache_read_tokens, rows["m2"].predicted_cache_write_tokens) == (
        5_000,
        200,
    )
    # m3: the 5,200 cached at 10:00:03 expired at 10:05:03; it reads 0 and writes all 5,300.
    assert rows["m3"].predicted_cache_read_tokens == 0
    assert rows["m3"].within_tolerance
    assert rows["m3"].classification is None


def _line_without_provider(model: str, read: int, written: int) -> dict[str, Any]:
    """A canonical session line naming its model and no provider: 12,000 prompt tokens
    (``read`` of them read, ``written`` written for 5 minutes) and 100 output tokens."""
    return {
        "timestamp": "2026-03-01T10:00:00Z",
        "session": "s-1",
        "model": model,
        "request": {"messages": [{"role": "user", "content": "hi"}]},
        "observed": {
            "input_tokens": 12_000,
            "cache_read_tokens": read,
            "cache_write_tokens": written,
            "cache_write_by_ttl": {"5m": written} if written else {},
            "output_tokens": 100,
        },
    }


@pytest.mark.parametrize(
    ("client", "model", "read", "written", "provider", "bill"),
    [
        # anthropic/claude-sonnet-4-5 (`cachecast contracts history`, in force from
        # 2025-09-30): $3 input, 5-minute writes at 1.25x ($3.75), $15 output per million:
        # 2,000 uncached x 3 + 10,000 x 3.75 + 100 x 15 = 6,000 + 37,500 + 1,500 = $0.045.
        ("claude-code", "claude-sonnet-4-5", 0, 10_000, "anthropic", "0.045"),
        # openai/gpt-4o (from 2024-10-01): $2.50 input, reads at 0.5x ($1.25), $10 output:
        # 2,000 x 2.5 + 10,000 x 1.25 + 100 x 10 = 5,000 + 12,500 + 1,000 = $0.0185.
        ("codex", "gpt-4o", 10_000, 0, "openai", "0.0185"),
    ],
)
def test_a_line_naming_only_its_model_is_priced_by_its_family(
    store_url: str,
    tmp_path: Path,
    client: str,
    model: str,
    read: int,
    written: int,
    provider: str,
    bill: str,
) -> None:
    """As ``reconcile`` infers the provider of any other log's line from its model family
    (docs/log-formats.md, "Provider names"), a session read with ``--client`` does."""
    log = tmp_path / "session.jsonl"
    log.write_text(json.dumps(_line_without_provider(model, read, written)) + "\n")
    report = run([log], store_url, client=client)
    assert report.client is not None and report.unpriced == {}
    [target] = report.targets
    assert (target.provider, target.model) == (provider, model)
    assert target.cost == Decimal(bill)
    # A family that names no provider still asks for --provider.
    log.write_text(json.dumps(_line_without_provider("house-model-7", read, written)) + "\n")
    with pytest.raises(BadInputError, match="give --provider"):
        run([log], store_url, client=client)
