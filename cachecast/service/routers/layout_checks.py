"""``POST /v1/layout-checks``: ``cachecast check`` over HTTP, the same JSON object.

Each side is a prompt layout (our YAML format, as text or as the equivalent JSON object, with
optional sample values) or a list of log records. A regression is an answer, not an error:
200 with ``passed: false``. Bad input is a 422 naming the field; an unknown target a 404
listing close matches.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, Any

import yaml
from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator

from cachecast.contracts import ContractStore, UnknownContractError
from cachecast.errors import BadInputError as TargetError
from cachecast.layouts.api import SideDocument, check_documents
from cachecast.layouts.evaluate import TargetSpec, parse_target
from cachecast.layouts.sources import InputError
from cachecast.layouts.spec import LayoutError
from cachecast.layouts.thresholds import (
    ConfigError,
    Thresholds,
    parse_points,
    parse_rate,
    parse_relative,
)
from cachecast.service.estimating import validate_payload
from cachecast.service.problems import (
    FieldError,
    ProblemError,
    problem_responses,
    unknown_contract_problem,
    validation_problem,
)
from cachecast.service.routers._body import read_log_body, request_body_docs
from cachecast.service.server_paths import record_models, refuse_server_paths
from cachecast.service.state import ServiceState, service_state
from cachecast.tokenizers import LogError, UnknownModelError

router = APIRouter(prefix="/v1", tags=["layout checks"])

SIDES = ("baseline", "candidate")
# A few hundred bytes of layout can ask for millions of synthetic requests; over HTTP the
# expansion is bounded so one request cannot hold a worker for hours.
MAX_SYNTHETIC_REQUESTS = 20_000
_ARRIVAL_DEFAULTS = {"sessions": 10, "turns_per_session": 4}  # spec.Arrival's defaults

_SYSTEM = "You are the support agent of Northwind. Answer in two sentences.\n"
_LAYOUT_EXAMPLE: dict[str, Any] = {
    "cachecast_layout": 1,
    "provider": "openai",
    "model": "gpt-4o",
    "system": _SYSTEM * 120,
    "turn": [
        {"role": "user", "content": "{{ question }}"},
        {"role": "assistant", "content": "{{ answer }}"},
    ],
    "arrival": {"sessions": 3, "turns_per_session": 2, "start": "2026-03-02T09:00:00Z"},
    "values": {"turns": [{"question": "Where is my order?", "answer": "It ships today."}]},
}


class CheckSideBody(BaseModel):
    """One side of the check: a layout (with optional values) or log records."""

    model_config = ConfigDict(extra="forbid")

    layout: str | dict[str, Any] | None = Field(
        default=None,
        description="a cachecast prompt layout: its YAML text, or the same document as a JSON "
        "object (key order is prompt order)",
    )
    values: str | dict[str, Any] | None = Field(
        default=None,
        description="sample values for the layout's placeholders: YAML text or a JSON object "
        "with 'sessions' and/or 'turns'",
    )
    records: list[dict[str, Any]] | None = Field(
        default=None,
        min_length=1,
        description="log records, one per request, in any format `cachecast` reads",
    )

    @model_validator(mode="after")
    def _layout_or_records(self) -> CheckSideBody:
        if (self.layout is None) == (self.records is None):
            raise ValueError("give either 'layout' or 'records', not both or neither")
        if self.values is not None and self.layout is None:
            raise ValueError("'values' go with a 'layout'")
        return self


class ThresholdsBody(BaseModel):
    """As the CLI's options; none given: the CLI's defaults."""

    model_config = ConfigDict(extra="forbid")

    max_cost_increase: str | None = Field(
        default=None, description="relative, '5%' or '0.05'", examples=["5%"]
    )
    max_hit_rate_drop: str | None = Field(
        default=None, description="percentage points, '2pp'", examples=["2pp"]
    )
    min_hit_rate: str | None = Field(
        default=None, description="the candidate's floor, '0.6' or '60%'", examples=["0.6"]
    )


class LayoutCheckRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    baseline: CheckSideBody
    candidate: CheckSideBody
    targets: list[str] = Field(
        min_length=1,
        max_length=32,
        description="PROVIDER:MODEL (contract as of 'at') or vllm / vllm:BLOCK_SIZE",
        examples=[["openai:gpt-4o", "vllm"]],
    )
    thresholds: ThresholdsBody | None = None
    at: dt.date | None = Field(
        default=None, description="the day whose contracts apply (default: today, UTC)"
    )
    model: str | None = Field(
        default=None, description="tokenizer model overriding the layouts' own"
    )
    block_size: int | None = Field(
        default=None, gt=0, le=1_000_000, description="default block size of vllm targets"
    )


class TargetCheck(BaseModel):
    model_config = ConfigDict(extra="allow")

    target: str = Field(examples=["openai:gpt-4o"])
    kind: str = Field(examples=["contract"])
    passed: bool
    violations: list[str]
    baseline: dict[str, Any]
    candidate: dict[str, Any]
    hit_rate_change_pp: float
    cost_change_per_1k_requests: str | None
    cost_change_ratio: str | None


class LayoutCheckResponse(BaseModel):
    """The object ``cachecast check --json`` writes."""

    model_config = ConfigDict(extra="allow")

    passed: bool
    baseline: str = Field(examples=["baseline"])
    candidate: str = Field(examples=["candidate"])
    at: str = Field(examples=["2026-11-01"])
    thresholds: dict[str, str | None]
    targets: list[TargetCheck]
    divergence: dict[str, Any] | None = Field(
        description="first token position where the prefixes differ, its segment and text"
    )
    notes: list[str]


@router.post(
    "/layout-checks",
    summary="Check a prompt layout change against a baseline for cache regressions",
    response_model=LayoutCheckResponse,
    responses=problem_responses(404, 413, 415, 422),
    openapi_extra=request_body_docs(
        LayoutCheckRequest,
        examples={
            "timestamp moved to the top": {
                "value": {
                    "baseline": {"layout": _LAYOUT_EXAMPLE},
                    "candidate": {
                        "layout": {
                            **_LAYOUT_EXAMPLE,
                            "system": "Now: {{ now }}\n" + _LAYOUT_EXAMPLE["system"],
                        }
                    },
                    "targets": ["openai:gpt-4o", "vllm"],
                    "thresholds": {"max_hit_rate_drop": "2pp"},
                    "at": "2026-11-01",
                }
            }
        },
    ),
)
async def create_layout_check(
    request: Request, state: Annotated[ServiceState, Depends(service_state)]
) -> JSONResponse:
    """``passed`` says whether the candidate stays within the thresholds (a regression is
    200 with ``passed: false``); ``divergence`` names the first token where the prefixes
    differ. 422 names the wrong field; 404 an unknown target, with close matches."""
    body = await _json_body(request)
    check = validate_payload(LayoutCheckRequest, body)
    result = await run_in_threadpool(_run_check, state.contracts, check)
    return JSONResponse(result)


async def _json_body(request: Request) -> dict[str, Any]:
    content_type = request.headers.get("content-type", "")
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type == "multipart/form-data":
        raise ProblemError(
            415,
            "Unsupported media type",
            "send the check as application/json (layouts and records inline)",
            slug="unsupported-media-type",
        )
    payload, _ = await read_log_body(request, ())
    return payload


def _thresholds(body: ThresholdsBody | None) -> Thresholds | None:
    """None when nothing is set: check_documents then applies the CLI's defaults."""
    if body is None or body == ThresholdsBody():
        return None
    parsers = {
        "max_cost_increase": parse_relative,
        "max_hit_rate_drop": parse_points,
        "min_hit_rate": parse_rate,
    }
    values: dict[str, Any] = {}
    errors = []
    for name, parse in parsers.items():
        text = getattr(body, name)
        if text is None:
            continue
        try:
            values[name] = parse(text, name)
        except ConfigError as error:
            errors.append(FieldError(field=f"body.thresholds.{name}", message=str(error)))
    if errors:
        raise validation_problem(errors)
    return Thresholds(**values)


