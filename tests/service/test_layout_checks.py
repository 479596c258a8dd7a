"""``POST /v1/layout-checks``: ``cachecast check`` over HTTP on a migrated database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from cachecast.cli import app as cli_app
from tests.service.test_api import assert_problem

pytestmark = pytest.mark.anyio

DAY = "2026-11-01"  # openai:gpt-4o's contract is in force then
TIMESTAMP = "Current time: {{ now }}\n"
RULES = "".join(
    f"{number}. Follow policy section {number} to the letter and confirm the customer's"
    f" identity before sharing any order detail.\n"
    for number in range(1, 90)
)  # about 2,000 tokens: well over gpt-4o's 1,024-token minimum cacheable prefix


def layout(*, system_top: str = "", user_suffix: str = "") -> dict[str, Any]:
    """Three sessions of three turns sharing a long system prompt."""
    return {
        "cachecast_layout": 1,
        "provider": "openai",
        "model": "gpt-4o",
        "system": system_top + "You are the support agent of Northwind.\n" + RULES,
        "turn": [
            {"role": "user", "content": "{{ question }}" + user_suffix},
            {"role": "assistant", "content": "{{ answer }}"},
        ],
        "arrival": {
            "sessions": 3,
            "turns_per_session": 3,
            "turn_interval_seconds": 40,
            "session_interval_seconds": 90,
            "start": "2026-03-02T09:00:00Z",
            "output_tokens": 50,
        },
    }


VALUES = {
    "turns": [
        {"question": f"Question {n} about order NW-{4500 + n}?", "answer": f"Answer {n}."}
        for n in range(4)
    ]
}


def check_body(baseline: dict[str, Any], candidate: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "baseline": {"layout": baseline, "values": VALUES},
        "candidate": {"layout": candidate, "values": VALUES},
        "targets": ["openai:gpt-4o"],
        "thresholds": {"max_hit_rate_drop": "2pp"},
        "at": DAY,
        **extra,
    }


async def test_timestamp_at_the_top_of_the_system_prompt_fails(
    client: httpx.AsyncClient,
) -> None:
    body = check_body(layout(), layout(system_top=TIMESTAMP))
    response = await client.post("/v1/layout-checks", json=body)
    # A regression is a verdict, not an HTTP error.
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["passed"] is False
    (target,) = report["targets"]
    assert target["target"] == "openai:gpt-4o" and target["passed"] is False
    # The timestamp changes every request's first system tokens: the candidate shares no
    # prefix of 1,024 tokens with any earlier request, so it reads nothing from the cache,
    # while the baseline's later turns reuse the ~2,000-token system prompt.
    assert target["candidate"]["cache_read_tokens"] == 0
    assert target["baseline"]["cache_read_tokens"] > 0
    assert target["violations"], target
    divergence = report["divergence"]
    assert divergence is not None
    assert divergence["segment"]["kind"] == "system"
    assert "Current time" in divergence["candidate_text"]
    # Only the chat header ("<|im_start|>system<|im_sep|>" style) precedes the system text.
    assert divergence["token_position"] < 10
    assert report["thresholds"]["max_hit_rate_drop"] == "0.02"  # 2pp as a fraction
    assert report["at"] == DAY


async def test_timestamp_at_the_end_of_the_user_message_passes(
    client: httpx.AsyncClient,
) -> None:
    body = check_body(layout(), layout(user_suffix=" (sent " + "{{ now }})"))
    response = await client.post("/v1/layout-checks", json=body)
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["passed"] is True, report
    (target,) = report["targets"]
    assert target["violations"] == []
    # Everything before the last user message is unchanged: hits stay within 2pp.
    assert target["candidate"]["cache_read_tokens"] > 0


async def test_yaml_text_and_records_sides_equal_the_cli_json(
    client: httpx.AsyncClient, service_db_url: str, tmp_path: Path
) -> None:
    # The service promises the object `cachecast check --json` writes for the same inputs;
    # here the baseline is YAML text and the candidate the same layout as a JSON object.
    base, cand = layout(), layout(system_top=TIMESTAMP)
    for name, document in (("base", base), ("cand", cand)):
        (tmp_path / f"{name}.yaml").write_text(
            yaml.safe_dump(document | {"values": VALUES}, sort_keys=False), encoding="utf-8"
        )
    out = tmp_path / "check.json"
    result = CliRunner().invoke(
        cli_app,
        [
            "check",
            str(tmp_path / "base.yaml"),
            str(tmp_path / "cand.yaml"),
            "--target",
            "openai:gpt-4o",
            "--max-hit-rate-drop",
            "2pp",
            "--at",
            DAY,
            "--json-file",
            str(out),
            "--database-url",
            service_db_url,
        ],
    )
    assert result.exit_code == 1, result.output  # 1: a regression
    from_cli = json.loads(out.read_text())
    body = check_body(base, cand)
    body["baseline"] = {"layout": yaml.safe_dump(base | {"values": VALUES}, sort_keys=False)}
    body["candidate"] = {"layout": cand | {"values": VALUES}}
    response = await client.post("/v1/layout-checks", json=body)
    assert response.status_code == 200, response.text
    from_service = response.json()
    # Only the side labels differ: file paths for the CLI, the side names for the service.
    labels = {"baseline": str(tmp_path / "base.yaml"), "candidate": str(tmp_path / "cand.yaml")}
    for side, path in labels.items():
        assert from_cli.pop(side) == path
        assert from_service.pop(side) == side
        from_cli["notes"] = [note.replace(path, side) for note in from_cli["notes"]]
    assert from_service == from_cli


async def test_records_side(client: httpx.AsyncClient) -> None:
    # Pre-tokenized records: 2,048 shared tokens, then the same plus 100 more. Baseline and
    # candidate are equal, so nothing diverges and the check passes.
    prefix = list(range(1000, 3048))
    records = [
        {"timestamp": 0.0, "model": "gpt-4o", "tokens": prefix, "output_tokens": 5},
        {
            "timestamp": 1.0,
            "model": "gpt-4o",
            "tokens": prefix + list(range(100)),
            "output_tokens": 5,
        },
    ]
    body = {
        "baseline": {"records": records},
        "candidate": {"records": records},
        "targets": ["openai:gpt-4o", "vllm"],
        "at": DAY,
    }
    response = await client.post("/v1/layout-checks", json=body)
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["passed"] is True and report["divergence"] is None
    by_kind = {target["kind"]: target for target in report["targets"]}
    # gpt-4o: 2,048 input tokens of the second request are cached (a multiple of 128 at or
    # above 1,024); vLLM (16-token blocks): the 2,048 = 128 x 16 full blocks.
    assert by_kind["contract"]["candidate"]["cache_read_tokens"] == 2048
    assert by_kind["vllm"]["candidate"]["cache_read_tokens"] == 2048


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"targets": ["not a target"]}, "body.targets[0]"),
        # The service never calls a URL a client names (an engine target is CLI-only).
        ({"targets": ["vllm", "vllm-engine:http://127.0.0.1:9"]}, "body.targets[1]"),
        ({"targets": []}, "body.targets"),
        ({"thresholds": {"max_hit_rate_drop": "5%"}}, "body.thresholds.max_hit_rate_drop"),
        ({"thresholds": {"min_hit_rate": "2"}}, "body.thresholds.min_hit_rate"),
        ({"candidate": {}}, "body.candidate"),
        ({"candidate": {"layout": "x: 1", "records": [{}]}}, "body.candidate"),
        ({"baseline": {"layout": {**layout(), "turn": []}}}, "body.baseline.layout.turn"),
        (
            {"baseline": {"layout": {**layout(), "values_file": "/etc/passwd"}}},
            "body.baseline.layout.values_file",
        ),
        (
            {"candidate": {"layout": {**layout(), "arrival": {"sessions": 10**6}}}},
            "body.candidate.layout.arrival",
        ),
        ({"candidate": {"records": [{"timestamp": 1}]}}, "body.candidate.records[0]"),
        ({"at": "yesterday"}, "body.at"),
        # Model names the tokenizer registry would load from the server's disk.
        ({"model": "/"}, "body.model"),
        (
            {"candidate": {"layout": {**layout(), "model": "hf:/tmp"}}},
            "body.candidate.layout.model",
        ),
        (
            {"candidate": {"records": [{"model": "hf:/tmp", "prompt": "hi", "timestamp": 1}]}},
            "body.candidate.records[0].model",
        ),
    ],
)
async def test_bad_input_is_422_naming_the_field(
    client: httpx.AsyncClient, change: dict[str, Any], field: str
) -> None:
    body = check_body(layout(), layout()) | change
    response = await client.post("/v1/layout-checks", json=body)
    problem = assert_problem(response, 422)
    fields = [error["field"] for error in problem["errors"]]
    assert any(name.startswith(field) for name in fields), fields


async def test_unknown_target_is_404_with_close_matches(client: httpx.AsyncClient) -> None:
    body = check_body(layout(), layout(), targets=["openai:gpt-4oo"])
    problem = assert_problem(await client.post("/v1/layout-checks", json=body), 404)
    assert "gpt-4o" in " ".join(problem["close_matches"])


async def test_the_api_answers_the_library_report(
    client: httpx.AsyncClient, service_db_url: str
) -> None:
    # The route calls usecases.check.check: the same request built by hand (sides inline, named
    # as the API names them) gives the very JSON the API answers.
    import datetime as dt

    from cachecast.contracts import ContractStore
    from cachecast.passes.prompt_sets import PromptSource
    from cachecast.usecases.check import CheckRequest, check
    from cachecast.usecases.thresholds import Thresholds

    base, cand = layout(), layout(system_top=TIMESTAMP)
    body = check_body(base, cand, targets=["openai:gpt-4o", "vllm:32"])
    response = await client.post("/v1/layout-checks", json=body)
    assert response.status_code == 200, response.text
    request = CheckRequest(
        baseline=PromptSource(
            layout=json.dumps(base), values=json.dumps(VALUES), name="baseline",
            inline_name="body.baseline",
        ),
        candidate=PromptSource(
            layout=json.dumps(cand), values=json.dumps(VALUES), name="candidate",
            inline_name="body.candidate",
        ),
        targets=["openai:gpt-4o", "vllm:32"],
        thresholds=Thresholds(max_hit_rate_drop="0.02"),
        at=dt.date.fromisoformat(DAY),
    )  # fmt: skip
    assert response.json() == check(request, ContractStore(service_db_url)).model_dump(mode="json")


async def test_every_bad_record_of_a_side_is_named(client: httpx.AsyncClient) -> None:
    # A side's records are read whole before anything is judged: each bad one is listed with
    # its side, index and field (records 0 and 2 name no model, and nothing gives one).
    records = [
        {"timestamp": 1, "prompt": "hello"},
        {"timestamp": 2, "model": "gpt-4o", "prompt": "hello there"},
        {"timestamp": 3, "prompt": "bye"},
    ]
    body = check_body(layout(), layout()) | {
        "candidate": {"records": records},
        "targets": ["vllm"],
    }
    problem = assert_problem(await client.post("/v1/layout-checks", json=body), 422)
    assert [(e["field"], e["record"]) for e in problem["errors"]] == [
        ("body.candidate.records[0].model", 0),
        ("body.candidate.records[2].model", 2),
    ]
    assert problem["total_errors"] == 2
