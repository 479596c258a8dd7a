"""``POST /v1/reconciliations``: predictions against the usage the providers reported.

The log comes as a JSON body (``records``, with optional ``model``/``provider``/``at``) or
as uploaded files of any format cachecast reads (``log``, repeatable, multipart: VCR
cassettes, HAR files, OTel exports...), kept in a temporary folder for the request only and
named in the report by their upload names. The answer is ``reconcile``'s report.
"""

from __future__ import annotations

import tempfile
from datetime import date
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import UploadFile

from cachecast.contracts import ContractStore
from cachecast.core.dates import IsoDate, parse_iso_date
from cachecast.core.errors import BadInputError, Location
from cachecast.passes.log_input import LogInput
from cachecast.service.estimating import inline_log
from cachecast.service.isolation import Subject, run_isolated
from cachecast.service.record_schema import RECORD_SCHEMA
from cachecast.service.routers._body import (
    FILE_UPLOADS,
    FORMAT_FIELD,
    RECORD_DEFAULTS,
    keep_upload,
    post_reading_body,
    read_form,
    read_json_body,
    upload_subject,
)
from cachecast.usecases.reconcile import ReconcileReport, ReconcileRequest, reconcile
from cachecast.usecases.requests import request_of

router = APIRouter(prefix="/v1", tags=["reconciliations"])

MAX_FILES = 16


class ReconciliationBody(BaseModel):
    """A log given inline."""

    model_config = ConfigDict(extra="forbid")

    records: list[dict[str, Any]] = Field(
        min_length=1,
        description="log records with usage",
        json_schema_extra={"items": RECORD_SCHEMA},
    )
    model: str | None = Field(default=None, description="model of records that name none")
    provider: str | None = Field(default=None, description="provider of records naming none")
    at: IsoDate | None = Field(default=None, description="contracts in force on this day")
    client: str | None = Field(
        default=None, description="agent sessions: the client profile (claude-code, codex)"
    )


@post_reading_body(
    router,
    "/reconciliations",
    ReconciliationBody,
    summary="Hold predicted cache reads, writes and cost against the observed usage",
    response_model=ReconcileReport,
    problems=(404, 408, 413, 415, 422),
    multipart_required=["log"],
    multipart_fields={**FILE_UPLOADS, **FORMAT_FIELD, **RECORD_DEFAULTS},
    multipart_properties={"at": {"type": "string", "format": "date"}, "client": {"type": "string"}},
)
async def create_reconciliation(
    request: Request,
) -> ReconcileReport:
    """Bad records are a 422 naming each record (index, or file and line) and field."""
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "multipart/form-data":  # a JSON body (anything else is refused there)
        body = await read_json_body(request, ReconciliationBody)
        work = request_of(ReconcileRequest, dict(body), log=inline_log(body, None))
        return await run_isolated(request, reconcile, work, subject=Subject("records"))
    form = await read_form(request, max_files=MAX_FILES + 1, max_fields=16)
    try:
        uploads = [value for value in form.getlist("log") if isinstance(value, UploadFile)]
        if not uploads:
            raise BadInputError("upload at least one file as 'log'", location=Location(field="log"))
        if len(uploads) > MAX_FILES:
            raise BadInputError(
                f"at most {MAX_FILES} files per request", location=Location(field="log")
            )
        wanted = ("format", "model", "provider", "at", "client")
        fields = {name: _text(form.get(name)) for name in wanted}
        at = None
        if fields["at"]:
            try:
                at = parse_iso_date(fields["at"])
            except ValueError:
                raise BadInputError(
                    f"{fields['at']!r} is not a date (YYYY-MM-DD)", location=Location(field="at")
                ) from None
        with tempfile.TemporaryDirectory(prefix="cachecast-reconcile-") as directory:
            folder = Path(directory)
            files = [
                (await keep_upload(upload, folder, index), upload.filename or f"log-{index}")
                for index, upload in enumerate(uploads)
            ]
            # Detecting the files' formats reads them: in the work process, under the
            # request's deadline, never on the API's event loop.
            return await run_isolated(
                request,
                reconcile_uploads,
                files,
                fields,
                at,
                subject=upload_subject(uploads),
            )
    finally:
        await form.close()


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise BadInputError("expected a text field", location=Location(field="form"))


def reconcile_uploads(
    files: list[tuple[Path, str]],
    fields: dict[str, str | None],
    at: date | None,
    store: ContractStore,
) -> ReconcileReport:
    """:func:`reconcile` on uploaded files kept at their paths, each named by its upload
    name (run in a work process, where their formats are detected)."""
    log = LogInput.of_paths(
        [path for path, _ in files],
        format=fields["format"] or None,
        default_model=fields["model"] or None,
        default_provider=fields["provider"] or None,
        on_bad_record="reject",
    )
    names = dict(files)
    log = log.model_copy(
        update={
            "files": [file.model_copy(update={"name": names.get(file.path)}) for file in log.files]
        }
    )
    return reconcile(ReconcileRequest(log=log, at=at, client=fields["client"] or None), store)
