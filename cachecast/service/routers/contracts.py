"""Dated provider contracts: read by anyone, appended to by admins only."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cachecast.contracts import ContractConflictError
from cachecast.contracts.model import ContractTerms
from cachecast.contracts.rules import KEY_SCHEMA_PATTERN
from cachecast.contracts.serialize import terms_to_json
from cachecast.contracts.store import check_keys
from cachecast.core.dates import IsoDate
from cachecast.service.auth import AdminRequired
from cachecast.service.problems import (
    FieldError,
    ProblemError,
    problem_responses,
    validation_problem,
)
from cachecast.service.routers._body import read_json_body
from cachecast.service.state import ServiceState, service_state
from cachecast.usecases.contracts import (
    ContractHistory,
    ContractList,
    HistoryRequest,
    ListRequest,
    ShowRequest,
    contract_history,
    list_contracts,
    show_contract,
)

router = APIRouter(prefix="/v1/contracts", tags=["contracts"])

State = Annotated[ServiceState, Depends(service_state)]
ProviderPath = Annotated[str, Path(description="provider id", examples=["openai"])]
ModelPath = Annotated[
    str, Path(description="model id, alias or pattern match", examples=["gpt-5.6"])
]
AtQuery = Annotated[
    IsoDate | None,
    Query(description="the day whose terms apply (default: today, UTC)", examples=["2026-11-01"]),
]

# Fields a change may not touch through ``changes``: they identify or date the new version.
_IDENTITY_FIELDS = frozenset(
    {"provider", "model", "effective_from", "effective_to", "verified_on", "source"}
)

_CONTRACT_EXAMPLE: dict[str, Any] = {
    "provider": "openai",
    "model": "gpt-5.6",
    "aliases": ["gpt-5.6-*"],
    "effective_from": "2026-10-01",
    "effective_to": None,
    "verified_on": "2026-10-11",
    "source": "https://platform.openai.com/docs/guides/prompt-caching",
    "notes": "",
    "mode": "both",
    "min_cacheable_tokens": 1024,
    "increment_tokens": 128,
    "ttl_options": [
        {"name": "30m", "ttl_seconds": 1800, "refresh_on_hit": True, "write_multiplier": "1.25"}
    ],
    "read_multiplier": "0.1",
    "input_per_mtok": "1.25",
    "output_per_mtok": "10.00",
}


class ContractChange(BaseModel):
    """A new version derived from the newest one: only the listed terms differ (each key of
    ``changes`` must be a contract field)."""

    model_config = ConfigDict(extra="forbid")

    effective_from: IsoDate = Field(examples=["2026-12-01"])
    verified_on: IsoDate = Field(examples=["2026-11-20"])
    source: str = Field(min_length=1, examples=["https://example.com/pricing"])
    notes: str | None = None
    changes: dict[str, Any] = Field(
        default_factory=dict,
        description="contract fields to change, e.g. {'read_multiplier': '0.05'}",
        examples=[{"read_multiplier": "0.05"}],
    )


def _versions(state: ServiceState, provider: str, model: str) -> list[ContractTerms]:
    """Every stored version, oldest first; a 404 listing close matches when there is none."""
    return contract_history(
        HistoryRequest(provider=provider, model=model), state.contracts
    ).versions


@router.get(
    "",
    summary="Contracts in force on a day",
    response_model=ContractList,
    responses=problem_responses(422),
)
def get_contracts(
    state: State,
    provider: Annotated[
        str | None, Query(description="only this provider", examples=["anthropic"])
    ] = None,
    at: AtQuery = None,
) -> ContractList:
    return list_contracts(ListRequest(at=at, provider=provider), state.contracts)


@router.get(
    "/{provider}/{model}",
    summary="The version in force on a day (aliases and patterns resolved)",
    response_model=ContractTerms,
    responses=problem_responses(404, 422),
)
def get_contract(
    state: State, provider: ProviderPath, model: ModelPath, at: AtQuery = None
) -> ContractTerms:
    request = ShowRequest(provider=provider, model=model, at=at)
    return show_contract(request, state.contracts).contract


@router.get(
    "/{provider}/{model}/history",
    summary="Every version, oldest first",
    response_model=ContractHistory,
    responses=problem_responses(404, 422),
)
def get_contract_history(state: State, provider: ProviderPath, model: ModelPath) -> ContractHistory:
    return contract_history(HistoryRequest(provider=provider, model=model), state.contracts)


_PCHAR = "!$&'()*+,;=:@"


def _append(state: ServiceState, terms: ContractTerms, request: Request) -> JSONResponse:
    """Write ``terms`` and answer 201. The whole response is built first, so nothing is
    committed that the client cannot be told about (and read back: the key rules of
    ``contracts.rules`` make every id a URL path segment as it is)."""
    check_keys(terms)
    # Percent-encoded as a path segment (RFC 3986 pchar): a no-op for ids the key rule
    # admits, and never a header that cannot be sent.
    path = request.url_for(
        "get_contract",
        provider=quote(terms.provider, safe=_PCHAR),
        model=quote(terms.model, safe=_PCHAR),
    ).path
    response = JSONResponse(
        terms_to_json(terms),
        status_code=201,
        headers={"Location": f"{path}?at={terms.effective_from.isoformat()}"},
    )
    try:
        state.contracts.add_version(terms)
    except ContractConflictError as error:
        raise ProblemError(
            409, "Conflicting contract version", str(error), slug="conflict"
        ) from error
    return response


def _write_body_docs(schema: dict[str, Any], example: dict[str, Any] | None) -> dict[str, Any]:
    """``openapi_extra`` for a write that reads its body after authentication."""
    content: dict[str, Any] = {"schema": schema}
    if example is not None:
        content["examples"] = {"gpt-5.6": {"value": example}}
    return {"requestBody": {"required": True, "content": {"application/json": content}}}


def _terms_schema() -> dict[str, Any]:
    """ContractTerms' schema with the key rules the write applies (contracts.rules)."""
    schema = ContractTerms.model_json_schema()
    for name in ("provider", "model"):
        schema["properties"][name]["pattern"] = KEY_SCHEMA_PATTERN
    return schema


