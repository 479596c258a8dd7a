"""Gemini CLI chat recordings (``~/.gemini/tmp/<project hash>/chats/session-*.json[l]``): the
replies whose usage they record, for the session reader (``sessions.gemini_cli``) and as
canonical records for the passes that read any log (docs/clients.md, "Gemini CLI";
docs/log-formats.md).

Two layouts, both written by Gemini CLI's ``ChatRecordingService``
(google-gemini/gemini-cli ``packages/core/src/services/chatRecordingService.ts`` and
``chatRecordingTypes.ts``):

* ``session-*.jsonl`` (current): a log of records. The first line is the session's
  metadata (``sessionId``, ``projectHash``, ``startTime``, ``lastUpdated``, ``kind``:
  ``main`` or ``subagent``); then a message record per write (``id``, ``timestamp``,
  ``type``: ``user``, ``gemini``, ``info``...), a message being written again, whole, each
  time it changes (its tokens, then its tool calls: the last write of an ``id`` wins);
  ``{"$set": {...}}`` metadata updates (``lastUpdated``; ``messages``, the history rewritten
  after masking, copies of the same messages); ``{"$rewindTo": id}`` (the user rewound: the
  messages from ``id`` on leave the conversation, but their requests were made and billed).
* ``session-*.json`` (older): one document ``{sessionId, projectHash, startTime,
  lastUpdated, messages: [...]}``.

A ``gemini`` message's ``tokens`` are one response's ``usageMetadata`` (``recordMessageTokens``:
``input`` = ``promptTokenCount``, cached tokens included; ``output`` =
``candidatesTokenCount``; ``cached`` = ``cachedContentTokenCount``; ``thoughts`` =
``thoughtsTokenCount``; ``tool`` = ``toolUsePromptTokenCount``; ``total`` =
``totalTokenCount``), set once on the message that response made: each message id with
tokens is one request, counted once whatever the number of its writes. A message with
``tokens: null`` (a reply whose usage never came) is no request.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.canonical import iso_seconds, make_record
from cachecast.logs.errors import LogRecordError
from cachecast.logs.stream import Item, LogStream, json_lines, load_document
from cachecast.logs.usage import normalize_usage, to_canonical

GEMINI_CLI = "gemini-cli"
CONVENTION = "gemini"  # ``logs.usage``: the tokens are a usageMetadata renamed
REPEATED = "Gemini CLI message written again (counted once per id)"
NO_TOKENS = "Gemini CLI reply without tokens (no usage recorded)"
METADATA = "Gemini CLI metadata line ($set, $rewindTo, the session's header)"
OTHER_MESSAGE = "Gemini CLI message that is no reply (user, info, error...)"
# ``tokens`` key -> the usageMetadata field it copies (``recordMessageTokens``).
TOKEN_FIELDS = {
    "input": "promptTokenCount",
    "output": "candidatesTokenCount",
    "cached": "cachedContentTokenCount",
    "thoughts": "thoughtsTokenCount",
    "tool": "toolUsePromptTokenCount",
    "total": "totalTokenCount",
}
SUBAGENT = "subagent"


def is_header(record: dict[str, Any]) -> bool:
    """The metadata a recording opens with (``sessionId`` and ``projectHash``, no ``id``)."""
    return (
        isinstance(record.get("sessionId"), str)
        and isinstance(record.get("projectHash"), str)
        and "id" not in record
    )


def is_reply(record: dict[str, Any]) -> bool:
    return record.get("type") == "gemini" and isinstance(record.get("id"), str)


def records_fit(records: list[dict[str, Any]]) -> str | None:
    """Detection: a recording's header among the JSON lines, or the older one document."""
    if any(is_header(record) for record in records):
        return None
    return "no Gemini CLI session header {sessionId, projectHash} (a chats/session-* file)"


@dataclass(slots=True)
class Reply:
    """One ``gemini`` message with tokens: one request."""

    line: int  # where the message was first written
    message_id: str
    timestamp: str | None
    model: str | None
    tokens: dict[str, Any]
    session: str  # the session id (a sub-agent's: its parent's)
    lineage: str  # the session id, or ``<parent>/agent-<id>`` for a sub-agent
    project: str  # the project hash
    user_turn: bool  # the first reply after a user message

    @property
    def usage(self) -> dict[str, Any]:
        """The tokens under their usageMetadata names (the ``gemini`` usage convention)."""
        return {
            TOKEN_FIELDS[key]: value for key, value in self.tokens.items() if key in TOKEN_FIELDS
        }

    @property
    def where(self) -> str:
        return "tokens"


