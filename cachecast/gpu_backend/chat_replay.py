"""Replay a log of chat requests on an engine as the application sent them.

Each record is tokenized by cachecast for the served model (the prediction's input) and its
chat payload (messages and tools, as logged) is kept beside it, so that a backend in chat
mode lets the engine apply its own chat template and check that it computes the same ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from cachecast.gpu_backend.backend import EngineBackend, Progress
from cachecast.gpu_backend.replay import (
    LogFormatError,
    LoggedRequest,
    Rereadable,
    can_reread,
    replay_logged,
)
from cachecast.gpu_backend.report import MeasurementReport
from cachecast.gpu_backend.types import ReplayOptions
from cachecast.tokenizers import read_records

# Request fields that change what the template renders; a replay cannot carry them over
# faithfully (the engine's defaults are what cachecast reproduces), so they are refused.
TEMPLATE_FIELDS = (
    "chat_template",
    "chat_template_kwargs",
    "add_generation_prompt",
    "continue_final_message",
    "documents",
)


def chat_payload(record: Mapping[str, Any], source: str, line: int) -> dict[str, Any]:
    """The part of a logged chat request that decides its prompt: messages and tools."""
    body = record
    for key in ("request", "body"):
        if isinstance(record.get(key), Mapping):
            body = record[key]
            break
    if not isinstance(body.get("messages"), list):
        raise LogFormatError(source, line, "messages", "not a chat request (no messages list)")
    for name in TEMPLATE_FIELDS:
        if name in body:
            raise LogFormatError(
                source, line, name, "changes the chat template's output; not replayable as is"
            )
    payload: dict[str, Any] = {"messages": body["messages"]}
    if body.get("tools") is not None:
        payload["tools"] = body["tools"]
    return payload


def chat_requests(
    records: Iterable[Mapping[str, Any]], source: str, model: str
) -> Iterator[LoggedRequest]:
    """cachecast's tokenization of each record as ``model``, with its chat payload, as the
    records are read (the reader tokenizes a batch ahead: only that batch's payloads wait
    here for their requests)."""
    payloads: dict[int, dict[str, Any]] = {}

    def read() -> Iterator[dict[str, Any]]:
        for line, record in enumerate(records, start=1):
            payloads[line] = chat_payload(record, source, line)
            yield dict(record)

    for request in read_records(read(), source, model=model, strict=True):
        # The reader numbers records from 1 in order; a record that gave no request leaves
        # its payload behind, dropped once a later record's request comes.
        while payloads and next(iter(payloads)) < request.line:
            del payloads[next(iter(payloads))]
        yield request, payloads.pop(request.line)


def measure_chat_records(
    records: Iterable[Mapping[str, Any]],
    backend: EngineBackend,
    *,
    model: str,
    options: ReplayOptions | None = None,
    source: str = "",
    progress: Progress | None = None,
) -> MeasurementReport:
    """Reset the engine's prefix cache, replay the chat ``records`` in order, and report the
    engine's cached tokens and TTFT per request beside the simulator's prediction.

    The records are read as they are sent (``replay.replay_logged``): records that can be
    read again (a list, a ``Rereadable``) are read once more first, so that every request is
    checked against the engine before any is sent."""
    requests: Iterable[LoggedRequest]
    if can_reread(records):
        requests = Rereadable(lambda: chat_requests(records, source, model))
    else:
        requests = chat_requests(records, source, model)
    return replay_logged(requests, backend, options=options, source=source, progress=progress)
