"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{"timestamp", "type", "payload"}``: ``session_meta`` (session id, the base
instructions, provider), ``turn_context`` (the model of the turn), ``response_item`` (one
item of the conversation, in the Responses API's shapes), ``event_msg`` (user and agent
messages, and ``token_count``), ``compacted`` (the history replaced by a summary).

Requests: which ``token_count`` events are requests, and each one's usage, is decided by
:class:`TokenCounts`, the one rule both readers of rollouts follow (this record reader, and
the session reader ``sessions.native_codex``): ``info.last_token_usage`` is one request's
usage (or, where an event states only the running ``total_token_usage``, what that total
grew by since the event before); Codex writes the same event twice (once after the
response, again before the next turn), so an event whose running total did not move repeats
the previous one; an event with ``info: null`` carries rate limits only; one of no billed
tokens (an aborted turn, Codex's estimate after a compaction) is no request; a fork's or
sub-agent's copy of its parent's token counts is counted once across the files read
(``LogStream.seen``; docs/clients.md, "Format variants"). A rollout is its first
``session_meta``'s session (a later one is the parent's, copied into a fork). The model is
the latest ``turn_context``'s (or ``info.model`` where the event names one). A request after
a user message is marked ``user_turn`` (a new turn: the previous turn's reasoning is no
longer sent; the message is a ``user_message`` event, or in a rollout of the paginated history
mode an ``item_completed`` event of a ``UserMessage`` item, :func:`opens_turn`), and the
reasoning tokens it produced (``reasoning_output_tokens``) are kept as ``reasoning_tokens``;
the session predictor reads both (docs/clients.md).

Prompts: the request's input is the conversation before its first output item (reasoning,
assistant message, tool call), with ``session_meta``'s base instructions as
``instructions``. Tool definitions are not in rollouts, so requests are ``prompt_complete``
false. Published rollouts are often redacted: free text replaced by
``[REDACTED_TEXT len=N sha=H]``. Such a placeholder is rebuilt as N characters of filler
text seeded by H, so equal texts stay equal (their cache prefix is shared) and lengths are
kept; the token counts are then approximate, and fitted to the observed input count.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeGuard

import orjson

from cachecast.core.errors import RecordFieldError
from cachecast.core.limits import current
from cachecast.logs.canonical import iso_seconds, make_record, require_dict
from cachecast.logs.errors import LogFileError, LogRecordError
from cachecast.logs.stream import Item, LogStream, json_lines, load_document
from cachecast.logs.types import ObservedUsage
from cachecast.logs.usage import normalize_usage, to_canonical

EVENT_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
# Items the model produced: the first of them after a request's input starts its output.
OUTPUT_ITEMS = frozenset(
    {
        "reasoning",
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "web_search_call",
        "image_generation_call",
    }
)
REDACTED = re.compile(r"\[REDACTED_[A-Z_]+ len=(\d+) sha=([0-9a-f]+)\]")
MAX_LEN_DIGITS = 12  # a longer len= is refused before it is read as a number
_FILLER_WORDS = (
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "with",
    "was",
    "on",
    "be",
    "by",
    "this",
    "are",
    "or",
    "at",
    "from",
    "an",
    "not",
    "have",
    "but",
    "which",
    "they",
    "you",
    "were",
    "all",
    "one",
    "their",
    "there",
    "can",
    "has",
    "more",
    "will",
    "been",
    "if",
    "would",
    "when",
    "what",
    "code",
    "file",
    "line",
    "value",
    "test",
    "data",
    "run",
    "type",
    "error",
    "name",
    "list",
    "call",
    "return",
    "path",
    "read",
    "make",
    "new",
)