def _change_schema() -> dict[str, Any]:
    """ContractChange's schema with ``changes`` stating what the write accepts: only contract
    fields, none of those that identify or date the version (additionalProperties false)."""
    schema = ContractChange.model_json_schema()
    terms = _terms_schema()
    schema.setdefault("$defs", {}).update(terms.pop("$defs", {}))
    allowed = {
        name: value for name, value in terms["properties"].items() if name not in _IDENTITY_FIELDS
    }
    schema["properties"]["changes"] = {
        **schema["properties"]["changes"],
        "properties": allowed,
        "additionalProperties": False,
    }
    return schema


@router.post(
    "",
    summary="Append a contract version (admin)",
    status_code=201,
    response_model=ContractTerms,
    dependencies=[AdminRequired],
    responses=problem_responses(401, 403, 409, 413, 415, 422),
    openapi_extra=_write_body_docs(_terms_schema(), _CONTRACT_EXAMPLE),
)
async def add_contract(state: State, request: Request) -> JSONResponse:
    """Append-only: a version that starts after the one in force closes it; an overlapping
    one, or a bounded one that would end the contract, is refused with 409 and nothing is
    written (docs/contracts.md). The body is read only once the admin key is checked."""
    terms = await read_json_body(request, ContractTerms)
    return await run_in_threadpool(_append, state, terms, request)


@router.post(
    "/{provider}/{model}/changes",
    summary="Change terms from a date on (admin): appends a version, never rewrites one",
    status_code=201,
    response_model=ContractTerms,
    dependencies=[AdminRequired],
    responses=problem_responses(401, 403, 404, 409, 413, 415, 422),
    openapi_extra=_write_body_docs(_change_schema(), None),
)
async def change_contract(
    state: State, provider: ProviderPath, model: ModelPath, request: Request
) -> JSONResponse:
    change = await read_json_body(request, ContractChange)
    return await run_in_threadpool(_change, state, provider, model, change, request)


def _change(
    state: ServiceState, provider: str, model: str, change: ContractChange, request: Request
) -> JSONResponse:
    unknown = sorted(change.changes.keys() - ContractTerms.model_fields.keys())
    forbidden = sorted(_IDENTITY_FIELDS & change.changes.keys())
    if unknown or forbidden:
        errors = [
            FieldError(field=f"body.changes.{name}", message="not a contract field")
            for name in unknown
        ] + [
            FieldError(
                field=f"body.changes.{name}",
                message="set it at the top level of the change, not in changes",
            )
            for name in forbidden
        ]
        raise validation_problem(errors, "Invalid contract change")
    versions = _versions(state, provider, model)
    newest = versions[-1]
    merged = {
        **newest.model_dump(),
        **change.changes,
        "effective_from": change.effective_from,
        "effective_to": None,
        "verified_on": change.verified_on,
        "source": change.source,
        "notes": change.notes if change.notes is not None else newest.notes,
    }
    try:
        terms = ContractTerms.model_validate(merged)
    except ValidationError as error:
        errors = [
            FieldError(
                field="body.changes." + ".".join(str(part) for part in item["loc"])
                if item["loc"] and str(item["loc"][0]) in change.changes
                else "body." + ".".join(str(part) for part in item["loc"]),
                message=item["msg"],
            )
            for item in error.errors()
        ]
        raise validation_problem(errors, "Invalid contract") from error
    return _append(state, terms, request)
