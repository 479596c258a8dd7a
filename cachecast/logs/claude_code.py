"""Claude Code session transcripts (``~/.claude/projects/<project>/<session>.jsonl``, their
subagents in ``<session>/subagents/agent-*.jsonl``).

Each line is one event (``type`` user / assistant / system / progress / summary /
file-history-snapshot / queue-operation). One API response is written as several assistant
lines, one per content block, which repeat its ``message.id`` and usage; newer versions
interleave them with the tool results of the same turn. So:

* a request is counted once per ``message.id``, with the usage of its last line (the
  final output count: the earlier lines carry the count so far);
* its prompt is the conversation before the response's first line, rebuilt in file order:
  the blocks of one response form one assistant message, the user lines after it (tool
  results, prompts) one user message. The system prompt and tool definitions are not in
  transcripts, so every request is ``prompt_complete`` false: its usage is exact, its prompt
  tokens are approximate;
* a subagent file (lines with ``agentId``) and each sidechain inside a session file
  (``isSidechain`` lines, one per root) are cache lineages of their own: their requests get
  their own ``session`` (``<sessionId>/agent-<agentId>``, ``<sessionId>/sidechain-<root>``);
* a compaction (``system`` line of subtype ``compact_boundary``) or a main-chain user line
  without a parent starts the conversation again;
* assistant lines of model ``<synthetic>`` (errors Claude Code writes itself, no API call)
  are not requests.

A response is handed on when the next response of its lineage starts (its lines are then
complete), or at the end of the file.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from cachecast.core.errors import LimitExceededError, RecordFieldError
from cachecast.logs.canonical import iso_seconds, make_record, require_dict
from cachecast.logs.errors import LogRecordError
from cachecast.logs.stream import Item, LogStream, json_lines
from cachecast.logs.usage import normalize_usage, to_canonical

EVENT_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "progress",
        "summary",
        "file-history-snapshot",
        "queue-operation",
    }
)
SYNTHETIC_MODEL = "<synthetic>"
# Content blocks the renderer reads as they are; others become their JSON as text.
RENDERED_BLOCKS = frozenset(
    {"text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking"}
)
THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})


def fits(record: dict[str, Any]) -> bool:
    kind = record.get("type")
    if kind not in EVENT_TYPES:
        return False
    if kind == "summary":
        return "leafUuid" in record
    if kind in ("file-history-snapshot", "queue-operation"):
        return True
    return "sessionId" in record and ("uuid" in record or "message" in record)


@dataclass(slots=True)
class _Slot:
    """A place in the output, in line order; ``item`` is None while its response is open."""

    item: Item | None = None


@dataclass(slots=True)
class _Pending:
    """A response whose lines are still coming: its prompt and latest usage."""

    line: int
    message_id: str
    record: dict[str, Any]
    usage: dict[str, Any]
    usage_line: int
    slot: _Slot
    thought: bool = False  # one of its lines holds a thinking block


@dataclass(slots=True)
class _Lineage:
    session: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    pending: _Pending | None = None
    current_id: str | None = None  # the message id the last assistant message holds
    # What reset the conversation before the next request ("compacted", "restarted"): the
    # session predictor reads it as the reason the cached history no longer applies.
    event: str | None = None
    # When the lineage's latest user line (prompt or tool results) was written: the moment
    # the next request was sent. A response's own lines are written as its blocks complete,
    # minutes later for a long one, so they would measure idle gaps (and cache expiry) from
    # the wrong moment (docs/clients.md, "When a request was sent").
    sent_at: float | None = None
    # A prompt opened a new turn whose first response has not started yet: that request no
    # longer sends the thinking of earlier turns (docs/clients.md, "Thinking of earlier turns").
    prompted: bool = False


def read(stream: LogStream) -> Iterator[Item]:
    lineages: dict[str, _Lineage] = {}
    lineage_of: dict[str, str] = {}  # line uuid -> lineage key
    # Items leave in line order: a response still open (its lineage's next one has not
    # started) holds back what came after it, which is at most one response per lineage.
    queue: deque[_Slot] = deque()
    for line, event in json_lines(stream.path, stream.source):
        if isinstance(event, LogRecordError):
            queue.append(_Slot((line, event)))
        else:
            try:
                lineage = _lineage(event, lineages, lineage_of)
                if lineage is None:
                    stream.skip("Claude Code event that is not a message (progress, summary, ...)")
                else:
                    _event(stream, line, event, lineage, queue)
            except RecordFieldError as exc:
                queue.append(_Slot((line, stream.error(line, exc.field, exc.reason))))
        while queue and (ready := queue[0].item) is not None:
            queue.popleft()
            yield ready
    for lineage in lineages.values():
        if lineage.pending is not None:
            _finish(stream, lineage.pending, lineage)
    for slot in queue:
        assert slot.item is not None
        yield slot.item


def _lineage(
    event: dict[str, Any], lineages: dict[str, _Lineage], lineage_of: dict[str, str]
) -> _Lineage | None:
    """The lineage a message line belongs to (None for lines that are not messages; a
    compaction boundary resets its lineage's conversation)."""
    kind = event.get("type")
    uuid = event.get("uuid")
    parent = event.get("parentUuid")
    boundary = kind == "system" and event.get("subtype") == "compact_boundary"
    if kind not in ("user", "assistant") and not boundary:
        if isinstance(uuid, str) and isinstance(parent, str) and parent in lineage_of:
            lineage_of[uuid] = lineage_of[parent]
        return None
    session = event.get("sessionId")
    if not isinstance(session, str):
        raise RecordFieldError("sessionId", f"expected a string, got {session!r}")
    agent = event.get("agentId")
    if isinstance(agent, str) and agent:
        key = f"{session}/agent-{agent}"
    elif event.get("isSidechain") is True:
        if isinstance(parent, str) and parent in lineage_of:
            key = lineage_of[parent]
        else:
            key = f"{session}/sidechain-{str(uuid)[:8]}"
    else:
        key = session
    if isinstance(uuid, str):
        lineage_of[uuid] = key
    lineage = lineages.get(key)
    if lineage is None:
        lineage = lineages[key] = _Lineage(key)
    elif boundary or (parent is None and kind == "user" and key == session):
        lineage.messages = []
        lineage.current_id = None
        lineage.event = "compacted" if boundary else "restarted"
    return None if boundary else lineage


def _event(
    stream: LogStream, line: int, event: dict[str, Any], lineage: _Lineage, queue: deque[_Slot]
) -> None:
    message = require_dict(event.get("message"), "message")
    content = message.get("content")
    if event["type"] == "user":
        written = event.get("timestamp")
        sent_at = None if written is None else iso_seconds(written, "timestamp")
        _add_user(lineage, content)
        if sent_at is not None:
            lineage.sent_at = sent_at
        if opens_turn(event):
            lineage.prompted = True
        return
    message_id = message.get("id")
    if message_id is None:
        # As the session reader names a response without an id (sessions.native): the
        # line's requestId, else its uuid, else its place.
        message_id = next(
            (v for v in (event.get("requestId"), event.get("uuid")) if isinstance(v, str) and v),
            f"{lineage.session}:{line}",
        )
    if not isinstance(message_id, str):
        raise RecordFieldError("message.id", f"expected a string, got {message_id!r}")
    model = message.get("model")
    if model == SYNTHETIC_MODEL:
        stream.skip("Claude Code's own <synthetic> message (no API call)")
        return
    usage = message.get("usage")
    pending = lineage.pending
    if pending is not None and pending.message_id == message_id:
        if usage is not None:
            pending.usage = require_dict(usage, "message.usage")
            pending.usage_line = line
        pending.thought = pending.thought or has_thinking(content)
        stream.skip("Claude Code line repeating a response (counted once per message.id)")
    else:
        if pending is not None:
            _finish(stream, pending, lineage)
        if usage is None:
            raise RecordFieldError(
                "message.usage", "missing: the response's usage is not in the line"
            )
        if model is not None and not isinstance(model, str):
            raise RecordFieldError("message.model", f"expected a string, got {model!r}")
        written = event.get("timestamp")
        timestamp = request_sent_at(
            lineage.sent_at, None if written is None else iso_seconds(written, "timestamp")
        )
        lineage.sent_at = None
        # A line naming no model (hand-written or trimmed transcripts) names no provider
        # either: the log's --model and --provider stand in, as for any record naming none.
        record = make_record(
            request={"messages": list(lineage.messages)}
            if not model
            else {"model": model, "messages": list(lineage.messages)},
            model=model or None,
            provider="anthropic" if model else None,
            timestamp=timestamp,
            request_id=message_id,
            session=lineage.session,
            prompt_complete=False,
        )
        version = event.get("version")
        if isinstance(version, str):
            record["client_version"] = version[:40]
        if lineage.event is not None:
            record["session_event"] = lineage.event
            lineage.event = None
        if lineage.prompted:
            record["user_turn"] = True
            lineage.prompted = False
        usage = require_dict(usage, "message.usage")
        slot = _Slot()
        queue.append(slot)
        lineage.pending = _Pending(
            line, message_id, record, usage, line, slot, has_thinking(content)
        )
    _add_assistant(lineage, message_id, content)


def request_sent_at(sent: float | None, written: float | None) -> float | None:
    """A request's time: when its last user line was written (``sent``), where that is no
    later than the response's first line (``written``), else the response line's own time
    (docs/clients.md, "When a request was sent"). The one rule for both readers of Claude
    Code transcripts: this one and ``cachecast.sessions.native``."""
    if sent is not None and (written is None or sent <= written):
        return sent
    return written


def _finish(stream: LogStream, pending: _Pending, lineage: _Lineage) -> None:
    lineage.pending = None
    record = pending.record
    try:
        observed = normalize_usage(pending.usage, convention="anthropic", path="message.usage")
    except RecordFieldError as exc:
        error = stream.error(pending.usage_line, exc.field, exc.reason)
        pending.slot.item = (pending.usage_line, error)
        return
    except LimitExceededError as exc:  # a claimed count over its limit stops the read here
        raise exc.located(stream.source, pending.usage_line) from None
    record["observed"] = to_canonical(observed)
    if pending.thought:
        record["thought"] = True
    pending.slot.item = (pending.line, record)


def opens_turn(event: dict[str, Any]) -> bool:
    """Whether a user line is a prompt that opens a turn of the main conversation: typed
    (text, a slash command, a background task's notification), not a tool result, not a
    line Claude Code adds itself (``isMeta``: caveats) nor a compaction's summary (the turn
    it continues goes on), not a sub-agent's. The one rule for both readers of Claude Code
    transcripts: this one and ``cachecast.sessions.native``."""
    if event.get("type") != "user" or event.get("isMeta") or event.get("isCompactSummary"):
        return False
    if event.get("agentId") or event.get("isSidechain"):
        return False
    message = event.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return True
    return isinstance(content, list) and not any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


def has_thinking(content: Any) -> bool:
    """Whether a response line's content holds a thinking block (``thinking``,
    ``redacted_thinking``): Claude Code writes one block per line."""
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") in THINKING_BLOCKS for block in content
    )


