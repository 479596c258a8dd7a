"""One pipeline: the library, ``cachecast estimate --json`` and ``POST /v1/estimates`` (JSON
body and multipart upload) give the same report for the same log and targets.

The logs mix models and providers (OpenAI Chat bodies, Anthropic Messages bodies with
``cache_control``, records that name no model or provider and take the request's defaults),
so a front end that overrode a record's provider or model with the target's would render or
tokenize some records differently and answer differently (or refuse the log). The only field
allowed to differ is ``sources``: a file is named by its path, inline records by
``request``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.service.app import create_app
from cachecast.tokenizers import read_log
from cachecast.usecases.estimate import EstimateRequest, estimate
from tests.conftest import REPO_ROOT
from tests.service.conftest import make_settings

AT = "2026-11-01"
EXAMPLE = REPO_ROOT / "examples" / "agent-log.jsonl"
SYSTEM = (
    "You are the billing assistant of Northwind. Quote invoice numbers exactly. "
    "Rechnungen prüfen: Fälligkeit und Beträge bitte genau angeben. 請準確引用發票號碼。"
) * 30


def mixed_records() -> list[dict[str, Any]]:
    """Six sessions alternating OpenAI and Anthropic bodies; some records name neither model
    nor provider (the defaults fill them in), some name a model of another tokenizer."""
    records: list[dict[str, Any]] = []
    clock = 1_762_074_000
    for session in range(6):
        history: list[dict[str, Any]] = []
        for turn in range(3):
            clock += 7
            question = f"Session {session}, question {turn}: what is due on invoice {turn}?"
            history = [*history, {"role": "user", "content": question}]
            if session % 3 == 0:
                record: dict[str, Any] = {
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "request": {
                        "model": "claude-sonnet-4-5",
                        "system": [
                            {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}
                        ],
                        "messages": history,
                        "max_tokens": 200,
                    },
                }
            elif session % 3 == 1:
                record = {
                    "provider": "openai",
                    "model": "gpt-4o",
                    "request": {"messages": [{"role": "system", "content": SYSTEM}, *history]},
                }
            else:  # no model, no provider: the request's defaults apply
                record = {"messages": [{"role": "system", "content": SYSTEM}, *history]}
            record.update(
                {"timestamp": clock, "scope": f"org-{session % 2}", "output_tokens": 40 + turn}
            )
            records.append(record)
            history = [*history, {"role": "assistant", "content": f"Invoice {turn}: 12 EUR."}]
    return records


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def library(path: Path, targets: list[str], url: str, **defaults: str | None) -> dict[str, Any]:
    request = EstimateRequest(
        log=LogInput.of_paths(
            [path],
            default_model=defaults.get("model"),
            default_provider=defaults.get("provider"),
        ),
        targets=targets,
        at=AT,  # type: ignore[arg-type]
    )
    return estimate(request, ContractStore(url)).model_dump(mode="json")


def cli(path: Path, targets: list[str], url: str, **defaults: str | None) -> dict[str, Any]:
    args = ["estimate", str(path), "--at", AT, "--json", "--database-url", url]
    for target in targets:
        args += ["--target", target]
    for name, value in defaults.items():
        if value is not None:
            args += [f"--{name}", value]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


async def api(
    path: Path, targets: list[str], url: str, *, upload: bool, **defaults: str | None
) -> dict[str, Any]:
    service = create_app(make_settings(url, job_threshold_records=10_000))
    transport = httpx.ASGITransport(app=service)
    async with httpx.AsyncClient(transport=transport, base_url="http://cachecast") as client:
        given = {name: value for name, value in defaults.items() if value is not None}
        if upload:
            form = {"targets": ",".join(targets), "at": AT, **given}
            files = {"log": (path.name, path.read_bytes(), "application/x-ndjson")}
            response = await client.post("/v1/estimates", data=form, files=files)
        else:
            records = [json.loads(line) for line in path.read_text().splitlines() if line]
            body = {"records": records, "targets": targets, "at": AT, **given}
            response = await client.post("/v1/estimates", json=body)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def without_sources(report: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in report.items() if key != "sources"}


CASES = [
    pytest.param(
        "example",
        ["anthropic:claude-sonnet-4-5", "openai:gpt-4o", "openai:gpt-5.6"],
        {},
        id="example-log-anthropic-and-openai",
    ),
    pytest.param(
        "mixed",
        ["openai:gpt-4o", "anthropic:claude-sonnet-4-5", "deepseek:deepseek-chat"],
        {"model": "gpt-4", "provider": "openai"},
        id="mixed-providers-with-defaults",
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("log", "targets", "defaults"), CASES)
async def test_every_front_end_gives_the_same_report(
    log: str,
    targets: list[str],
    defaults: dict[str, str],
    migrated_db_url: str,
    tmp_path: Path,
) -> None:
    path = EXAMPLE if log == "example" else write_jsonl(tmp_path / "mixed.jsonl", mixed_records())
    expected = library(path, targets, migrated_db_url, **defaults)
    assert expected["skipped_lines"] == 0 and expected["errors"] == []
    assert [f"{t['provider']}:{t['model']}" for t in expected["targets"]] == targets
    assert all(target["requests"] > 0 for target in expected["targets"])
    assert cli(path, targets, migrated_db_url, **defaults) == expected
    for upload in (False, True):
        answered = await api(path, targets, migrated_db_url, upload=upload, **defaults)
        assert without_sources(answered) == without_sources(expected)
        assert answered["sources"] == ["request"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_default_model_does_not_change_the_targets_tokenization(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # Records naming no model, the request's default model gpt-4 (cl100k_base), priced as
    # gpt-4o: every front end tokenizes them with gpt-4o's o200k_base, as the target is the
    # model the traffic would be sent to.
    records = [r for r in mixed_records() if "provider" not in r]
    path = write_jsonl(tmp_path / "defaults.jsonl", records)
    targets = ["openai:gpt-4o"]
    report = library(path, targets, migrated_db_url, model="gpt-4")
    (gpt4o,) = report["targets"]
    assert gpt4o["tokenizer"] == "o200k_base"
    # The default model changes nothing for the target: as if they had named gpt-4o.
    named = library(path, targets, migrated_db_url, model="gpt-4o")
    assert named["targets"][0]["input_tokens"] == gpt4o["input_tokens"]
    # ... while gpt-4's own tokenization (cl100k_base) counts them differently.
    cl100k = sum(request.input_tokens for request in read_log(path, model="gpt-4"))
    assert cl100k != gpt4o["input_tokens"]
    answered = await api(path, targets, migrated_db_url, upload=False, model="gpt-4")
    assert answered["targets"][0]["input_tokens"] == gpt4o["input_tokens"]
    assert answered["targets"][0]["tokenizer"] == "o200k_base"
