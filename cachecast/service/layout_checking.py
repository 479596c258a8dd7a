"""Layout checks for the service: the request body in, ``cachecast.usecases.check``'s request out.

Each side is a prompt layout (our YAML format, as text or as the equivalent JSON object, with
optional sample values) or a list of log records, and is checked by the same function as
``cachecast check``. An inline side is named by its place in the body (``body.candidate``), so
an error in it reads ``body.candidate.records[3].messages[0].content`` or
``body.candidate.layout.turn``. What only a server must refuse is refused here: model names
that would load a tokenizer from the server's disk, engines at URLs the client names, and
expansions without bound.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from cachecast.core.dates import IsoDate
from cachecast.core.errors import BadInputError, Location
from cachecast.passes.prompt_sets import PromptSource
from cachecast.service.record_schema import RECORD_SCHEMA
from cachecast.service.server_paths import record_models, refuse_server_paths
from cachecast.usecases.check import CheckRequest
from cachecast.usecases.evaluation import ENGINE_TARGET
from cachecast.usecases.requests import request_of
from cachecast.usecases.thresholds import parse_thresholds

# A few hundred bytes of layout can ask for millions of synthetic requests; over HTTP the
# expansion is bounded so one request cannot hold a worker for hours.
MAX_SYNTHETIC_REQUESTS = 20_000


# vllm, vllm:BLOCK_SIZE (positive) or PROVIDER:MODEL, as usecases.evaluation reads them.
LayoutTargetText = Annotated[
    str, StringConstraints(pattern=r"^(?:[Vv][Ll][Ll][Mm](?::0*[1-9][0-9]{0,6})?|[^:\s]+:\S+)$")
]


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
        json_schema_extra={"anyOf": [{"type": "array", "items": RECORD_SCHEMA}, {"type": "null"}]},
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


class LayoutCheckBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    baseline: CheckSideBody
    candidate: CheckSideBody
    targets: list[LayoutTargetText] = Field(
        min_length=1,
        max_length=32,
        description="PROVIDER:MODEL (contract as of 'at') or vllm / vllm:BLOCK_SIZE",
        examples=[["openai:gpt-4o", "vllm"]],
    )
    thresholds: ThresholdsBody | None = None
    at: IsoDate | None = Field(
        default=None, description="the day whose contracts apply (default: today, UTC)"
    )
    model: str | None = Field(
        default=None, description="tokenizer model overriding the layouts' own"
    )
    block_size: int | None = Field(
        default=None, gt=0, le=1_000_000, description="default block size of vllm targets"
    )


def _text(value: str | dict[str, Any] | None) -> str | None:
    """A JSON object as YAML text: JSON is YAML, and dumps keeps the key order."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _layout_model(text: str) -> object:
    """The ``model`` a layout text names, if it parses (if not, the check reports it)."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return document.get("model") if isinstance(document, dict) else None


def _side(name: str, body: CheckSideBody) -> PromptSource:
    where = f"body.{name}"
    if body.records is not None:
        refuse_server_paths(record_models(body.records, f"{where}.records"))
        return PromptSource(records=body.records, name=name, inline_name=where)
    layout = _text(body.layout)
    assert layout is not None
    refuse_server_paths([(f"{where}.layout.model", _layout_model(layout))])
    return PromptSource(layout=layout, values=_text(body.values), name=name, inline_name=where)


def refuse_engine_targets(targets: list[str]) -> None:
    """``vllm-engine:URL`` targets are for the command line: a server that called the URLs
    its clients name would let them reach whatever the server can reach."""
    for index, target in enumerate(targets):
        if target.strip().lower().startswith(f"{ENGINE_TARGET}:"):
            raise BadInputError(
                f"{ENGINE_TARGET} targets are not available over HTTP: the service does not"
                " call URLs given in a request (run cachecast check on the command line)",
                location=Location(field=f"targets[{index}]"),
            )


def check_request(body: LayoutCheckBody) -> CheckRequest:
    """The use case's request for a body: every bad record listed (nothing half-checked),
    the expansion bounded, server paths refused before any work."""
    refuse_server_paths([("body.model", body.model)])
    refuse_engine_targets(body.targets)
    thresholds = None
    if body.thresholds is not None:
        thresholds = parse_thresholds(
            body.thresholds.model_dump(), lambda name: f"thresholds.{name}"
        )
    return request_of(
        CheckRequest,
        dict(body),  # targets, at, model, block_size
        baseline=_side("baseline", body.baseline),
        candidate=_side("candidate", body.candidate),
        thresholds=thresholds,
        max_layout_requests=MAX_SYNTHETIC_REQUESTS,
        on_bad_record="reject",
    )
