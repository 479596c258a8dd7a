"""Shared helpers of the log-format tests: reading a file the way commands do, and the
sums a test compares with what it computed itself from the file."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachecast.logs import LogRecordError, open_log
from cachecast.tokenizers import TokenizedRequest, read_log


@dataclass
class Read:
    format: str
    requests: list[TokenizedRequest]
    errors: list[LogRecordError]
    skipped: dict[str, int]


def read(path: Path, **options: Any) -> Read:
    stream = open_log(
        path, format=options.pop("format", None), results=options.pop("results", None)
    )
    errors: list[LogRecordError] = []
    requests = list(read_log(stream, errors=errors, **options))
    return Read(stream.format, requests, errors, dict(stream.skipped))


def totals(requests: list[TokenizedRequest]) -> dict[str, int]:
    """Observed usage summed over the requests (None counts as 0)."""
    out = {"input": 0, "read": 0, "write": 0, "output": 0}
    for request in requests:
        observed = request.observed
        assert observed is not None, f"{request.source}:{request.line} carries no usage"
        out["input"] += observed.input_tokens or 0
        out["read"] += observed.cache_read_tokens or 0
        out["write"] += observed.cache_write_tokens or 0
        out["output"] += observed.output_tokens or 0
    return out


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def json_lines(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def codex_events(path: Path) -> Iterator[tuple[int, dict[str, Any], dict[str, Any] | None]]:
    """Each event of a Codex rollout with its line number and, where it is a token_count
    event that is a new request (PROVENANCE.md: the running total_token_usage moved), its
    ``info``; None for every other event."""
    previous = None
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        event = json.loads(text)
        payload = event["payload"]
        info = payload.get("info") if payload.get("type") == "token_count" else None
        if event["type"] != "event_msg" or info is None or info["total_token_usage"] == previous:
            yield number, event, None
            continue
        previous = info["total_token_usage"]
        yield number, event, info


def vcr_quoted(body: Any) -> str:
    """A body as vcrpy writes it: a single-quoted YAML scalar holding its JSON (a string is
    the body's text as it stands)."""
    text = body if isinstance(body, str) else json.dumps(body)
    return "'" + text.replace("'", "''") + "'"


def vcr_interaction(
    uri: str, request: dict[str, Any], response: Any, *, content_encoding: str | None = None
) -> str:
    """One recorded JSON POST to ``uri`` answered 200 OK with ``response``, as vcrpy's YAML
    lists it under ``interactions``; ``response`` as bytes is kept as vcrpy keeps bytes that
    are not text (``!!binary``, base64), under ``Content-Encoding: content_encoding``."""
    if isinstance(response, bytes):
        body = f"!!binary |\n        {base64.b64encode(response).decode()}"
    else:
        body = vcr_quoted(response)
    encoding = f"\n      Content-Encoding:\n      - {content_encoding}" if content_encoding else ""
    return f"""- request:
    body: {vcr_quoted(request)}
    headers:
      Content-Type:
      - application/json
    method: POST
    uri: {uri}
  response:
    body:
      string: {body}
    headers:{encoding}
      Content-Type:
      - application/json
      Date:
      - Wed, 01 Apr 2026 10:00:00 GMT
    status:
      code: 200
      message: OK
"""


def vcr_cassette(path: Path, *interactions: str) -> Path:
    """A vcrpy cassette at ``path`` holding ``interactions`` (from ``vcr_interaction``)."""
    path.write_text("interactions:\n" + "".join(interactions) + "version: 1\n", "utf-8")
    return path
