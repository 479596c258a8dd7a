"""Errors as ``application/problem+json`` (RFC 9457), naming the field that was wrong.

Every error the service answers goes through here, so clients parse one shape: ``type``,
``title``, ``status``, ``detail`` and, where they apply, ``errors`` (one entry per wrong
field, with a JSON-pointer-like ``field``) and ``close_matches``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cachecast.core.errors import MAX_LISTED_PROBLEMS, CachecastError, InternalError

PROBLEM_MEDIA_TYPE = "application/problem+json"
PROBLEM_TYPE_BASE = "https://cachecast.dev/problems/"

logger = logging.getLogger(__name__)


class FieldError(BaseModel):
    """One wrong field of a problem document: where it is and what is wrong with it."""

    field: str = Field(examples=["body.targets[0]"])
    message: str = Field(examples=["expected PROVIDER:MODEL"])
    record: int | None = Field(
        default=None, description="0-based index of the log record, where one is concerned"
    )
    line: int | None = Field(default=None, description="1-based line of an uploaded JSONL log")


class Problem(BaseModel):
    """RFC 9457 problem details, with cachecast's extension members."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(default="about:blank", examples=[PROBLEM_TYPE_BASE + "unknown-contract"])
    title: str = Field(examples=["Unknown contract"])
    status: int = Field(examples=[404])
    detail: str | None = Field(default=None, examples=["no contract for openai/gpt-4oo"])
    instance: str | None = Field(default=None, examples=["/v1/contracts/openai/gpt-4oo"])
    errors: list[FieldError] | None = None
    total_errors: int | None = Field(
        default=None, description="how many errors there were (``errors`` lists the first)"
    )
    close_matches: list[str] | None = None


class ProblemError(HTTPException):
    """Raise anywhere in a request to answer with a problem document.

    A subclass of FastAPI's HTTPException on purpose: FastAPI re-raises those untouched while
    it reads a body, so a limit hit mid-stream still answers with its own status.
    """

    def __init__(
        self,
        status: int,
        title: str,
        detail: str,
        *,
        slug: str | None = None,
        errors: Sequence[FieldError] = (),
        headers: dict[str, str] | None = None,
        **extensions: Any,
    ) -> None:
        super().__init__(status_code=status, detail=detail, headers=headers)
        self.title = title
        self.slug = slug
        self.errors = list(errors)
        self.extensions = extensions

    def to_problem(self, instance: str | None) -> Problem:
        return Problem(
            type=PROBLEM_TYPE_BASE + self.slug if self.slug else "about:blank",
            title=self.title,
            status=self.status_code,
            detail=str(self.detail),
            instance=instance,
            errors=self.errors or None,
            **self.extensions,
        )