# The counters of a token_count's usage that a billed request reports: an event stating
# ``total_tokens`` alone is Codex's estimate of a compacted history, no request.
BILLED_COUNTERS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
)
# Why a rollout of the two oldest formats gives no request (``skipped`` reasons; the
# session reader's refusal names them: ``sessions.reading.no_request_reason``).
LEGACY_LINE = "Codex rollout line before the envelope (no usage recorded)"
TYPESCRIPT_ROLLOUT = "Codex rollout of the TypeScript CLI {session, items} (no usage recorded)"
# Why a token_count event is no request (``skipped`` reasons, the same in both readers).
RATE_LIMITS_ONLY = "Codex token_count without usage (rate limits only)"
COUNTS_OUTSIDE_INFO = "Codex token_count with its counts outside info (an older shape, not counted)"
REPEATED = "Codex token_count repeating the previous one (counted once)"
REPLAYED = "Codex token_count copied from the parent session into a fork (counted once)"
NO_TOKENS = "Codex token_count of no tokens (no request)"
# The counters of a Codex usage object (a running total less the previous one per counter).
COUNTERS = (*BILLED_COUNTERS, "total_tokens")


class RequestUsage(NamedTuple):
    """A token_count event that is a request: its usage as the event states it (``counts``:
    ``last_token_usage``, or the running total's growth), normalized (``observed``)."""

    counts: dict[str, Any]
    observed: ObservedUsage


@dataclass(slots=True)
class TokenCounts:
    """Which ``token_count`` events of one rollout are requests, and each one's usage: the
    one rule of both readers of rollouts (this module's record reader, used by ``estimate``,
    ``tokenize``, ``check``... on logs that are not read as sessions, and the session reader
    ``sessions.native_codex``, used by ``usage``, ``reconcile``, ``inspect`` and ``estimate`` on
    session files), so that every command reads a rollout's requests alike (docs/clients.md,
    "Format variants"). ``seen`` holds the keys of the token counts counted in the other files
    of the same read (share one set to count a fork's copied history once)."""

    seen: set[str] = field(default_factory=set)
    total: Any = None  # the running total of the last event read
    meta: bool = False  # the rollout's own session_meta was read (a later one is its parent's)
    fork: bool = False  # a fork or sub-agent's rollout: it starts with its parent's history

    def own_meta(self, payload: dict[str, Any], session: str | None) -> bool:
        """Whether a ``session_meta`` is the rollout's own (its first); a later one is the
        parent's, copied in with its history (a fork or a sub-agent: the rollout stays its
        own ``session``)."""
        if self.meta:
            self.fork = self.fork or payload.get("id") != session
            return False
        self.meta = True
        self.fork = bool(payload.get("forked_from_id"))
        return True

    def request(self, payload: dict[str, Any]) -> RequestUsage | str:
        """A ``token_count`` event's payload as the request it is, or why it is none (a
        ``skipped`` reason); a field that cannot be read raises naming it."""
        info = payload.get("info")
        if info is None:
            return COUNTS_OUTSIDE_INFO if "input_tokens" in payload else RATE_LIMITS_ONLY
        info = require_dict(info, "payload.info")
        running = info.get("total_token_usage")
        if running is not None and running == self.total:
            return REPEATED  # the same event written again before the next turn
        counts, where = _last_usage(info, self.total)
        self.total = running
        if self._replayed(running, counts):
            return REPLAYED
        if not any(counts.get(key) for key in BILLED_COUNTERS):
            # An event of no tokens (an aborted turn; or, after a compaction, Codex's
            # estimate of the new history, stated as total_tokens alone:
            # ``recompute_token_usage``): no request was billed (docs/clients.md).
            return NO_TOKENS
        observed = normalize_usage(counts, convention="codex", path=where)
        if (observed.cache_read_tokens or 0) > (observed.input_tokens or 0):
            raise RecordFieldError(
                f"{where}.cached_input_tokens",
                f"{observed.cache_read_tokens} exceeds input_tokens {observed.input_tokens}"
                " (a subset)",
            )
        cached = (observed.cache_read_tokens or 0) + (observed.cache_write_tokens or 0)
        if cached > (observed.input_tokens or 0):
            raise RecordFieldError(
                f"{where}.cache_write_input_tokens",
                f"{observed.cache_write_tokens} with cached_input_tokens"
                f" {observed.cache_read_tokens} exceeds input_tokens {observed.input_tokens}"
                " (both are subsets of it)",
            )
        return RequestUsage(counts, observed)

    def _replayed(self, running: Any, counts: dict[str, Any]) -> bool:
        """Whether this token count was counted in another file already: a fork's copy of
        its parent's, or (a fork read first) the parent's original. A running total past the
        first request is unique to its conversation; a first request's (total = last) is
        matched only where a fork's rollout holds it, so two sessions that began alike stay
        two."""
        if running is None:
            return False
        key = "codex:" + orjson.dumps([running, counts], option=orjson.OPT_SORT_KEYS).decode()
        copied = "codex-fork:" + key[6:]
        if key in self.seen:
            return self.fork or running != counts or copied in self.seen
        self.seen.add(key)
        if self.fork:
            self.seen.add(copied)
        return False


