"""Reading a body: JSON (strictly, as the OpenAPI document says) or a multipart JSONL upload."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from fastapi import APIRouter, Request
from fastapi.types import DecoratedCallable
from pydantic import BaseModel, ValidationError
from starlette.datastructures import FormData, UploadFile

from cachecast.service.estimating import JsonlLog, payload_from_form, validate_payload
from cachecast.service.isolation import Subject, run_isolated
from cachecast.service.problems import (
    FieldError,
    ProblemError,
    from_pydantic,
    problem_responses,
    validation_problem,
)

Body = TypeVar("Body", bound=BaseModel)

# The multipart fields of an upload: one JSONL log (whose records' defaults may be given
# too), or several files of any format cachecast reads.
JSONL_UPLOAD: dict[str, Any] = {
    "log": {"type": "string", "format": "binary", "description": "the JSONL log"}
}
FILE_UPLOADS: dict[str, Any] = {
    "log": {
        "type": "array",
        "items": {"type": "string", "format": "binary"},
        "description": "log files of any supported format",
    }
}
FORMAT_FIELD: dict[str, Any] = {"format": {"type": "string", "description": "force one format"}}
RECORD_DEFAULTS: dict[str, Any] = {
    "model": {"type": "string", "description": "model for records that name none"},
    "provider": {"type": "string"},
}
MULTIPART_FIELDS: dict[str, Any] = {**JSONL_UPLOAD, **RECORD_DEFAULTS}


def request_body_docs(
    model: type[BaseModel] | None,
    *,
    examples: dict[str, Any] | None = None,
    multipart_required: Sequence[str] | None = None,
    multipart_fields: dict[str, Any] = MULTIPART_FIELDS,
    multipart_properties: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``openapi_extra`` for an endpoint that reads its body itself: the JSON schema of
    ``model`` (None: no JSON body), each of ``examples`` (name: body) and, given
    ``multipart_required``, a multipart upload whose fields are ``multipart_fields``
    (default: one JSONL log, :data:`MULTIPART_FIELDS`) plus ``multipart_properties``."""
    content: dict[str, Any] = {}
    if model is not None:
        content["application/json"] = {"schema": model.model_json_schema()}
    if examples is not None:
        content["application/json"]["examples"] = {
            name: {"value": value} for name, value in examples.items()
        }
    if multipart_required is not None:
        content["multipart/form-data"] = {
            "schema": {
                "type": "object",
                "required": list(multipart_required),
                "properties": {**multipart_fields, **(multipart_properties or {})},
            }
        }
    return {"requestBody": {"required": True, "content": content}}


def post_reading_body(
    router: APIRouter,
    path: str,
    body: type[BaseModel] | None,
    *,
    summary: str,
    response_model: Any,
    problems: Sequence[int],
    responses: dict[int | str, dict[str, Any]] | None = None,
    **docs: Any,
) -> Callable[[DecoratedCallable], DecoratedCallable]:
    """``router.post`` for an endpoint that reads its body itself (:func:`read_body`):
    ``response_model`` on success, ``responses`` and a problem for each of ``problems``
    otherwise, and the body documented by :func:`request_body_docs` (``body`` and
    ``docs``)."""
    return router.post(
        path,
        summary=summary,
        response_model=response_model,
        responses={**(responses or {}), **problem_responses(*problems)},
        openapi_extra=request_body_docs(body, **docs),
    )