def _blocks(content: Any, path: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise RecordFieldError(
            path, f"expected a string or a list of blocks, got {type(content).__name__}"
        )
    blocks = []
    for index, block in enumerate(content):
        block = require_dict(block, f"{path}[{index}]")
        if block.get("type") not in RENDERED_BLOCKS:
            # A block the renderer does not know (server tool results, ...): its JSON text
            # stands for it; the prompt is approximate anyway (no system prompt, no tools).
            block = {"type": "text", "text": orjson.dumps(block).decode()}
        blocks.append(block)
    return blocks


def _add_user(lineage: _Lineage, content: Any) -> None:
    blocks = _blocks(content, "message.content")
    messages = lineage.messages
    if messages and messages[-1]["role"] == "user":
        # Copy on write: earlier requests' prompts hold the message as it was.
        last = messages[-1]
        messages[-1] = {"role": "user", "content": [*last["content"], *blocks]}
    else:
        messages.append({"role": "user", "content": blocks})


def _add_assistant(lineage: _Lineage, message_id: str, content: Any) -> None:
    blocks = _blocks(content, "message.content")
    messages = lineage.messages
    if lineage.current_id == message_id:
        # A later block of the response already begun: into its assistant message, which
        # may sit before the tool results the same turn wrote in between.
        for index in range(len(messages) - 1, -1, -1):
            if messages[index]["role"] == "assistant":
                old = messages[index]
                messages[index] = {"role": "assistant", "content": [*old["content"], *blocks]}
                return
    lineage.current_id = message_id
    messages.append({"role": "assistant", "content": blocks})