def replies(path: Path, source: str, skipped: Counter[str]) -> Iterator[Reply | LogRecordError]:
    """Every reply with tokens, once, in the order first written, with its last write's
    fields; a line that is no JSON object comes as its error. ``skipped`` counts the records
    read that are no request, by reason."""
    header: dict[str, Any] = {}
    found: dict[str, Reply] = {}
    user_pending = True  # the session's first reply opens a turn
    for line, record in _records(path, source):
        if isinstance(record, LogRecordError):
            yield record
            continue
        if is_header(record):
            header.update(record)
            messages = record.get("messages")  # the older single document
            if isinstance(messages, list):
                lines = _message_lines(path)
                for message in messages:
                    if isinstance(message, dict):
                        at = lines.get(str(message.get("id")), line)
                        user_pending = _take(
                            message, at, header, path, found, skipped, user_pending
                        )
            else:
                skipped[METADATA] += 1
            continue
        updates = record.get("$set")
        if isinstance(updates, dict):
            skipped[METADATA] += 1
            for key in ("sessionId", "projectHash", "kind"):
                if isinstance(updates.get(key), str) and key not in header:
                    header[key] = updates[key]
            history = updates.get("messages")
            if isinstance(history, list):  # the history rewritten: copies, never new replies
                for message in history:
                    if isinstance(message, dict) and message.get("id") in found:
                        skipped[REPEATED] += 1
            continue
        if "$rewindTo" in record:
            skipped[METADATA] += 1
            continue
        user_pending = _take(record, line, header, path, found, skipped, user_pending)
    yield from found.values()


def _take(
    message: dict[str, Any],
    line: int,
    header: dict[str, Any],
    path: Path,
    found: dict[str, Reply],
    skipped: Counter[str],
    user_pending: bool,
) -> bool:
    """Record one message write; the new value of "a user message came since the last reply"."""
    if message.get("type") == "user":
        skipped[OTHER_MESSAGE] += 1
        return True
    if not is_reply(message):
        skipped[OTHER_MESSAGE] += 1
        return user_pending
    message_id = message["id"]
    tokens = message.get("tokens")
    earlier = found.get(message_id)
    if earlier is not None:
        skipped[REPEATED] += 1
        if isinstance(tokens, dict):
            earlier.tokens = tokens
        if isinstance(message.get("model"), str):
            earlier.model = message["model"]
        return user_pending
    if not isinstance(tokens, dict):
        skipped[NO_TOKENS] += 1
        return user_pending
    session, lineage = _lineage(header, path)
    timestamp = message.get("timestamp")
    model = message.get("model")
    found[message_id] = Reply(
        line=line,
        message_id=message_id,
        timestamp=timestamp if isinstance(timestamp, str) else None,
        model=model if isinstance(model, str) and model else None,
        tokens=tokens,
        session=session,
        lineage=lineage,
        project=str(header.get("projectHash") or ""),
        user_turn=user_pending,
    )
    return False


def _lineage(header: dict[str, Any], path: Path) -> tuple[str, str]:
    """(session, lineage): a sub-agent's recording lies in ``chats/<parent session id>/``
    (``ChatRecordingService.initialize``); it is a lineage of its parent's session."""
    session = str(header.get("sessionId") or path.stem)
    if header.get("kind") == SUBAGENT and path.parent.name != "chats":
        parent = path.parent.name
        return parent, f"{parent}/agent-{session}"
    return session, session


_MESSAGE_ID = re.compile(rb'"id"\s*:\s*"([^"\\]{1,200})"')


def _message_lines(path: Path) -> dict[str, int]:
    """The line each message id of a pretty-printed document stands on (the first: a
    message's ``id`` comes before its tool calls' ids), so a request is named by its line."""
    data = path.read_bytes()  # already read whole, under the document bound
    lines: dict[str, int] = {}
    line, at = 1, 0
    for match in _MESSAGE_ID.finditer(data):
        line += data.count(b"\n", at, match.start())
        at = match.start()
        lines.setdefault(match.group(1).decode("utf-8", "replace"), line)
    return lines


def _records(path: Path, source: str) -> Iterator[tuple[int, dict[str, Any] | LogRecordError]]:
    """The JSON-lines records, or the one document (pretty-printed: the older layout)."""
    with open(path, "rb") as handle:
        head = handle.read(1 << 16).lstrip()
    first = head.split(b"\n", 1)[0].strip()
    if first == b"{" or (head.startswith(b"{") and not first.endswith(b"}")):
        document = load_document(path)
        if not isinstance(document, dict):
            yield 1, LogRecordError(source, 1, "<document>", "expected a JSON object")
            return
        yield 1, document
        return
    yield from json_lines(path, source)


def read(stream: LogStream) -> Iterator[Item]:
    """Canonical records, one per reply with tokens, for the passes that read any log (the
    session reports read the replies through ``sessions.gemini_cli``). The prompts are not
    in the recording as sent: each record states its usage only (``prompt_complete`` false)."""
    for reply in replies(stream.path, stream.source, stream.skipped):
        if isinstance(reply, LogRecordError):
            yield reply.line or 0, reply
            continue
        try:
            observed = normalize_usage(reply.usage, convention=CONVENTION, path=reply.where)
            when = None if reply.timestamp is None else iso_seconds(reply.timestamp, "timestamp")
        except RecordFieldError as exc:
            yield reply.line, stream.error(reply.line, exc.field, exc.reason)
            continue
        body: dict[str, Any] = {"messages": []}
        if reply.model:
            body["model"] = reply.model
        record = make_record(
            request=body,
            model=reply.model,
            provider="google" if reply.model else None,
            timestamp=when,
            request_id=reply.message_id,
            session=reply.lineage,
            prompt_complete=False,
        )
        record["observed"] = to_canonical(observed)
        yield reply.line, record
