"""Estimates and simulations for the service: request bodies in, the use cases' reports out.

Both endpoints take the log inline, either as a JSON body with a ``records`` array or as a
JSONL file upload. An estimate body becomes ``cachecast.usecases.estimate``'s request and is
priced by the same function as ``cachecast estimate``; its report is the response.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Protocol, TypeVar

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
)
from starlette.datastructures import FormData, UploadFile

from cachecast.contracts import ContractStore
from cachecast.core.dates import IsoDate
from cachecast.core.errors import (
    MAX_LISTED_PROBLEMS,
    CachecastError,
    InternalError,
    LimitExceededError,
    Location,
)
from cachecast.core.limits import Limits, limits_in_force
from cachecast.core.limits import current as current_limits
from cachecast.passes.log_input import LogInput
from cachecast.service.jobs import JobInputError
from cachecast.service.problems import (
    FieldError,
    ProblemError,
    from_pydantic,
    problem_of,
    validation_problem,
)
from cachecast.service.record_schema import RECORD_SCHEMA
from cachecast.simulator.routing import Routing
from cachecast.usecases.estimate import EstimateRequest, estimate
from cachecast.usecases.requests import request_of
from cachecast.usecases.simulate import MAX_CAPACITY_BLOCKS, PolicyKind, SimulateRequest

SOURCE_NAME = "request"
TARGET_PATTERN = r"^[^:\s]+:\S+$"

_RECORD_EXAMPLE = {
    "timestamp": "2026-11-02T09:00:00Z",
    "scope": "team-a",
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "You are a careful assistant. " * 200},
        {"role": "user", "content": "Summarise the attached report."},
    ],
    "output_tokens": 120,
}


def records_field(example: dict[str, Any]) -> Any:
    """The ``records`` field of every body that carries a log inline."""
    return Field(
        min_length=1,
        description="log records, one per request, in any format `cachecast` reads from a "
        "JSONL log (OpenAI, Anthropic, Gemini, prompt, tokens, Mooncake)",
        examples=[[example]],
        json_schema_extra={"items": RECORD_SCHEMA},
    )


class LogPayload(BaseModel):
    """The log part shared by estimates and simulations."""

    model_config = ConfigDict(extra="forbid")

    records: list[dict[str, Any]] = records_field(_RECORD_EXAMPLE)
    model: str | None = Field(
        default=None, description="model for records that name none", examples=["gpt-4o"]
    )
    provider: str | None = Field(default=None, examples=["openai"])


# A target as the body names it: the API holds it to the pattern it documents.
TargetText = Annotated[str, StringConstraints(pattern=TARGET_PATTERN)]


class EstimateBody(LogPayload):
    targets: list[TargetText] = Field(
        min_length=1,
        max_length=64,
        description="PROVIDER:MODEL pairs to price the log against",
        examples=[["openai:gpt-4o", "anthropic:claude-sonnet-4-5"]],
    )
    at: IsoDate | None = Field(
        default=None, description="the day whose contracts apply (default: today, UTC)"
    )
    auto_cache_control: bool = Field(
        default=False,
        description="for explicit-breakpoint contracts (Anthropic), assume each request ends "
        "its latest message with a breakpoint (top-level automatic cache_control); as the "
        "CLI's --auto-cache-control",
    )


class SimulationBody(LogPayload):
    policy: PolicyKind = Field(description="cache policy", examples=["vllm"])
    target: str | None = Field(
        default=None,
        pattern=TARGET_PATTERN,
        description="PROVIDER:MODEL whose contract parameterises automatic/explicit/gemini"
        " (and whose model the records are tokenized as)",
        examples=["openai:gpt-4o"],
    )
    at: IsoDate | None = None
    block_size: int | None = Field(default=None, gt=0, le=1_000_000, examples=[16])
    capacity_blocks: int | None = Field(
        default=None, gt=0, le=MAX_CAPACITY_BLOCKS, examples=[100_000]
    )
    ttl_seconds: int | None = Field(default=None, gt=0, examples=[300])
    min_tokens: int | None = Field(default=None, ge=0, description="shortest cacheable prefix")
    increment: int | None = Field(default=None, gt=0, description="hit granularity")
    replicas: int | None = Field(
        default=None, gt=0, le=1024, description="vLLM replicas (with routing: a fleet)"
    )
    routing: Routing | None = Field(default=None, description="how requests reach the replicas")


@dataclass(frozen=True)
class JsonlLog:
    """An uploaded JSONL log turned into records, remembering each record's line."""

    records: list[dict[str, Any]]
    lines: list[int]


