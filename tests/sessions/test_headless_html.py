"""``usage --html`` and ``inspect`` on agents' headless output: the usage stated per turn
(``codex exec --json``) or per run (``claude -p --output-format json``) is shown as turns
and runs, never as a request count, and a run's own ``total_cost_usd`` stands beside our
bill (docs/usage-report.md). Files hand-built with the builders of ``test_headless``;
bills worked by hand there (list prices in force today: the output has no time).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from html import unescape
from pathlib import Path

from typer.testing import CliRunner

from cachecast.cli import app
from tests.sessions.test_headless import EXEC, MILLION, SESSION, result, stream, usage, write

# One codex exec turn as gpt-5: 315 uncached x 1.25 + 24,448 cached x 0.125 + 122 x 10
# = 4,669.75 micro-dollars (test_headless). A claude stream of 2 responses and a claude json
# result of the same tokens: 48,774 micro-dollars each.
TURN_BILL = Decimal("4669.75") / MILLION
RUN_BILL = Decimal(48_774) / MILLION


def _tables(page: str) -> list[list[list[str]]]:
    """Each table of the page as rows of cell texts (header row first)."""
    return [
        [
            [unescape(cell) for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", table)
        ]
        for table in re.findall(r"<table>(.*?)</table>", page)
    ]


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    return (
        write(tmp_path / "exec.jsonl", EXEC),
        stream(tmp_path / "run.jsonl"),
        write(tmp_path / "out.json", [result(usage(8, 11_000, 10_000, 300))]),
    )


def test_usage_html_shows_turns_runs_and_the_clients_own_cost(
    migrated_db_url: str, tmp_path: Path
) -> None:
    page_path = tmp_path / "usage.html"
    result_ = CliRunner().invoke(
        app,
        [
            "usage",
            *map(str, _files(tmp_path)),
            "--model",
            "gpt-5",
            "--html",
            str(page_path),
            "--database-url",
            migrated_db_url,
        ],
    )
    assert result_.exit_code == 0, result_.output
    page = page_path.read_text("utf-8")
    usage_table, statements = _tables(page)[:2]
    header, *_, total = usage_table
    cells = dict(zip(header, total, strict=True))
    # 2 requests (the stream's responses), 1 turn, 1 run: the requests in the turn and the
    # run are not known, so the request count is "2 + ?".
    assert (cells["day"], cells["requests"], cells["turns"], cells["runs"]) == (
        "total",
        "2 + ?",
        "1",
        "1",
    )
    assert cells["cost"] == f"${2 * RUN_BILL + TURN_BILL}"
    assert "2 + ? requests, 1 turn(s), 1 run total(s)" in page
    assert "1 turn(s) of codex exec --json" in unescape(page)
    assert "1 model total(s) of claude -p --output-format json" in unescape(page)
    # The client's own estimate beside our bill, one row per result message: the stream's
    # result is its 6th line, the json output's its 1st.
    assert statements[0][:4] == ["run", "session", "total_cost_usd (client's estimate)", "our bill"]
    rows = {row[0]: row for row in statements[1:]}
    assert set(rows) == {f"{tmp_path / 'run.jsonl'}:6", f"{tmp_path / 'out.json'}:1"}
    for row in rows.values():
        assert row[1] == SESSION and row[2] == "$0.0488"  # total_cost_usd as the result states
        assert Decimal(row[3].removeprefix("$")) == RUN_BILL and row[4] == "3"


def test_usage_html_of_requests_only_has_no_turn_columns(
    migrated_db_url: str, tmp_path: Path
) -> None:
    page_path = tmp_path / "usage.html"
    run = stream(tmp_path / "run.jsonl")
    args = ["usage", str(run), "--html", str(page_path), "--database-url", migrated_db_url]
    assert CliRunner().invoke(app, args).exit_code == 0
    header, *_, total = _tables(page_path.read_text("utf-8"))[0]
    assert "turns" not in header and "runs" not in header
    assert dict(zip(header, total, strict=True))["requests"] == "2"


def test_inspect_counts_turns_and_runs_apart_from_requests(tmp_path: Path) -> None:
    execs, run, whole = _files(tmp_path)
    got = CliRunner().invoke(app, ["inspect", str(execs), str(run), str(whole), "--json"])
    assert got.exit_code == 0, got.output
    files = json.loads(got.stdout)["files"]
    assert [(f["requests"], f["turns"], f["runs"]) for f in files] == [
        (0, 1, 0),
        (2, 0, 0),
        (0, 0, 1),
    ]
    text = CliRunner().invoke(app, ["inspect", str(execs), str(whole)]).stdout
    assert "requests      1" not in text
    assert "usage units   requests 0, turns 1" in text
    assert "usage units   requests 0, runs 1" in text
