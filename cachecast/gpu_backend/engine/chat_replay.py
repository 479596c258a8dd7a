"""Replay a log of chat requests on an engine as the application sent them.

Each record is tokenized by cachecast for the served model (the prediction's input) and its
chat payload (messages and tools, as logged) is kept beside it, so that a backend in chat
mode lets the engine apply its own chat template and check that it computes the same ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cachecast.gpu_backend.engine.backend import EngineBackend, Progress
from cachecast.gpu_backend.engine.replay import LogFormatError, measure_layout
from cachecast.gpu_backend.engine.report import MeasurementReport
from cachecast.gpu_backend.engine.types import ReplayOptions
from cachecast.tokenizers import read_records
from cachecast.tokenizers.types import TokenizedRequest

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


def tokenized_chats(
    records: Iterable[Mapping[str, Any]], source: str, model: str
) -> tuple[list[TokenizedRequest], list[dict[str, Any]]]:
    """cachecast's tokenization of every record as ``model``, and each one's chat payload."""
    kept = list(records)
    chats = [chat_payload(record, source, line) for line, record in enumerate(kept, start=1)]
    requests = list(read_records([dict(r) for r in kept], source, model=model, strict=True))
    return requests, chats


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
    engine's cached tokens and TTFT per request beside the simulator's prediction."""
    requests, chats = tokenized_chats(records, source, model)
    return measure_layout(
        requests, backend, options=options, source=source, progress=progress, chats=chats
    )