# One record of an uploaded JSONL log, read as a JSON body is (pydantic's parser: UTF-8
# checked, nesting bounded), so an upload and a body refuse the same lines.
_RECORD = TypeAdapter(dict[str, Any])


def parse_jsonl(data: bytes, field: str) -> JsonlLog:
    """The records of an uploaded JSONL log. Every bad line is counted; the first
    ``MAX_LISTED_PROBLEMS`` are listed (docs/errors.md)."""
    records: list[dict[str, Any]] = []
    lines: list[int] = []
    errors: list[FieldError] = []
    bad = 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue  # blank lines (and the final newline) carry no request
        try:
            value = _RECORD.validate_json(raw, strict=True)
        except ValidationError as error:
            bad += 1
            if len(errors) < MAX_LISTED_PROBLEMS:
                first = error.errors(include_url=False)[0]
                message = (
                    "a record must be a JSON object"
                    if first["type"] == "dict_type"
                    else f"not JSON: {first['msg'].removeprefix('Invalid JSON: ')}"
                )
                errors.append(FieldError(field=field, line=number, message=message))
            continue
        records.append(value)
        lines.append(number)
    if errors:
        raise validation_problem(errors, "Malformed log", total=bad)
    if not records:
        raise validation_problem([FieldError(field=field, message="the log has no records")])
    return JsonlLog(records=records, lines=lines)


def _form_text(form: FormData, name: str) -> str | None:
    value = form.get(name)
    if value is None:
        return None
    if isinstance(value, UploadFile):
        raise validation_problem([FieldError(field=name, message="expected a text field")])
    return value


def _form_value(model: type[BaseModel], name: str, text: str) -> Any:
    """A form field's text as the JSON value it stands for: booleans are ``true`` or
    ``false``, integers digits, so that an upload is held to the JSON body's strict types
    (pydantic's lax mode would read ``0`` as false and ``1e3`` as an integer)."""
    field = model.model_fields.get(name)
    annotation = field.annotation if field is not None else str
    kinds = set(typing.get_args(annotation)) or {annotation}
    kinds.discard(type(None))
    if kinds == {bool}:
        if text in ("true", "false"):
            return text == "true"
        raise validation_problem([FieldError(field=name, message="expected true or false")])
    if kinds == {int}:
        if re.fullmatch(r"[+-]?\d{1,30}", text):
            return int(text)
        raise validation_problem([FieldError(field=name, message="expected an integer")])
    return text


UploadReader = Callable[[bytes, str | None], Awaitable[JsonlLog]]


async def payload_from_form(
    form: FormData, extra_fields: Sequence[str], model: type[BaseModel], read_upload: UploadReader
) -> tuple[dict[str, Any], list[int]]:
    """A multipart upload (file field ``log``: any format cachecast reads, compressed or
    not, read by ``read_upload``: ``service.uploads`` in a work process) as the JSON body it
    stands for (``model``'s fields typed as in JSON), and the line of the uploaded file each
    record came from."""
    upload = form.get("log")
    if not isinstance(upload, UploadFile):
        raise validation_problem([FieldError(field="log", message="upload the log as 'log'")])
    log = await read_upload(await upload.read(), upload.filename)
    payload: dict[str, Any] = {"records": log.records}
    for name in ("model", "provider", "at", *extra_fields):
        text = _form_text(form, name)
        if text is not None and text != "":
            payload[name] = _form_value(model, name, text)
    if "targets" in extra_fields:
        targets: list[str] = []
        for value in form.getlist("targets"):
            if isinstance(value, UploadFile):
                raise validation_problem(
                    [FieldError(field="targets", message="expected a text field")]
                )
            targets.extend(part.strip() for part in value.split(",") if part.strip())
        payload["targets"] = targets
    return payload, log.lines


RequestModel = TypeVar("RequestModel", bound=BaseModel)