async def read_body(
    request: Request, model: type[Body], extra_fields: Sequence[str]
) -> tuple[Body, list[int] | None]:
    """The body as ``model``, and for an upload the file line of each record (JSON bodies
    have none: records are named by their index).

    A JSON body is read by pydantic's own parser in strict mode: types exactly as the
    OpenAPI schema says (no ``0`` for ``false``, no ``"5"`` for ``5``), UTF-8 checked, and
    nesting refused past 200 levels, all as a 422 naming the field. A multipart upload's text
    fields are converted as the JSON body's would be (``service.estimating.payload_from_form``)."""
    content_type = request.headers.get("content-type", "")
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type == "application/json" or media_type.endswith("+json"):
        return parse_json_body(await request.body(), model), None
    if media_type == "multipart/form-data":
        form = await read_form(request, max_files=1, max_fields=200)

        async def read_upload(data: bytes, filename: str | None) -> JsonlLog:
            from cachecast.service.uploads import records_of_upload

            subject = Subject("log", (filename,) if filename else ())
            return await run_isolated(
                request, records_of_upload, data, filename, subject=subject, contracts=False
            )

        try:
            payload, lines = await payload_from_form(form, extra_fields, model, read_upload)
        finally:
            await form.close()  # removes spooled upload files
        return validate_payload(model, payload), lines
    raise unsupported_media_type(media_type, "application/json or multipart/form-data")


def body_subject(request: Request) -> Subject:
    """What a request's log is, as its errors name it: the upload ``log`` or the inline
    ``records``."""
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return Subject("log" if media_type == "multipart/form-data" else "records")


def upload_subject(uploads: Sequence[UploadFile]) -> Subject:
    """Uploaded files (the ``log`` field), named by their file names."""
    return Subject("log", tuple(upload.filename for upload in uploads if upload.filename))


async def read_form(request: Request, *, max_files: int, max_fields: int) -> FormData:
    """The multipart form; a broken one (or one with too many parts) is a 422 naming the
    body, not Starlette's undocumented 400."""
    try:
        form = await request.form(max_files=max_files, max_fields=max_fields)
    except ProblemError:
        raise  # the body limit, hit while the form streamed in
    except Exception as error:
        detail = getattr(error, "detail", None) or str(error)
        raise validation_problem(
            [FieldError(field="body", message=f"malformed multipart body: {detail}")]
        ) from error
    problems = [
        FieldError(field=f"{name}.filename", message=reason)
        for name, value in form.multi_items()
        if isinstance(value, UploadFile) and (reason := bad_filename(value.filename)) is not None
    ]
    if problems:
        await form.close()
        raise validation_problem(problems)
    return form


# A file name is echoed in reports and errors and may be stored with a job (PostgreSQL refuses
# a NUL in text): one with a control character, or longer than a path component, is refused.
MAX_FILENAME_CHARS = 255


def bad_filename(name: str | None) -> str | None:
    """Why an upload's file name cannot be used, or None."""
    if name is None:
        return None
    if len(name) > MAX_FILENAME_CHARS:
        return f"a file name of {len(name):,} characters (at most {MAX_FILENAME_CHARS})"
    if any(ord(char) < 32 or ord(char) == 127 for char in name):
        return "the file name holds a control character (NUL, a newline ...)"
    return None


def unsupported_media_type(media_type: str, wanted: str) -> ProblemError:
    return ProblemError(
        415,
        "Unsupported media type",
        f"send {wanted}, not {media_type or 'nothing'}",
        slug="unsupported-media-type",
    )


def parse_json_body(raw: bytes, model: type[Body]) -> Body:
    """A JSON body as ``model``, strictly (see :func:`read_body`)."""
    try:
        return model.model_validate_json(raw, strict=True)
    except ValidationError as error:
        raise from_pydantic(error) from None


async def read_json_body(request: Request, model: type[Body]) -> Body:
    """A body that must be JSON (415 otherwise), as ``model``."""
    content_type = request.headers.get("content-type", "")
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type != "application/json" and not media_type.endswith("+json"):
        raise unsupported_media_type(media_type, "application/json")
    return parse_json_body(await request.body(), model)


async def keep_upload(upload: UploadFile, folder: Path, index: int) -> Path:
    """The upload as a file of its own (its name's suffix kept: detection does not need it,
    people reading errors do)."""
    suffix = Path(upload.filename or "").suffix[:16]
    path = folder / f"upload-{index}{suffix}"
    path.write_bytes(await upload.read())
    return path