def _targets(store: ContractStore, texts: list[str], day: dt.date, block_size: int | None) -> None:
    """Every target understood and every contract known before any work is done."""
    specs: list[TargetSpec] = []
    errors = []
    for index, text in enumerate(texts):
        try:
            specs.append(parse_target(text, default_block_size=block_size))
        except TargetError as error:
            errors.append(FieldError(field=f"body.targets[{index}]", message=str(error)))
    if errors:
        raise validation_problem(errors)
    for spec in specs:
        if spec.kind != "contract":
            continue
        assert spec.provider is not None and spec.model is not None
        try:
            store.as_of(spec.provider, spec.model, day)
        except UnknownContractError as error:
            raise unknown_contract_problem(str(error), error.close_matches) from error


def _text(value: str | dict[str, Any] | None) -> str | None:
    """A JSON object as YAML text: JSON is YAML, and dumps keeps the key order."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _screen_layout(side: str, text: str) -> None:
    """What the file-based CLI allows but a server must not: reading its own files
    (``values_file``) and expansions without bound."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return  # check_documents reports it with the parser's position
    if not isinstance(document, dict):
        return
    field = f"body.{side}.layout"
    refuse_server_paths([(f"{field}.model", document.get("model"))])
    if "values_file" in document:
        raise validation_problem(
            [
                FieldError(
                    field=f"{field}.values_file",
                    message="the server reads no files; send the values in 'values'",
                )
            ]
        )
    arrival = document.get("arrival")
    if not isinstance(arrival, dict):
        arrival = {}
    counts = [arrival.get(key, default) for key, default in _ARRIVAL_DEFAULTS.items()]
    if all(isinstance(count, int) and not isinstance(count, bool) for count in counts):
        sessions, turns = counts
        if sessions * turns > MAX_SYNTHETIC_REQUESTS:
            raise validation_problem(
                [
                    FieldError(
                        field=f"{field}.arrival",
                        message=f"{sessions} sessions x {turns} turns = {sessions * turns:,}"
                        f" synthetic requests; at most {MAX_SYNTHETIC_REQUESTS:,} over HTTP",
                    )
                ]
            )


