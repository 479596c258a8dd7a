"""``POST /v1/comparisons``: ``cachecast compare`` over HTTP, the same JSON object.

The log comes inline (a ``records`` array, or a JSONL upload as ``log``); the model is a
preset name or a Hugging Face ``config.json`` object (the server reads no files). Records
are checked first, all or nothing: a bad record is a 422 naming it, and nothing is priced.
"""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from cachecast.app.targets import parse_targets, resolve_targets
from cachecast.contracts import ContractStore
from cachecast.economics.capacity import Deployment
from cachecast.economics.compare import ComparisonError, compare
from cachecast.economics.geometry import (
    KV_DTYPES,
    GeometryError,
    ModelGeometry,
    from_hf_config,
    load_model,
    preset_names,
)
from cachecast.economics.hardware import (
    Accelerator,
    UnknownAcceleratorError,
    get_accelerator,
)
from cachecast.service.estimating import (
    SOURCE_NAME,
    TARGET_PATTERN,
    log_problem,
    records_field,
    validate_payload,
)
from cachecast.service.problems import (
    FieldError,
    ProblemError,
    problem_responses,
    validation_problem,
)
from cachecast.service.routers._body import read_log_body, request_body_docs
from cachecast.service.server_paths import record_models, refuse_server_paths
from cachecast.service.state import ServiceState, service_state
from cachecast.simulator.pricing import Target
from cachecast.tokenizers import LogError, UnknownModelError, read_records
from cachecast.tokenizers.types import TokenizedRequest

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


class ComparisonRequest(BaseModel):
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
        description="h100-sxm, h200, b200, a100-80gb, l40s or mi300x", examples=["h100-sxm"]
    )
    gpus: int = Field(default=1, ge=1, le=1024, description="GPUs per replica (tensor parallel)")
    gpu_price: str | None = Field(
        default=None,
        description="US$ per GPU-hour as a decimal string; without it only GPU-hours",
        examples=["2.50"],
    )
    targets: list[str] = Field(
        default_factory=list,
        max_length=64,
        description="hosted PROVIDER:MODEL pairs to compare with",
        examples=[["openai:gpt-4o"]],
    )
    at: dt.date | None = Field(default=None, description="contracts in force on this day")
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


class ComparisonResponse(BaseModel):
    """The object ``cachecast compare --json`` prints."""

    model_config = ConfigDict(extra="allow")

    deployment: dict[str, Any]
    capacity: dict[str, Any] = Field(
        description="kv_bytes_per_token, weight_bytes, num_blocks, kv_capacity_tokens, ..."
    )
    log: dict[str, Any]
    timing_source: str
    gpu_price_per_hour: str | None = Field(examples=["2.50"])
    self_hosted: dict[str, Any]
    hosted: list[dict[str, Any]]
    versus: list[dict[str, Any]]
    host_tier: dict[str, Any]
    capacity_curve: list[dict[str, Any]]
    at: str | None
    assumptions: list[str]


@router.post(
    "/comparisons",
    summary="Hosted caching against self-hosted vLLM for a workload",
    response_model=ComparisonResponse,
    responses=problem_responses(404, 413, 415, 422),
    openapi_extra=request_body_docs(
        ComparisonRequest,
        examples={
            "llama on H100 against gpt-4o": {
                "value": {
                    "records": [_RECORD_EXAMPLE],
                    "model": "llama-3.3-70b",
                    "gpu": "h100-sxm",
                    "gpus": 2,
                    "gpu_price": "2.50",
                    "targets": ["openai:gpt-4o"],
                    "at": "2026-11-01",
                }
            }
        },
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
    ),
)
async def create_comparison(
    request: Request, state: Annotated[ServiceState, Depends(service_state)]
) -> JSONResponse:
    """Self-hosted sizing, hit rate, GPU-hours and cost for the log, against each hosted
    target's bill. Figures are roofline ceilings (``timing_source`` says so). 422 names the
    wrong field or record; 404 an unknown target, with close matches."""
    payload, lines = await read_log_body(request, _FORM_FIELDS)
    comparison = validate_payload(ComparisonRequest, payload)
    result = await run_in_threadpool(_run_comparison, state.contracts, comparison, lines)
    return JSONResponse(result)


def _invalid(field: str, message: str) -> ProblemError:
    return validation_problem([FieldError(field=field, message=message)])


def _price(text: str | None) -> Decimal | None:
    if text is None:
        return None
    try:
        price = Decimal(text.strip())
    except InvalidOperation as error:
        raise _invalid("body.gpu_price", f"{text!r} is not a decimal number") from error
    if not price.is_finite() or price < 0:
        raise _invalid("body.gpu_price", f"must be a non-negative number, got {text!r}")
    return price