def _last_usage(info: dict[str, Any], previous: Any) -> tuple[dict[str, Any], str]:
    """The request's usage and the field it came from: ``last_token_usage``, or what the
    running total grew by since the previous event (versions that write the total alone)."""
    last = info.get("last_token_usage")
    if last is not None or info.get("total_token_usage") is None:
        where = "payload.info.last_token_usage"
        return require_dict(last, where), where
    where = "payload.info.total_token_usage"
    running = require_dict(info["total_token_usage"], where)
    before = previous if isinstance(previous, dict) else {}
    grown = {}
    for key in COUNTERS:
        now, then = running.get(key), before.get(key, 0)
        if key in running:
            grown[key] = now - then if is_count(now) and is_count(then) and now >= then else now
    return grown, where


def opens_turn(payload: dict[str, Any]) -> bool:
    """Whether an ``event_msg`` payload is a user's message, which opens a new turn: the
    ``user_message`` event, or the ``item_completed`` event of a ``UserMessage`` item that
    rollouts of the paginated history mode write instead (Codex's ``TurnItem::UserMessage``,
    whose ``as_legacy_event`` is the ``user_message`` event: openai/codex
    ``codex-rs/protocol/src/items.rs``; docs/clients.md, "Format variants")."""
    kind = payload.get("type")
    if kind == "user_message":
        return True
    item = payload.get("item")
    return kind == "item_completed" and isinstance(item, dict) and item.get("type") == "UserMessage"