def validate_payload(model: type[RequestModel], payload: dict[str, Any]) -> RequestModel:
    """The body as ``model``; a wrong field is a 422 naming it (``body.FIELD``)."""
    try:
        return model.model_validate(payload)
    except ValidationError as error:
        raise from_pydantic(error) from error


def log_problem(errors: Sequence[Any], lines: Sequence[int] | None) -> ProblemError:
    """LogErrors from read_records (1-based position in the records) as a 422 problem."""
    field_errors = []
    for error in errors:
        index = int(error.line) - 1
        line = lines[index] if lines is not None and 0 <= index < len(lines) else None
        field_errors.append(
            FieldError(
                field=f"records[{index}].{error.field}" if error.field else f"records[{index}]",
                message=str(error.reason),
                record=index,
                line=line,
            )
        )
    return validation_problem(field_errors, "Malformed log records")


def check_job_size(records: Sequence[dict[str, Any]], limit: int) -> None:
    """Refuse records that a job would store as more than ``limit`` bytes of JSON, counting
    record by record and stopping at the limit (never writing them all out). A log's records
    can be far larger than its file: a Responses chain holds every earlier turn in each
    request, YAML aliases repeat a request; 3,000 chained requests (a 3 MB HAR) written out
    took a minute, gigabytes, and then a database error (a 500)."""
    size = 0
    for index, record in enumerate(records):
        size += len(orjson.dumps(record))
        if size > limit:
            raise LimitExceededError(
                f"the log's records, as a job stores them, pass {limit:,} bytes at record"
                f" {index} (requests that repeat earlier ones, such as a Responses chain or"
                " YAML aliases, grow when written out; setting max_body_bytes;"
                " docs/limits.md): send a shorter log, or use the command line",
                location=Location(source=SOURCE_NAME, record=index, field="records"),
            )


def estimate_request(body: EstimateBody, lines: Sequence[int] | None) -> EstimateRequest:
    """The use case's request for an API body: the records inline, bad ones rejecting the
    whole request (nothing is priced then)."""
    return request_of(EstimateRequest, dict(body), log=inline_log(body, lines))


class _JobProgress:
    """A job's progress callback as the use cases' progress protocol."""

    def __init__(self, advance: Callable[[int], None]) -> None:
        self.advance = advance

    def start(self, label: str, total: int | None) -> None:
        return None


def run_estimate_job(
    store: ContractStore,
    payload: Mapping[str, Any],
    progress: Callable[[int], None],
    *,
    limits: Limits | None = None,
) -> dict[str, Any]:
    """A stored estimate job (the use case's request as JSON): the report as JSON, under the
    service's ``limits``. Bad input fails the job with the problem a direct request would
    have had."""
    request = EstimateRequest.model_validate(payload)
    try:
        with limits_in_force(limits or current_limits()):
            report = estimate(request, store, progress=_JobProgress(progress))
    except CachecastError as error:
        if isinstance(error, InternalError):
            raise
        raise JobInputError(problem_of(error).model_dump(mode="json", exclude_none=True)) from error
    return report.model_dump(mode="json")


def estimate_job(
    payload: Mapping[str, Any], store: ContractStore, *, progress: Callable[[int], None]
) -> dict[str, Any]:
    """:func:`run_estimate_job` as a work process runs it (``service.isolation``: the limits
    in force there are the service's)."""
    return run_estimate_job(store, payload, progress)


class InlineLog(Protocol):
    """A body carrying a log inline: its records and their default model and provider."""

    records: list[dict[str, Any]]
    model: str | None
    provider: str | None


def inline_log(body: InlineLog, lines: Sequence[int] | None) -> LogInput:
    """An API body's records as a use case's log: bad records reject the whole request."""
    return LogInput(
        records=body.records,
        record_lines=list(lines) if lines is not None else None,
        records_name=SOURCE_NAME,
        default_model=body.model,
        default_provider=body.provider,
        on_bad_record="reject",
    )


def simulation_request(body: SimulationBody, lines: Sequence[int] | None) -> SimulateRequest:
    """The use case's request for an API body (the same as ``cachecast simulate``'s)."""
    return request_of(SimulateRequest, dict(body), log=inline_log(body, lines))