def _geometry(comparison: ComparisonRequest) -> ModelGeometry:
    model = comparison.model
    try:
        if isinstance(model, str):
            # A name, never a path: the server's files are not the client's to read.
            if model not in preset_names():
                raise _invalid(
                    "body.model",
                    f"unknown preset {model!r}; one of {', '.join(preset_names())},"
                    " or send the config.json object",
                )
            return load_model(
                model, params_total=comparison.params, weight_dtype=comparison.weight_dtype
            )
        return from_hf_config(
            model,
            name=str(model.get("_name_or_path") or "config.json"),
            source="config.json in the request body",
            params_total=comparison.params,
            weight_dtype=comparison.weight_dtype,
        )
    except GeometryError as error:
        raise _invalid("body.model", str(error)) from error


def _deployment(comparison: ComparisonRequest, geometry: ModelGeometry) -> Accelerator:
    """The accelerator, after checking that the deployment can be described at all."""
    if comparison.kv_dtype not in KV_DTYPES:
        raise _invalid("body.kv_dtype", f"choose one of {', '.join(KV_DTYPES)}")
    try:
        accelerator = get_accelerator(comparison.gpu)
    except UnknownAcceleratorError as error:
        raise _invalid("body.gpu", str(error)) from error
    try:
        Deployment(
            model=geometry,
            accelerator=accelerator,
            gpus=comparison.gpus,
            kv_dtype=comparison.kv_dtype,
            weight_dtype=comparison.weight_dtype,
            gpu_memory_utilization=_utilization(comparison),
            block_size=comparison.block_size or 16,
        )
    except GeometryError as error:
        raise _invalid("body.weight_dtype", str(error)) from error
    except ValueError as error:
        raise _invalid("body", str(error)) from error
    return accelerator


def _utilization(comparison: ComparisonRequest) -> Fraction:
    return Fraction(str(comparison.gpu_memory_utilization))


def _targets(store: ContractStore, texts: Sequence[str], day: dt.date) -> list[Target]:
    """Every target parsed and its contract known before any work: 404 with close matches."""
    targets = parse_targets(texts)
    resolve_targets(targets, store, day)
    return targets


def _requests(comparison: ComparisonRequest, lines: Sequence[int] | None) -> list[TokenizedRequest]:
    """The log tokenized as the self-hosted side counts it; any bad record: 422, all named."""
    errors: list[LogError] = []
    try:
        requests = list(
            read_records(
                comparison.records,
                SOURCE_NAME,
                model=comparison.tokenizer,
                default_provider=comparison.provider,
                errors=errors,
            )
        )
    except UnknownModelError as error:
        raise _invalid("body.tokenizer", str(error)) from error
    if errors:
        raise log_problem(errors, lines)
    return requests


def _run_comparison(
    store: ContractStore, comparison: ComparisonRequest, lines: Sequence[int] | None
) -> dict[str, Any]:
    refuse_server_paths(
        [("body.tokenizer", comparison.tokenizer), *record_models(comparison.records, "records")]
    )
    price = _price(comparison.gpu_price)
    geometry = _geometry(comparison)
    accelerator = _deployment(comparison, geometry)
    day = comparison.at or dt.datetime.now(dt.UTC).date()
    targets = _targets(store, comparison.targets, day) if comparison.targets else []
    requests = _requests(comparison, lines)
    host_bytes = (
        None if comparison.host_memory_gib is None else int(comparison.host_memory_gib * 2**30)
    )
    with tempfile.TemporaryDirectory(prefix="cachecast-compare-") as directory:
        sources: Sequence[Path] | list[TokenizedRequest] = requests
        if targets:
            # As the CLI does for a file: each hosted target counts the log with its own
            # tokenizer, so the records go to compare as a JSONL log, not as our tokens.
            log = Path(directory) / f"{SOURCE_NAME}.jsonl"
            with log.open("w", encoding="utf-8") as handle:
                for record in comparison.records:
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            sources = [log]
        try:
            report = compare(
                sources,
                model=geometry,
                accelerator=accelerator,
                gpus=comparison.gpus,
                gpu_price=price,
                targets=targets,
                at=day if targets else comparison.at,
                store=store if targets else None,
                kv_dtype=comparison.kv_dtype,
                weight_dtype=comparison.weight_dtype,
                block_size=comparison.block_size,
                gpu_memory_utilization=_utilization(comparison),
                host_tier_bytes=host_bytes,
                max_utilization=comparison.max_utilization,
                state_checkpoint_tokens=comparison.state_checkpoint,
                tokenizer_model=comparison.tokenizer,
            )
        except ComparisonError as error:
            raise _invalid("body", str(error)) from error
        except GeometryError as error:
            raise _invalid("body.model", str(error)) from error
    result = report.to_json()
    # The log is named as in an estimate: 'request', not a temporary file.
    result["log"]["sources"] = [SOURCE_NAME]
    return result
