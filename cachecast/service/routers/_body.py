"""Reading a log-carrying body: JSON object or multipart JSONL upload, as one dict."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastapi import Request
from pydantic import BaseModel
from starlette.datastructures import UploadFile

from cachecast.service.estimating import payload_from_form
from cachecast.service.problems import FieldError, ProblemError, validation_problem

MULTIPART_FIELDS: dict[str, Any] = {
    "log": {"type": "string", "format": "binary", "description": "the JSONL log"},
    "model": {"type": "string", "description": "model for records that name none"},
    "provider": {"type": "string"},
}


def request_body_docs(
    model: type[BaseModel],
    *,
    examples: dict[str, Any] | None = None,
    multipart_required: Sequence[str] | None = None,
    multipart_properties: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``openapi_extra`` for an endpoint that reads its body itself: the JSON schema of
    ``model`` (with ``examples``) and, given ``multipart_required``, a multipart JSONL upload
    whose fields are :data:`MULTIPART_FIELDS` plus ``multipart_properties``."""
    json_body: dict[str, Any] = {"schema": model.model_json_schema()}
    if examples is not None:
        json_body["examples"] = examples
    content: dict[str, Any] = {"application/json": json_body}
    if multipart_required is not None:
        content["multipart/form-data"] = {
            "schema": {
                "type": "object",
                "required": list(multipart_required),
                "properties": {**MULTIPART_FIELDS, **(multipart_properties or {})},
            }
        }
    return {"requestBody": {"required": True, "content": content}}


async def read_log_body(
    request: Request, extra_fields: Sequence[str]
) -> tuple[dict[str, Any], list[int] | None]:
    """The body as a JSON object, and for an upload the file line of each record (JSON
    bodies have none: records are named by their index)."""
    content_type = request.headers.get("content-type", "")
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type == "application/json" or media_type.endswith("+json"):
        raw = await request.body()
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise validation_problem(
                [FieldError(field="body", message=f"not JSON: {error}")], "Malformed JSON"
            ) from error
        if not isinstance(body, dict):
            raise validation_problem(
                [FieldError(field="body", message="expected a JSON object with 'records'")]
            )
        return body, None
    if media_type == "multipart/form-data":
        try:
            form = await request.form(max_files=1, max_fields=200)
        except ProblemError:
            raise
        except Exception as error:
            # Starlette raises its own errors for a broken multipart body; the client's fault.
            raise validation_problem(
                [FieldError(field="body", message=f"malformed multipart body: {error}")]
            ) from error
        try:
            return await payload_from_form(form, extra_fields)
        finally:
            await form.close()  # removes spooled upload files
    raise ProblemError(
        415,
        "Unsupported media type",
        f"send application/json or multipart/form-data, not {media_type or 'nothing'}",
        slug="unsupported-media-type",
    )


async def keep_upload(upload: UploadFile, folder: Path, index: int) -> Path:
    """The upload as a file of its own (its name's suffix kept: detection does not need it,
    people reading errors do)."""
    suffix = Path(upload.filename or "").suffix[:16]
    path = folder / f"upload-{index}{suffix}"
    path.write_bytes(await upload.read())
    return path