def problem_response(problem: Problem, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse(
        _encodable(problem.model_dump(mode="json", exclude_none=True)),
        status_code=problem.status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=headers,
    )


def _encodable(value: Any) -> Any:
    """``value`` with every string UTF-8 can encode: a problem repeats what it refuses, and
    a JSON body may hold a lone surrogate (``"\\ud800"``), which no UTF-8 response can
    carry; it is written as its escape instead (before: a 500 for a 4xx)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, dict):
        return {_encodable(key): _encodable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_encodable(item) for item in value]
    return value


def field_path(location: Sequence[int | str]) -> str:
    """('body', 'targets', 0) -> 'body.targets[0]'."""
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "body"


def validation_field_errors(
    errors: Sequence[Any], prefix: Sequence[int | str] = ()
) -> list[FieldError]:
    return [
        FieldError(
            field=field_path([*prefix, *error.get("loc", ())]),
            message=str(error["msg"]).removeprefix("Value error, "),
        )
        for error in errors
    ]


def validation_problem(
    errors: list[FieldError], title: str = "Invalid request", *, total: int | None = None
) -> ProblemError:
    """422 for wrong fields: the first ``MAX_LISTED_PROBLEMS`` listed, ``total_errors``
    counting all of them (``total``: more than were passed), so an answer never dwarfs its
    request."""
    count = len(errors) if total is None else total
    first = errors[0]
    more = f" (and {count - 1} more)" if count > 1 else ""
    listed = errors[:MAX_LISTED_PROBLEMS]
    extensions: dict[str, Any] = {"total_errors": count} if count > len(listed) else {}
    return ProblemError(
        422,
        title,
        f"{first.field}: {first.message}{more}",
        slug="invalid-request",
        errors=listed,
        **extensions,
    )


def unknown_contract_problem(detail: str, close_matches: Sequence[str]) -> ProblemError:
    """404 for a contract the store does not know, with the names it suggests instead."""
    return ProblemError(
        404,
        "Unknown contract",
        detail,
        slug="unknown-contract",
        close_matches=list(close_matches),
    )


def from_pydantic(error: ValidationError, prefix: Sequence[int | str] = ("body",)) -> ProblemError:
    return validation_problem(validation_field_errors(error.errors(), prefix))


_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    408: "Request timeout",
    409: "Conflict",
    413: "Content too large",
    415: "Unsupported media type",
    422: "Invalid request",
    500: "Internal server error",
    501: "Not implemented",
    503: "Service unavailable",
}


def error_field_path(error: CachecastError, records_name: str = "request") -> str:
    """Where an error is, as the API names it: ``records[3].messages[0].content`` for an
    inline record, ``body.targets[0]`` for a body field, ``body.candidate.records[3].model``
    for a document of the body named by its path (``body.candidate.records``), else the
    source and field."""
    where = error.location
    field = where.field or ""
    if where.source == records_name and where.record is not None:
        return f"records[{where.record}].{field}" if field else f"records[{where.record}]"
    if where.source is not None and where.source.startswith("body."):
        path = where.source + (f"[{where.record}]" if where.record is not None else "")
        return f"{path}.{field}" if field else path
    if where.source is None:
        return f"body.{field}" if field else "body"
    return f"{where.source}: {field}" if field else where.source


def problem_of(error: CachecastError, instance: str | None = None) -> Problem:
    """The problem document of an error of the tree: its family's status and type, the
    problems it lists (at most ``MAX_LISTED_PROBLEMS``, with the total count)."""
    listed = error.problems or [error]
    entries = [
        FieldError(
            field=error_field_path(problem),
            message=problem.message,
            record=problem.location.record,
            line=problem.location.line,
        )
        for problem in listed
    ]
    extensions: dict[str, Any] = {}
    if error.close_matches:
        extensions["close_matches"] = error.close_matches
    if error.problems:
        extensions["total_errors"] = error.total_problems
    return Problem(
        type=error.problem_type,
        title=error.title,
        status=error.http_status,
        detail=error.one_line(),
        instance=instance,
        errors=entries,
        **extensions,
    )


def install_problem_handlers(app: FastAPI) -> None:
    async def on_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, CachecastError)
        if isinstance(exc, InternalError):
            logger.error("internal error on %s %s: %s", request.method, request.url.path, exc)
        return problem_response(problem_of(exc, request.url.path))

    async def on_problem(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ProblemError)
        return problem_response(exc.to_problem(request.url.path), exc.headers)

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        problem = Problem(
            title=_TITLES.get(exc.status_code, "Error"),
            status=exc.status_code,
            detail=str(exc.detail),
            instance=request.url.path,
        )
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            # Starlette names the methods of the first route with this path only; the path
            # may be served by several (GET and POST /v1/contracts).
            headers["Allow"] = ", ".join(_allowed_methods(app, request))
        return problem_response(problem, headers)

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        problem = validation_problem(validation_field_errors(exc.errors()))
        return problem_response(problem.to_problem(request.url.path))

    app.add_exception_handler(CachecastError, on_error)
    app.add_exception_handler(ProblemError, on_problem)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(RequestValidationError, on_validation)
    # Any other exception is answered by UnexpectedErrorMiddleware, not by a handler for
    # Exception: Starlette runs that one in its outermost middleware and re-raises after
    # answering, and the server then resets the client's keep-alive connection.


def _allowed_methods(app: FastAPI, request: Request) -> list[str]:
    methods: set[str] = set()
    for route in app.router.routes:
        match, _ = route.matches({**request.scope, "method": "GET"})
        if match is not Match.NONE:
            methods.update(getattr(route, "methods", None) or ())
    return sorted(methods)


class TrackedSend:
    """An ASGI ``send`` that notes when the response has begun: a middleware may answer an
    error only before that."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.started = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        await self.send(message)


class UnexpectedErrorMiddleware:
    """A bug answers 500 (problem+json, logged with its traceback) and the connection stays
    usable: the exception ends here instead of reaching the server."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        tracked = TrackedSend(send)
        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            path = scope.get("path", "")
            logger.exception("unhandled error on %s %s", scope.get("method"), path)
            if tracked.started:
                raise  # half a response is out: only the server can end it
            problem = Problem(
                title=_TITLES[500],
                status=500,
                detail=f"{type(exc).__name__} while handling the request; see the server log",
                instance=path,
            )
            await problem_response(problem)(scope, receive, send)


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries documenting problem bodies for these statuses."""
    return {
        status: {
            "model": Problem,
            "description": _TITLES.get(status, "Error"),
            "content": {PROBLEM_MEDIA_TYPE: {}},
        }
        for status in statuses
    }