def is_count(value: Any) -> TypeGuard[int]:
    """Whether a usage field is a count (an int, not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def fits(record: dict[str, Any]) -> bool:
    return (
        (record.get("type") in EVENT_TYPES and isinstance(record.get("payload"), dict))
        or legacy_line(record)
        or typescript_rollout(record)
    )


def typescript_rollout(document: Any) -> bool:
    """Whether a JSON document is a rollout of the TypeScript Codex CLI (before codex-rs):
    ``{"session": {"timestamp", "id", "instructions"}, "items": [...]}``, the conversation's
    response items written whole, pretty-printed, as ``rollout-<date>-<id>.json``
    (docs/clients.md, "Format variants"). It records no token usage: no request."""
    if not isinstance(document, dict) or document.keys() != {"session", "items"}:
        return False
    session = document["session"]
    return (
        isinstance(session, dict)
        and {"id", "timestamp"} <= session.keys()
        and isinstance(document["items"], list)
    )


def typescript_file(path: Path) -> bool:
    """Whether a file is a TypeScript CLI rollout: told by its head (one object opening the
    file, pretty-printed, or on one line naming ``session`` and ``items``), then parsed
    whole under the document size bound; a file that does not parse is not one."""
    with open(path, "rb") as handle:
        head = handle.read(64).lstrip()
    # JSON.stringify(..., null, 2) writes "{" alone on the first line; compact, the
    # document opens with its first key, "session".
    if head.split(b"\n", 1)[0].strip() != b"{" and not head.startswith(b'{"session"'):
        return False
    try:
        return typescript_rollout(load_document(path))
    except LogFileError:
        return False


def legacy_line(record: dict[str, Any]) -> bool:
    """Whether a line is of a rollout written before the ``{timestamp, type, payload}``
    envelope: its first line (the session's ``id``, ``timestamp`` and ``instructions``, no
    ``type``) or a ``record_type: state`` line (docs/clients.md, "Format variants"). Such a
    rollout records no token counts: it reads as no request."""
    if record.get("record_type") == "state":
        return True
    return (
        "type" not in record
        and {"id", "timestamp", "instructions"} <= record.keys()
        and not {"model", "input", "messages"} & record.keys()
    )


def read(stream: LogStream) -> Iterator[Item]:
    session: str | None = None
    instructions: str | None = None
    provider: str | None = "openai"
    model: str | None = None
    history: list[dict[str, Any]] = []
    snapshot: list[dict[str, Any]] | None = None  # the input of the request under way
    started: str | None = None  # timestamp of its first output item
    counts = TokenCounts(stream.seen)
    count = 0
    version: str | None = None
    session_event: str | None = None  # "compacted" until the next request
    user_turn = False  # a user message opened a new turn since the previous request
    legacy = False  # a rollout of the format before the envelope
    if typescript_file(stream.path):
        stream.skipped[TYPESCRIPT_ROLLOUT] += 1
        return
    for line, event in json_lines(stream.path, stream.source):
        if isinstance(event, LogRecordError):
            yield line, event
            continue
        legacy = legacy or legacy_line(event)
        if legacy and "payload" not in event:
            stream.skipped[LEGACY_LINE] += 1
            continue
        try:
            kind = event.get("type")
            payload = require_dict(event.get("payload"), "payload")
            if kind == "session_meta":
                if not counts.own_meta(payload, session or stream.path.stem):
                    continue  # the parent's, copied into a fork with its history
                session = payload.get("id") if isinstance(payload.get("id"), str) else session
                base = None if stream.usage_only else payload.get("base_instructions")
                text = base.get("text") if isinstance(base, dict) else base
                instructions = (
                    unredact(text, "payload.base_instructions")
                    if isinstance(text, str)
                    else instructions
                )
                named = payload.get("model_provider")
                provider = named if isinstance(named, str) else provider
                cli = payload.get("cli_version")
                version = cli[:40] if isinstance(cli, str) else version
                continue
            if kind == "turn_context":
                named = payload.get("model")
                model = named if isinstance(named, str) else model
                continue
            if kind == "compacted":
                replacement = payload.get("replacement_history")
                if isinstance(replacement, list) and not stream.usage_only:
                    history = [
                        _item(item, f"payload.replacement_history[{i}]")
                        for i, item in enumerate(replacement)
                    ]
                else:
                    history = []
                snapshot = None
                session_event = "compacted"
                continue
            if kind == "response_item":
                if stream.usage_only:  # no prompt wanted: no history, no filler made
                    continue
                item = _item(payload, "payload")
                if snapshot is None and _is_output(payload):
                    snapshot = list(history)
                    started = (
                        event.get("timestamp") if isinstance(event.get("timestamp"), str) else None
                    )
                history.append(item)
                continue
            if kind == "event_msg" and opens_turn(payload):
                user_turn = True
                continue
            if kind != "event_msg" or payload.get("type") != "token_count":
                continue
            found = counts.request(payload)
            if isinstance(found, str):
                stream.skip(found)
                if found == REPLAYED:  # a request of the parent's: its output is in history
                    stream.counted_elsewhere += 1
                    snapshot, started = None, None
                continue
            last, observed = found
            info = payload["info"]
            named = info.get("model")
            request_model = named if isinstance(named, str) else model
            count += 1
            # No turn_context named the model yet: the record names neither model nor
            # provider, and the log's --model and --provider stand in, as for any record
            # naming none (without --model the request is refused, naming the option).
            body: dict[str, Any] = {"input": snapshot if snapshot is not None else list(history)}
            if request_model is not None:
                body["model"] = request_model
            if instructions is not None:
                body["instructions"] = instructions
            timestamp = started or event.get("timestamp")
            record = make_record(
                request=body,
                model=request_model,
                provider=provider if request_model is not None else None,
                timestamp=None if timestamp is None else iso_seconds(timestamp, "timestamp"),
                request_id=f"{session or stream.path.stem}:{count}",
                session=session,
                prompt_complete=False,
            )
            record["observed"] = to_canonical(observed)
            if version is not None:
                record["client_version"] = version
            if session_event is not None:
                record["session_event"] = session_event
                session_event = None
            if user_turn:
                record["user_turn"] = True
                user_turn = False
            reasoning = last.get("reasoning_output_tokens")
            if isinstance(reasoning, int) and not isinstance(reasoning, bool) and reasoning > 0:
                record["reasoning_tokens"] = reasoning
            snapshot, started = None, None
        except RecordFieldError as exc:
            yield line, stream.error(line, exc.field, exc.reason)
            continue
        yield line, record


def _is_output(payload: dict[str, Any]) -> bool:
    kind = payload.get("type", "message")
    if kind == "message":
        return payload.get("role") == "assistant"
    return kind in OUTPUT_ITEMS


def _item(payload: Any, path: str) -> dict[str, Any]:
    """A rollout item as an input item the renderer reads (redacted text rebuilt)."""
    payload = require_dict(payload, path)
    kind = payload.get("type", "message")
    if kind == "message":
        role = payload.get("role")
        if not isinstance(role, str):
            raise RecordFieldError(f"{path}.role", f"expected a string, got {role!r}")
        content = payload.get("content")
        parts = []
        if isinstance(content, list):
            for index, part in enumerate(content):
                part = require_dict(part, f"{path}.content[{index}]")
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(
                        {
                            "type": part.get("type", "input_text"),
                            "text": unredact(text, f"{path}.content[{index}].text"),
                        }
                    )
                else:  # images and files: their JSON as text (approximate anyway)
                    parts.append({"type": "input_text", "text": orjson.dumps(part).decode()})
        elif isinstance(content, str):
            parts.append({"type": "input_text", "text": unredact(content, f"{path}.content")})
        return {"type": "message", "role": role, "content": parts}
    if kind == "reasoning":
        return {"type": "reasoning"}
    if kind in ("function_call", "custom_tool_call", "local_shell_call"):
        name = payload.get("name") if isinstance(payload.get("name"), str) else kind
        arguments = payload.get("arguments", payload.get("input", payload.get("action", "")))
        if not isinstance(arguments, str):
            arguments = orjson.dumps(arguments).decode()
        return {
            "type": "function_call",
            "name": name,
            "arguments": unredact(arguments, f"{path}.arguments"),
        }
    if kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        output = payload.get("output", "")
        if not isinstance(output, str):
            output = orjson.dumps(output).decode()
        return {"type": "function_call_output", "output": unredact(output, f"{path}.output")}
    # Web search calls and other tool items: their JSON as the model's own text.
    text = unredact(orjson.dumps(payload).decode(), path)
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def unredact(text: str, path: str = "text") -> str:
    """Each ``[REDACTED_... len=N sha=H]`` placeholder replaced by N characters of filler.

    N is checked before anything is made: more than :data:`MAX_LEN_DIGITS` digits, or more
    filler in one field than ``max_request_tokens`` characters (a prompt no request may
    carry), is refused naming ``path``; ``len=1e9`` never becomes a gigabyte of text."""
    if "[REDACTED_" not in text:
        return text
    limit = current().max_request_tokens
    total = 0
    for match in REDACTED.finditer(text):
        digits = match.group(1)
        if len(digits) > MAX_LEN_DIGITS:
            raise RecordFieldError(
                path, f"a redacted span claims a length of {len(digits)} digits (at most {limit:,})"
            )
        total += int(digits)
        if total > limit:
            raise RecordFieldError(
                path,
                f"redacted spans claim {total:,} characters, over the limit of {limit:,}"
                " (setting max_request_tokens; docs/limits.md)",
            )
    return REDACTED.sub(lambda m: filler(int(m.group(1)), m.group(2)), text)


def filler(length: int, seed: str) -> str:
    """``length`` characters of words chosen by ``seed``: equal seeds, equal text."""
    words: list[str] = []
    size = 0
    counter = 0
    while size <= length:  # size - 1: the joined length (no space after the last word)
        digest = hashlib.blake2b(f"{seed}:{counter}".encode(), digest_size=32).digest()
        counter += 1
        for byte in digest:
            word = _FILLER_WORDS[byte % len(_FILLER_WORDS)]
            words.append(word)
            size += len(word) + 1
            if size > length:
                break
    return " ".join(words)[:length]