def _side(name: str, body: CheckSideBody) -> SideDocument:
    if body.records is not None:
        refuse_server_paths(record_models(body.records, f"body.{name}.records"))
        return SideDocument(name, records=body.records)
    layout = _text(body.layout)
    assert layout is not None
    _screen_layout(name, layout)
    return SideDocument(name, layout=layout, values=_text(body.values))


def _side_of(file: str) -> str | None:
    """Which side an error's file names: 'candidate', 'candidate.jsonl', '/tmp/.../baseline'."""
    base = file.rsplit("/", 1)[-1]
    for side in SIDES:
        if base == side or base.startswith((f"{side}.", f"{side}-", f"{side} ")):
            return side
    return None


def _run_check(store: ContractStore, check: LayoutCheckRequest) -> dict[str, Any]:
    refuse_server_paths([("body.model", check.model)])
    thresholds = _thresholds(check.thresholds)
    day = check.at or dt.datetime.now(dt.UTC).date()
    _targets(store, check.targets, day, check.block_size)
    baseline = _side("baseline", check.baseline)
    candidate = _side("candidate", check.candidate)
    try:
        report = check_documents(
            baseline,
            candidate,
            check.targets,
            store,
            thresholds=thresholds,
            at=day,
            model=check.model,
            block_size=check.block_size,
        )
    except LayoutError as error:
        side = _side_of(error.file)
        where = f"body.{side}.layout" if side else "body"
        if error.field and not error.field.startswith("("):
            where += f".{error.field}"
        raise validation_problem(
            [FieldError(field=where, message=error.reason)], "Invalid layout"
        ) from error
    except LogError as error:
        side = _side_of(error.file)
        index = int(error.line) - 1
        where = f"body.{side}.records[{index}]" if side else "body"
        if error.field:
            where += f".{error.field}"
        raise validation_problem(
            [FieldError(field=where, message=error.reason, record=index)], "Malformed log records"
        ) from error
    except UnknownContractError as error:
        raise unknown_contract_problem(str(error), error.close_matches) from error
    except UnknownModelError as error:
        raise ProblemError(404, "Unknown model", str(error), slug="unknown-model") from error
    except TargetError as error:
        if error.close_matches:
            raise unknown_contract_problem(str(error), error.close_matches) from error
        raise validation_problem([FieldError(field="body.targets", message=str(error))]) from error
    except (InputError, ConfigError) as error:
        message = str(error)
        side = _side_of(message.split(":", 1)[0])
        raise validation_problem(
            [FieldError(field=f"body.{side}" if side else "body", message=message)]
        ) from error
    return report.to_json()
