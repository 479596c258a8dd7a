"""Batch files of Amazon Bedrock and Azure OpenAI, hand-built from the documented shapes
(docs/log-formats.md, "Batches": AWS's "View the results of a batch inference job" and the
InvokeModel / Converse response bodies; Azure's global batch guide). Usage totals are the
fields written here added by hand; bills are worked by hand from the catalog's prices:
``bedrock:anthropic.claude-3-5-haiku-20241022-v1:0`` $0.80 / $4 per million input / output
tokens (from 2024-12-04), ``azure:gpt-4o-2024-08-06`` $2.50 / $10, cached input 0.5x.
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
from cachecast.logs import LogFileError, open_log, pair_batch_files
from cachecast.passes.log_input import LogFile, LogInput
from cachecast.usecases.inspect import InspectRequest, inspect
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.logs.helpers import read, totals, write_jsonl

HAIKU = "anthropic.claude-3-5-haiku-20241022-v1:0"
AT = "2025-06-02"


def claude_input(question: str) -> dict[str, Any]:
    """An InvokeModel body for Claude on Bedrock (Anthropic's Messages shape)."""
    return {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": question}],
    }


def claude_output(prompt: int, output: int) -> dict[str, Any]:
    """The InvokeModel response body Claude answers with; ``model`` is Anthropic's name."""
    return {
        "id": "msg_bdrk_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-3-5-haiku-20241022",
        "content": [{"type": "text", "text": "An answer."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": prompt, "output_tokens": output},
    }


INPUTS = [
    {"recordId": "CALL0000001", "modelInput": claude_input("What is a prompt cache?")},
    {"recordId": "CALL0000002", "modelInput": claude_input("And a batch?")},
    {"recordId": "CALL0000003", "modelInput": claude_input("Too long a question")},
    {"recordId": "CALL0000004", "modelInput": claude_input("Never run")},
]
OUTPUTS = [
    {**INPUTS[0], "modelOutput": claude_output(1_200, 300)},
    {**INPUTS[1], "modelOutput": claude_output(800, 100)},
    {**INPUTS[2], "error": {"errorCode": 400, "errorMessage": "Input is too long"}},
]
# Written by hand from OUTPUTS: 2 succeeded, 1 failed; 1,200 + 800 in, 300 + 100 out.
MANIFEST = {
    "totalRecordCount": 3,
    "processedRecordCount": 3,
    "successRecordCount": 2,
    "errorRecordCount": 1,
    "inputTokenCount": 2_000,
    "outputTokenCount": 400,
}
# (1,200 + 800) x $0.80 / M + (300 + 100) x $4 / M = $0.0016 + $0.0016
HAIKU_BILL = Decimal("0.0032")


def bedrock_job(folder: Path, manifest: dict[str, Any] | None = MANIFEST) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    requests = write_jsonl(folder / "questions.jsonl", INPUTS)
    results = write_jsonl(folder / "questions.jsonl.out", OUTPUTS)
    if manifest is not None:
        (folder / "manifest.json.out").write_text(json.dumps(manifest), encoding="utf-8")
    return requests, results


def test_bedrock_output_alone_is_its_prompts_and_usage(tmp_path: Path) -> None:
    _, results = bedrock_job(tmp_path / "job")
    result = read(results, default_model=HAIKU)
    assert result.format == "bedrock-batch-output"
    assert result.errors == []  # the manifest agrees with the records
    assert [r.request_id for r in result.requests] == ["CALL0000001", "CALL0000002"]
    assert all(r.prompt_complete and r.logged_model == HAIKU for r in result.requests)
    assert totals(result.requests) == {"input": 2_000, "read": 0, "write": 0, "output": 400}
    assert result.skipped == {
        "request failed in the batch (400: Input is too long) (not billed)": 1
    }


def test_bedrock_records_name_no_model_without_the_option(tmp_path: Path) -> None:
    # The job's modelId is in no record; Anthropic's "claude-3-5-haiku-20241022" in the
    # body is not a Bedrock model id, so it is not taken for one.
    _, results = bedrock_job(tmp_path / "job")
    result = read(results)
    assert result.requests == []
    assert [(e.line, e.field) for e in result.errors] == [(1, "model"), (2, "model")]
    assert all("--model" in e.reason for e in result.errors)


def test_reconcile_without_the_model_exits_2(tmp_path: Path, migrated_db_url: str) -> None:
    _, results = bedrock_job(tmp_path / "job")
    env = {"CACHECAST_DATABASE_URL": migrated_db_url}
    refused = CliRunner().invoke(app, ["reconcile", str(results)], env=env)
    assert refused.exit_code == 2
    assert "model: no model in the record and none given (--model)" in refused.stderr
    given = CliRunner().invoke(app, ["reconcile", str(results), "--model", HAIKU], env=env)
    assert given.exit_code == 0, given.stderr


def test_bedrock_batch_priced_as_bedrock(tmp_path: Path, migrated_db_url: str) -> None:
    _, results = bedrock_job(tmp_path / "job")
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([results], default_model=HAIKU), at=AT),
        ContractStore(migrated_db_url),
    )
    assert [(t.provider, t.model) for t in report.targets] == [("bedrock", HAIKU)]
    assert sum(row.observed_cost for row in report.requests) == HAIKU_BILL
    assert report.unpriced == {}


def test_bedrock_manifest_difference_is_reported(tmp_path: Path) -> None:
    _, results = bedrock_job(
        tmp_path / "job", {**MANIFEST, "inputTokenCount": 2_050, "successRecordCount": 3}
    )
    result = read(results, default_model=HAIKU)
    assert len(result.requests) == 2
    manifest = str(tmp_path / "job" / "manifest.json.out")
    assert [(e.file, e.line, e.field) for e in result.errors] == [
        (manifest, 1, "successRecordCount"),
        (manifest, 1, "inputTokenCount"),
    ]
    assert "states 2050" in result.errors[1].reason and "to 2000" in result.errors[1].reason


def test_bedrock_manifest_of_several_outputs_is_not_compared(tmp_path: Path) -> None:
    _, results = bedrock_job(tmp_path / "job", {**MANIFEST, "inputTokenCount": 1})
    write_jsonl(tmp_path / "job" / "more.jsonl.out", OUTPUTS[:1])
    assert read(results, default_model=HAIKU).errors == []


def test_bedrock_input_joined_with_its_output(tmp_path: Path) -> None:
    requests, results = bedrock_job(tmp_path / "job")
    for first, second in ((requests, results), (results, requests)):  # either order
        result = read(first, results=second, default_model=HAIKU)
        assert result.format == "bedrock-batch"
        assert result.errors == []
        assert [r.request_id for r in result.requests] == ["CALL0000001", "CALL0000002"]
        assert result.skipped == {
            "request failed in the batch (400: Input is too long) (not billed)": 1,
            "request without a result in the results file (not billed)": 1,  # CALL0000004
        }
    alone = read(requests, default_model=HAIKU)
    assert alone.format == "bedrock-batch"
    assert len(alone.requests) == 4 and all(r.observed is None for r in alone.requests)


def test_bedrock_output_of_another_job_is_refused(tmp_path: Path) -> None:
    requests, _ = bedrock_job(tmp_path / "job")
    other = write_jsonl(
        tmp_path / "other.jsonl.out",
        [{"recordId": "ELSE0000001", **{k: v for k, v in OUTPUTS[0].items() if k != "recordId"}}],
    )
    with pytest.raises(LogFileError, match="shares no recordId"):
        list(open_log(requests, results=other))


def test_bedrock_bodies_of_other_models(tmp_path: Path) -> None:
    lines = [
        # AWS's own example output line (Titan Text): 8 in, 3 out.
        {
            "recordId": "3223593EFGH",
            "modelInput": {"inputText": "Roses are red, violets are"},
            "modelOutput": {
                "inputTextTokenCount": 8,
                "results": [
                    {"tokenCount": 3, "outputText": "blue\n", "completionReason": "FINISH"}
                ],
            },
        },
        {
            "recordId": "1223213ABCD",
            "modelInput": {"inputText": "Hello world"},
            "error": {"errorCode": 400, "errorMessage": "bad request"},
        },
        # Meta Llama: prompt_token_count / generation_token_count.
        {
            "recordId": "LLAMA000001",
            "modelInput": {"prompt": "Name a colour.", "max_gen_len": 16},
            "modelOutput": {
                "generation": "Blue.",
                "prompt_token_count": 9,
                "generation_token_count": 2,
                "stop_reason": "stop",
            },
        },
        # Amazon Nova (InvokeModel): usage.inputTokens / outputTokens.
        {
            "recordId": "NOVA0000001",
            "modelInput": {
                "schemaVersion": "messages-v1",
                "messages": [{"role": "user", "content": [{"text": "Name a colour."}]}],
                "inferenceConfig": {"maxTokens": 16},
            },
            "modelOutput": {
                "output": {"message": {"role": "assistant", "content": [{"text": "Red."}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 7, "outputTokens": 3, "totalTokens": 10},
            },
        },
        # A Converse job: the Converse request and response (usage, metrics).
        {
            "recordId": "CONV0000001",
            "modelInput": {
                "messages": [{"role": "user", "content": [{"text": "Name a colour."}]}],
                "inferenceConfig": {"maxTokens": 16},
            },
            "modelOutput": {
                "output": {"message": {"role": "assistant", "content": [{"text": "Green."}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 6, "outputTokens": 2, "totalTokens": 8},
                "metrics": {"latencyMs": 210},
            },
        },
    ]
    path = write_jsonl(tmp_path / "mixed.jsonl.out", lines)
    result = read(path, default_model="amazon.nova-lite-v1:0")
    assert result.errors == []
    assert [r.request_id for r in result.requests] == [
        "3223593EFGH",
        "LLAMA000001",
        "NOVA0000001",
        "CONV0000001",
    ]
    assert [
        (r.observed.input_tokens, r.observed.output_tokens) for r in result.requests if r.observed
    ] == [
        (8, 3),
        (9, 2),
        (7, 3),
        (6, 2),
    ]
    assert result.skipped == {"request failed in the batch (400: bad request) (not billed)": 1}


def test_bedrock_folder_pairs_input_and_output(tmp_path: Path) -> None:
    requests, results = bedrock_job(tmp_path / "job")
    assert pair_batch_files([results, requests]) == [(requests, results)]
    # A folder holds the input, its .jsonl.out and the manifest: the two are paired.
    log = LogInput.of_paths([tmp_path / "job"])
    assert [(f.path, f.results) for f in log.files] == [(requests, results)]
    report = inspect(InspectRequest(files=[LogFile(path=results)], default_model=HAIKU))
    (file,) = report.files
    assert (file.format, file.requests, file.requests_with_usage) == ("bedrock-batch-output", 2, 2)
    assert file.models == {HAIKU: 2}
    assert (file.observed.input_tokens, file.observed.output_tokens) == (2_000, 400)


# --- Azure OpenAI -----------------------------------------------------------------------------

FILTERS = {
    "hate": {"filtered": False, "severity": "safe"},
    "self_harm": {"filtered": False, "severity": "safe"},
    "sexual": {"filtered": False, "severity": "safe"},
    "violence": {"filtered": False, "severity": "safe"},
}


def azure_input(custom_id: str, question: str) -> dict[str, Any]:
    # Azure's guide: the url without /v1, the model the global batch deployment's name.
    return {
        "custom_id": custom_id,
        "method": "POST",
        "url": "/chat/completions",
        "body": {
            "model": "gpt-4o-batch",
            "messages": [{"role": "user", "content": question}],
        },
    }


def azure_output(custom_id: str, prompt: int, cached: int, completion: int) -> dict[str, Any]:
    return {
        "custom_id": custom_id,
        "response": {
            "status_code": 200,
            "request_id": f"req-{custom_id}",
            "body": {
                "id": "chatcmpl-9",
                "object": "chat.completion",
                "created": 1_748_822_400,  # 2025-06-02
                "model": "gpt-4o-2024-08-06",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "An answer."},
                        "content_filter_results": FILTERS,
                    }
                ],
                "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": FILTERS}],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                    "prompt_tokens_details": {"cached_tokens": cached},
                },
            },
        },
        "error": None,
    }


