"""``POST /v1/inspections``: what uploaded log files hold (``inspect``'s report).

Files of any format cachecast reads are uploaded as ``log`` (repeatable, multipart); a batch
requests file and its results file uploaded together are paired, or ``results`` names the
results file explicitly. The files are kept in a temporary folder for the request only and are
named in the report by their upload names.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from fastapi import APIRouter, Request
from starlette.datastructures import UploadFile

from cachecast.core.errors import BadInputError, Location
from cachecast.passes.log_input import LogInput
from cachecast.service.isolation import run_isolated
from cachecast.service.problems import ProblemError
from cachecast.service.routers._body import (
    FILE_UPLOADS,
    FORMAT_FIELD,
    keep_upload,
    post_reading_body,
    read_form,
    upload_subject,
)
from cachecast.usecases.inspect import InspectReport, InspectRequest, inspect

router = APIRouter(prefix="/v1", tags=["inspections"])

MAX_FILES = 16


@post_reading_body(
    router,
    "/inspections",
    None,  # files only
    summary="Inspect log files: format, requests, models, time span, observed usage",
    response_model=InspectReport,
    problems=(408, 413, 415, 422),
    multipart_required=["log"],
    multipart_fields=FILE_UPLOADS,
    multipart_properties={
        "results": {
            "type": "string",
            "format": "binary",
            "description": "the results file of an uploaded batch file",
        },
        **FORMAT_FIELD,
    },
)
async def create_inspection(
    request: Request,
) -> InspectReport:
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "multipart/form-data":
        raise ProblemError(
            415,
            "Unsupported media type",
            f"upload the files as multipart/form-data, not {media_type or 'nothing'}",
            slug="unsupported-media-type",
        )
    form = await read_form(request, max_files=MAX_FILES + 1, max_fields=8)
    try:
        uploads = [value for value in form.getlist("log") if isinstance(value, UploadFile)]
        if not uploads:
            raise BadInputError("upload at least one file as 'log'", location=Location(field="log"))
        results = form.get("results")
        format_field = form.get("format")
        log_format = format_field if isinstance(format_field, str) and format_field else None
        with tempfile.TemporaryDirectory(prefix="cachecast-inspect-") as directory:
            folder = Path(directory)
            paths = [
                await keep_upload(upload, folder, index) for index, upload in enumerate(uploads)
            ]
            names = {
                path: upload.filename or f"log-{index}"
                for index, (path, upload) in enumerate(zip(paths, uploads, strict=True))
            }
            results_path = None
            results_name = None
            if isinstance(results, UploadFile):
                results_path = await keep_upload(results, folder, len(uploads))
                results_name = results.filename or "results"
            subject = upload_subject(uploads)
            # Detecting the files' formats reads them (a whole YAML cassette, seconds for a
            # large one): in the work process, under the request's deadline, never on the
            # API's event loop.
            return await run_isolated(
                request,
                inspect_uploads,
                paths,
                names,
                log_format,
                results_path,
                results_name,
                subject=subject,
                contracts=False,
            )
    finally:
        await form.close()


def inspect_uploads(
    paths: list[Path],
    names: dict[Path, str],
    log_format: str | None,
    results_path: Path | None,
    results_name: str | None,
) -> InspectReport:
    """:func:`inspect` on uploaded files kept at ``paths`` (run in a work process): their
    formats detected, each named by its upload name (``names``)."""
    files = [
        file.model_copy(
            update={
                "name": names[file.path],
                "results_name": (
                    results_name
                    if results_path is not None
                    else names.get(file.results)
                    if file.results
                    else None
                ),
            }
        )
        for file in LogInput.of_paths(paths, format=log_format, results=results_path).files
    ]
    return inspect(InspectRequest(files=files))
