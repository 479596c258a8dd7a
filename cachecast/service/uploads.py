"""An uploaded log of any format -> the records the JSON body would carry.

``POST /v1/estimates``, ``/v1/simulations`` and ``/v1/comparisons`` take a log as a JSON body
(``records``) or as one uploaded file (multipart ``log``). The file may be any format
cachecast reads (cachecast's own JSON lines, VCR cassettes in every dialect, HAR, OTel,
Langfuse, agent transcripts, batch files...), compressed or not: it is kept in a temporary
file for the request only, its format detected as the CLI's is, and its requests turned
into canonical records (``cachecast.logs``), each remembering the line it came from. Every
unreadable line is a 422 naming the upload, line and field; nothing is priced then.
cachecast's own JSON lines, and a file no format fits, keep their own reading
(``estimating.parse_jsonl``), so that an upload and a JSON body refuse the same records.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from cachecast.core.errors import MAX_LISTED_PROBLEMS
from cachecast.logs import LogRecordError, UnknownLogFormatError, open_log
from cachecast.service.estimating import JsonlLog, parse_jsonl
from cachecast.service.problems import FieldError, validation_problem

OWN_FORMAT = "cachecast"


def records_of_upload(data: bytes, filename: str | None, field: str = "log") -> JsonlLog:
    """The records of an uploaded log (see the module docstring)."""
    name = Path(filename or "log").name or "log"
    with tempfile.TemporaryDirectory(prefix="cachecast-upload-") as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        try:
            stream = open_log(path, name=name)
        except UnknownLogFormatError:
            # No format fits: read as cachecast's JSON lines, whose refusal names every bad
            # line (an upload of broken JSON lines is answered line by line).
            return parse_jsonl(data, field)
        if stream.format == OWN_FORMAT:
            return parse_jsonl(stream.path.read_bytes(), field)
        records: list[dict[str, Any]] = []
        lines: list[int] = []
        errors: list[FieldError] = []
        bad = 0
        for line, item in stream:
            if isinstance(item, LogRecordError):
                bad += 1
                if len(errors) < MAX_LISTED_PROBLEMS:
                    errors.append(
                        FieldError(field=f"{field}.{item.field}", line=line, message=item.reason)
                    )
                continue
            records.append(item)
            lines.append(line)
    if errors:
        raise validation_problem(errors, "Malformed log", total=bad)
    if not records:
        skipped = ", ".join(f"{count} {why}" for why, count in stream.skipped.most_common(3))
        detail = f" ({skipped})" if skipped else ""
        raise validation_problem(
            [FieldError(field=field, message=f"the {stream.format} log has no request{detail}")]
        )
    return JsonlLog(records=records, lines=lines)