def test_azure_output_alone_is_azure(tmp_path: Path, migrated_db_url: str) -> None:
    path = write_jsonl(
        tmp_path / "batch_output.jsonl",
        [azure_output("task-0", 1_500, 1_024, 100), azure_output("task-1", 30, 0, 20)],
    )
    result = read(path)
    assert result.format == "openai-batch-output"
    assert [(r.provider, r.logged_model) for r in result.requests] == [
        ("azure", "gpt-4o-2024-08-06")
    ] * 2
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    assert [(t.provider, t.model) for t in report.targets] == [("azure", "gpt-4o-2024-08-06")]
    # At Azure's Global Batch term (batch-terms-v2, from 2024-10-24: "50% less cost than
    # global standard" on input and output; cached input keeps its on-demand price [U]),
    # per million tokens: task-0 476 uncached x $2.50 x 0.5 = $595 + 1,024 cached x $1.25
    # = $1,280 + 100 out x $10 x 0.5 = $500, i.e. $2,375; task-1 30 x $2.50 x 0.5 = $37.50
    # + 20 x $10 x 0.5 = $100, i.e. $137.50. Sum $2,512.50 per million requests' worth.
    assert sum(row.observed_cost for row in report.requests) == Decimal("0.0025125")


def test_azure_input_joined_with_output(tmp_path: Path) -> None:
    requests = write_jsonl(
        tmp_path / "test.jsonl",
        [azure_input("task-0", "When was Microsoft founded?"), azure_input("task-1", "XBOX?")],
    )
    results = write_jsonl(tmp_path / "test_output.jsonl", [azure_output("task-1", 30, 0, 20)])
    alone = read(requests)
    assert alone.format == "openai-batch"
    assert [r.provider for r in alone.requests] == ["azure", "azure"]
    joined = read(requests, results=results)
    assert joined.errors == []
    # The response names the model served; the body only the deployment.
    assert [(r.request_id, r.provider, r.logged_model) for r in joined.requests] == [
        ("task-1", "azure", "gpt-4o-2024-08-06")
    ]
    assert joined.skipped == {"request without a result in the results file (not billed)": 1}
