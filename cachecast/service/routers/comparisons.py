"""``POST /v1/comparisons``: ``cachecast compare`` over HTTP: the same use case, its report.

The log comes inline (a ``records`` array, or a JSONL upload as ``log``); the model is a
preset name or a Hugging Face ``config.json`` object (the server reads no files). The body
becomes :class:`cachecast.usecases.compare.CompareRequest` with the records rejecting the whole
request when any is bad (a 422 naming each; nothing is priced), and the response is
:func:`cachecast.usecases.compare.compare`'s report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from cachecast.core.dates import IsoDate
from cachecast.economics.geometry import KV_DTYPES
from cachecast.passes.log_input import LogInput
from cachecast.service.estimating import (
    SOURCE_NAME,
    TARGET_PATTERN,
    TargetText,
    records_field,
)
from cachecast.service.isolation import run_isolated
from cachecast.service.routers._body import body_subject, post_reading_body, read_body
from cachecast.service.server_paths import record_models, refuse_server_paths
from cachecast.usecases.capacity import ModelReference
from cachecast.usecases.compare import CompareReport, CompareRequest, compare, parse_price
from cachecast.usecases.requests import request_of

router = APIRouter(prefix="/v1", tags=["comparisons"])

_FORM_FIELDS = (
    "gpu",
    "gpus",
    "gpu_price",
    "targets",
    "tokenizer",
    "kv_dtype",
    "weight_dtype",
    "block_size",
    "params",
)

_RECORD_EXAMPLE = {
    "timestamp": 1762074000,
    "model": "gpt-4o",
    "prompt": "You are a careful assistant. " * 200,
    "output_tokens": 100,
}


class ComparisonBody(BaseModel):
    """The options of ``cachecast compare``, with the log inline."""

    model_config = ConfigDict(extra="forbid")

    records: list[dict[str, Any]] = records_field(_RECORD_EXAMPLE)
    provider: str | None = Field(default=None, description="provider of records naming none")
    model: str | dict[str, Any] = Field(
        description="the self-hosted model: a preset name (llama-3.3-70b, llama-3.1-8b, "
        "qwen2.5-72b, mistral-7b-v0.1, deepseek-v3, jamba-v0.1) or a Hugging Face "
        "config.json object",
        examples=["llama-3.3-70b"],
    )
    params: int | None = Field(
        default=None, gt=0, description="total parameter count, where the config cannot give it"
    )
    gpu: str = Field(
        min_length=1,
        max_length=64,
        description="h100-sxm, h200, b200, a100-80gb, l40s or mi300x",
        examples=["h100-sxm"],
    )
    gpus: int = Field(default=1, ge=1, le=1024, description="GPUs per replica (tensor parallel)")
    gpu_price: str | None = Field(
        default=None,
        description="US$ per GPU-hour as a decimal string; without it only GPU-hours",
        examples=["2.50"],
    )
    targets: list[TargetText] = Field(
        default_factory=list,
        max_length=64,
        description="hosted PROVIDER:MODEL pairs to compare with",
        examples=[["openai:gpt-4o"]],
    )
    at: IsoDate | None = Field(default=None, description="contracts in force on this day")
    tokenizer: str | None = Field(
        default=None, description="model whose tokenizer counts the self-hosted tokens"
    )
    kv_dtype: str = Field(default="bf16", description="bf16, fp8 or int4")
    weight_dtype: str | None = Field(default=None, description="default: the model's own")
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    block_size: int | None = Field(default=None, gt=0, le=1_000_000)
    host_memory_gib: float | None = Field(
        default=None, ge=0, le=1_000_000, description="host DRAM KV tier per replica"
    )
    state_checkpoint: int | None = Field(
        default=None, gt=0, description="hybrid models: recurrent-state checkpoint interval"
    )
    max_utilization: float = Field(default=0.8, gt=0, lt=1)


_EXAMPLE = {
    "records": [_RECORD_EXAMPLE],
    "model": "llama-3.3-70b",
    "gpu": "h100-sxm",
    "gpus": 2,
    "gpu_price": "2.50",
    "targets": ["openai:gpt-4o"],
    "at": "2026-11-01",
}


@post_reading_body(
    router,
    "/comparisons",
    ComparisonBody,
    summary="Hosted caching against self-hosted vLLM for a workload",
    response_model=CompareReport,
    problems=(404, 408, 413, 415, 422),
    examples={"llama on H100 against gpt-4o": _EXAMPLE},
    multipart_required=["log", "model", "gpu"],
    multipart_properties={
        "model": {"type": "string", "description": "a preset name"},
        "gpu": {"type": "string"},
        "gpus": {"type": "integer", "minimum": 1},
        "gpu_price": {"type": "string"},
        "targets": {
            "type": "array",
            "items": {"type": "string", "pattern": TARGET_PATTERN},
            "description": "PROVIDER:MODEL, repeated or comma-separated",
        },
        "at": {"type": "string", "format": "date"},
        "tokenizer": {"type": "string"},
        "kv_dtype": {"type": "string", "enum": list(KV_DTYPES)},
        "weight_dtype": {"type": "string"},
        "block_size": {"type": "integer", "minimum": 1},
        "params": {"type": "integer", "minimum": 1},
    },
)
async def create_comparison(
    request: Request,
) -> CompareReport:
    """Self-hosted sizing, hit rate, GPU-hours and cost for the log, against each hosted
    target's bill. Figures are roofline ceilings (``timing_source`` says so). 422 names the
    wrong field or record; 404 an unknown target or accelerator, with close matches."""
    body, lines = await read_body(request, ComparisonBody, _FORM_FIELDS)
    refuse_server_paths(
        [("body.tokenizer", body.tokenizer), *record_models(body.records, "records")]
    )
    work = compare_request(body, lines)
    return await run_isolated(request, compare, work, subject=body_subject(request))


def compare_request(body: ComparisonBody, lines: Sequence[int] | None) -> CompareRequest:
    """The use case's request for an API body: the records inline, bad ones rejecting the
    whole request; the model a preset name (never a path: the server's files are not the
    client's to read) or a config object."""
    model = (
        ModelReference(preset=body.model)
        if isinstance(body.model, str)
        else ModelReference(config=body.model)
    )
    log = LogInput(
        records=body.records,
        record_lines=list(lines) if lines is not None else None,
        records_name=SOURCE_NAME,
        default_provider=body.provider,
        on_bad_record="reject",
    )
    return request_of(
        CompareRequest, dict(body), log=log, model=model, gpu_price=parse_price(body.gpu_price)
    )
