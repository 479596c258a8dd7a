"""``POST /v1/usage-reports``: the session usage report (``cachecast usage``) of uploaded
Claude Code transcripts and Codex CLI rollouts.

Two bodies, one report: a multipart upload (``log`` repeatable, plus the options as text
fields: ``since``, ``until``, ``timezone``, ``by`` and ``target`` repeatable, ``ttl``,
``self_hosted``, ``worst``), or JSON (:class:`UsageBody`: each session file's text inline).
The server never reads its own default locations: a report is of what was sent. The files live in a
temporary folder for the request only and are named in the report by their upload names.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.datastructures import UploadFile

from cachecast.core.dates import IsoDate
from cachecast.core.errors import BadInputError, Location
from cachecast.service.isolation import Subject, run_isolated
from cachecast.service.problems import from_pydantic
from cachecast.service.routers._body import (
    FILE_UPLOADS,
    keep_upload,
    parse_json_body,
    post_reading_body,
    read_form,
    unsupported_media_type,
    upload_subject,
)
from cachecast.usecases.usage import (
    Grouping,
    SessionFile,
    TtlName,
    UsageReport,
    UsageRequest,
    usage_report,
)
from cachecast.usecases.usage_self_hosted import SelfHostedOption

router = APIRouter(prefix="/v1", tags=["usage"])

MAX_FILES = 64
_OPTIONS = ("since", "until", "timezone", "ttl", "self_hosted", "worst")
_LISTS = ("by", "target")


class SessionText(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=255, description="how the report names it")
    content: str = Field(description="the file's JSON lines")


class UsageBody(BaseModel):
    """The JSON body: session files inline and the report's options."""

    model_config = ConfigDict(extra="forbid")

    sessions: list[SessionText] = Field(min_length=1, max_length=MAX_FILES)
    since: IsoDate | None = None
    until: IsoDate | None = None
    timezone: str = "UTC"
    by: list[Grouping] = Field(
        default_factory=lambda: list[Grouping](["day"]), min_length=1, max_length=4
    )
    ttl: TtlName | None = None
    targets: list[str] = Field(default_factory=list, max_length=8)
    self_hosted: str | None = Field(
        None,
        max_length=300,
        description="what-if: MODEL@GPU[xN][:PRICE], a model preset served by vLLM (compare)",
    )
    worst: int = Field(20, ge=0, le=1000)


@post_reading_body(
    router,
    "/usage-reports",
    UsageBody,
    summary="Session usage: bills from observed usage, savings, dollars lost by miss cause",
    response_model=UsageReport,
    problems=(408, 413, 415, 422),
    multipart_required=["log"],
    multipart_fields=FILE_UPLOADS,
    multipart_properties={
        "since": {"type": "string", "format": "date"},
        "until": {"type": "string", "format": "date"},
        "timezone": {"type": "string"},
        "by": {"type": "array", "items": {"type": "string"}},
        "target": {"type": "array", "items": {"type": "string"}},
        "ttl": {"type": "string", "enum": ["5m", "1h"]},
        "self_hosted": {"type": "string"},
        "worst": {"type": "integer"},
    },
)
async def create_usage_report(
    request: Request,
) -> UsageReport:
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    with tempfile.TemporaryDirectory(prefix="cachecast-usage-") as directory:
        folder = Path(directory)
        if media_type == "application/json" or media_type.endswith("+json"):
            body = parse_json_body(await request.body(), UsageBody)
            files = []
            for index, session in enumerate(body.sessions):
                path = folder / f"session-{index}.jsonl"
                path.write_text(session.content, encoding="utf-8")
                files.append(SessionFile(path=path, name=session.name))
            options = body.model_dump(exclude={"sessions"})
            subject = Subject("body.sessions", tuple(session.name for session in body.sessions))
        elif media_type == "multipart/form-data":
            form = await read_form(request, max_files=MAX_FILES + 1, max_fields=MAX_FILES + 32)
            try:
                uploads = [value for value in form.getlist("log") if isinstance(value, UploadFile)]
                if not uploads:
                    raise BadInputError(
                        "upload at least one file as 'log'", location=Location(field="log")
                    )
                subject = upload_subject(uploads)
                files = [
                    SessionFile(
                        path=await keep_upload(upload, folder, index),
                        name=upload.filename or f"log-{index}",
                    )
                    for index, upload in enumerate(uploads)
                ]
                # An empty field is kept: it is a value ("" is no day), not an absent one.
                options = {
                    name: value for name in _OPTIONS if isinstance(value := form.get(name), str)
                }
                for name in _LISTS:
                    values = [value for value in form.getlist(name) if isinstance(value, str)]
                    if values:
                        options["targets" if name == "target" else name] = values
            finally:
                await form.close()
        else:
            raise unsupported_media_type(media_type, "application/json or multipart/form-data")
        hosting = options.pop("self_hosted", None)
        if isinstance(hosting, str):
            # Presets only: a server reads no model file of its own for a client.
            options["self_hosted"] = SelfHostedOption.of_text(hosting, files=False)
        try:
            work = UsageRequest.model_validate({**options, "files": files, "on_bad_record": "skip"})
        except ValidationError as error:
            raise from_pydantic(error) from None
        return await run_isolated(request, usage_report, work, subject=subject)
