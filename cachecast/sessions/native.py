"""Claude Code transcripts and Codex CLI rollouts read line by line, for ``sessions.reading``
(the one reader of agent sessions; its docstring says which lines are parsed and why): the
:class:`SessionRequest` type and the one place a request's facts and split are made
(:func:`make_request`).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from cachecast.core.errors import LimitExceededError, LogRecordError, RecordFieldError
from cachecast.logs.canonical import iso_seconds, require_dict
from cachecast.logs.claude_code import has_thinking, opens_turn, request_sent_at
from cachecast.logs.codex import legacy_line, typescript_file
from cachecast.logs.providers import FAST_MODE_SUFFIX
from cachecast.logs.stream import READ_BUFFER_BYTES, bounded_lines
from cachecast.logs.types import ObservedUsage
from cachecast.logs.usage import normalize_usage
from cachecast.sessions.predictor import ObservedSplit, PromptFacts

CLAUDE_CODE = "claude-code"  # the format and client profile names (``sessions.profiles``)
CODEX = "codex"
NATIVE_FORMATS = (CLAUDE_CODE, CODEX)
SYNTHETIC_MODEL = "<synthetic>"
# A response served in fast mode says ``"speed": "fast"`` in its usage: premium prices and a
# cache of its own, so it is read as a model of its own, ``<model>-fast`` (docs/clients.md).
FAST = "fast"
REPEATED_RESPONSE = "Claude Code line repeating a response (counted once per message.id)"
TTL_5M = "5m"
TTL_1H = "1h"
SUBAGENT_MARKS = ("/agent-", "/sidechain-")
# Claude Code names the agent that compacts a session ``acompact-*``: it sends the session's
# history (docs/clients.md), so it can read what the session cached.
COMPACTION_MARK = "/agent-acompact"


@dataclass(frozen=True, slots=True)
class SessionRequest:
    """One billed API request of an agent session."""

    facts: PromptFacts
    observed: ObservedSplit  # never handed to a prediction: SessionPredictor.learn only
    usage: ObservedUsage  # the usage as reported (for the bill)
    provider: str | None
    client_version: str | None
    client: str | None = None  # the format it was read as, where a client writes it
    session: str = ""  # the session id (a Claude Code sub-agent shares its parent's)
    project: str = ""  # Claude Code's project folder, Codex's working directory
    dated: bool = True  # False: the log gives no time (``facts.timestamp`` is 0 then)
    # What the usage covers: one API ``request``; a ``turn`` of ``codex exec --json`` (its
    # requests summed); a model's whole ``run`` (``claude -p --output-format json``). Only
    # requests are predicted and reconciled (docs/clients.md, "Headless output").
    unit: str = "request"

    @property
    def write_1h(self) -> int:
        return self.observed.write_by_ttl.get(TTL_1H, 0)

    @property
    def write_5m(self) -> int:
        """Written tokens not made with the 1-hour TTL: the API's default, 5 minutes."""
        return self.observed.write - self.write_1h


def native_format(path: Path) -> str | None:
    """``claude-code`` or ``codex`` where the first lines of ``path`` that say are of that
    client (cheaper than trying every format; None: neither). A compressed file is told by
    the head of its inflated content (LogFileError where it does not inflate); it is then
    read through ``logs.open_log``."""
    for line, raw in _head_lines(path):
        if line > 50:
            break
        if line == 1 and raw.lstrip().startswith(b"{") and typescript_file(path):
            return CODEX  # the TypeScript CLI's rollout: one pretty-printed document
        event = _parsed(raw, str(path), line)
        if not isinstance(event, dict):
            continue
        if isinstance(event.get("payload"), dict) and "type" in event:
            return CODEX
        if line == 1 and legacy_line(event):
            return CODEX
        if "projectHash" in event:  # a Gemini CLI recording's header (``logs.gemini_cli``)
            return None
        if "sessionId" in event or event.get("type") in ("summary", "file-history-snapshot"):
            return CLAUDE_CODE
    return None


def make_request(
    source: str,
    line: int,
    request_id: str,
    lineage: str,
    model: str,
    timestamp: float | None,
    usage: ObservedUsage,
    *,
    root: str | None = None,
    event: str | None = None,
    provider: str | None,
    client_version: str | None,
    client: str | None,
    session: str,
    project: str = "",
    user_turn: bool = False,
    reasoning: int = 0,
    thought: bool = False,
    directory_change: tuple[str, str] | None = None,
) -> SessionRequest:
    """A request from its normalized usage (the one place facts and split are made)."""
    if usage.input_tokens is None:
        raise RecordFieldError("usage", "the request's usage states no input token count")
    read = usage.cache_read_tokens or 0
    by_ttl = dict(usage.cache_write_by_ttl)
    write = (
        usage.cache_write_tokens if usage.cache_write_tokens is not None else sum(by_ttl.values())
    )
    total = usage.input_tokens
    facts = PromptFacts(
        source=source,
        line=line,
        request_id=request_id,
        lineage=lineage,
        model=model,
        timestamp=timestamp or 0.0,
        prompt_tokens=total,
        root=root,
        event=event,
        subagent=any(mark in lineage for mark in SUBAGENT_MARKS),
        parent=lineage.split(COMPACTION_MARK, 1)[0] if COMPACTION_MARK in lineage else None,
        user_turn=user_turn,
        directory_change=directory_change,
    )
    observed = ObservedSplit(
        read=read,
        write=write,
        uncached=total - read - write,
        output=usage.output_tokens or 0,
        write_by_ttl=by_ttl,
        writes_reported=usage.cache_write_tokens is not None or bool(by_ttl),
        reasoning=reasoning,
        thought=thought,
    )
    return SessionRequest(
        facts,
        observed,
        usage,
        provider,
        client_version,
        client,
        session,
        project,
        timestamp is not None,
    )


def fingerprint(value: Any) -> str:
    return hashlib.blake2b(orjson.dumps(value), digest_size=12).hexdigest()


def compressed(path: Path) -> bool:
    """A compressed file is read through ``logs.open_log``, which inflates it (bounded)."""
    from cachecast.logs.compressed import compression_of

    return compression_of(path) is not None


# The inflated bytes of a compressed session file looked at to tell its client (whole lines of
# them: a first line longer than this is not told, and the file is then tried as any log).
HEAD_BYTES = 8 << 20


def _head_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    from cachecast.logs.compressed import compression_of, head

    kind = compression_of(path)
    if kind is None:
        yield from _lines(path, str(path))
        return
    data, at_end = head(path, kind, str(path), HEAD_BYTES)
    lines = data.split(b"\n")
    if not at_end:
        lines = lines[:-1]  # the last one may be cut
    yield from enumerate(lines, start=1)


def _lines(path: Path, name: str) -> Iterator[tuple[int, bytes]]:
    with open(path, "rb", buffering=READ_BUFFER_BYTES) as handle:
        yield from bounded_lines(handle, name)


def _events(
    path: Path, name: str, wanted: Callable[[int, bytes], bool]
) -> Iterator[tuple[int, dict[str, Any] | LogRecordError]]:
    """The JSON objects of the lines ``wanted`` says may matter (the others are not parsed)."""
    for line, raw in _lines(path, name):
        if wanted(line, raw):
            event = _parsed(raw, name, line)
            if event is not None:
                yield line, event


def _parsed(raw: bytes, name: str, line: int) -> dict[str, Any] | LogRecordError | None:
    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        if raw.isspace():
            return None
        return LogRecordError(name, line, "<line>", f"invalid JSON: {error}")
    return event if isinstance(event, dict) else None


def _text(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise RecordFieldError(path, f"expected a string, got {type(value).__name__}")
    return value


# --- Claude Code -------------------------------------------------------------------------------


def claude_project(path: Path) -> str:
    """The project folder under ``projects/`` (Claude Code names it after the working
    directory); a sub-agent file's is its session's."""
    parts = path.parts
    if "projects" in parts:
        index = len(parts) - 1 - parts[::-1].index("projects")
        if index + 2 < len(parts):
            return parts[index + 1]
    parent = path.parent
    if parent.name == "subagents":
        parent = parent.parent.parent
    return parent.name


@dataclass(slots=True)
class _Lineage:
    key: str
    root: str | None = None
    awaiting_root: bool = False  # the conversation restarted: its next user line is its root
    event: str | None = None  # "compacted", "restarted": said on its next request
    # When its latest user line (a prompt, tool results) was written, i.e. when its next
    # request was sent (docs/clients.md, "When a request was sent").
    sent_at: float | None = None
    # The working directory of the prompt that opened the lineage's latest turn, and of a
    # prompt since whose turn has not started yet (its first response not seen): a turn
    # whose prompt's directory differs has its environment context rebuilt (docs/clients.md).
    turn_cwd: str | None = None
    prompt_cwd: str | None = None
    # A prompt opened a new turn whose first response has not been seen yet: that response
    # no longer sends the thinking of earlier turns (docs/clients.md).
    prompted: bool = False


@dataclass(slots=True)
class _Response:
    """A response whose lines may still come: its first line, time and latest usage."""

    line: int
    usage_line: int
    message_id: str
    model: str
    timestamp: float | None
    lineage: _Lineage
    event: str | None
    root: str | None
    session: str
    version: str | None
    usage: dict[str, Any]
    provider: str
    directory_change: tuple[str, str] | None = None  # (before, now) at a new turn's prompt
    user_turn: bool = False  # the first response after a prompt that opened a new turn
    thought: bool = False  # one of its lines carried a thinking block


class _ClaudeFile:
    """The state of one transcript's reading: lineages by key, line uuid -> lineage key."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lineages: dict[str, _Lineage] = {}
        self.lineage_of: dict[str, str] = {}
        self.awaiting = 0  # lineages waiting for their root after a compaction
        self.names: set[str] = set()  # the message ids its responses show in reports
        # The time of the latest user line not parsed (a main-chain or sub-agent file's tool
        # results and prompts: sidechain lines are parsed), and the errors met reading it.
        self.unparsed_sent_at: float | None = None
        self.errors: list[LogRecordError] = []

    def note_user_line(self, line: int, raw: bytes) -> None:
        """Keep the time of a user line that is not parsed. Claude Code writes ``uuid`` then
        ``timestamp`` after the message, found without parsing; a line written otherwise
        (an older or edited file) is parsed for it."""
        found = _USER_TIME.search(raw)
        written: Any = None
        if found is not None:
            written = found.group(1).decode("utf-8", "replace")
        else:
            event = _parsed(raw, self.name, line)
            if isinstance(event, LogRecordError):
                self.errors.append(event)
                return
            if event is None or event.get("type") != "user":
                return  # a progress line quoting a user message: not a user line
            written = event.get("timestamp")
        if written is None:
            return  # a line without a time: the response's own time is used
        try:
            self.unparsed_sent_at = iso_seconds(written, "timestamp")
        except RecordFieldError as error:
            self.errors.append(LogRecordError(self.name, line, error.field, error.reason))

    def lineage(self, event: dict[str, Any]) -> _Lineage | None:
        """The lineage a message line belongs to (None for other lines; a compaction
        boundary or a main-chain user line without a parent restarts its conversation)."""
        kind = event.get("type")
        uuid, parent = event.get("uuid"), event.get("parentUuid")
        boundary = kind == "system" and event.get("subtype") == "compact_boundary"
        if kind not in ("user", "assistant") and not boundary:
            if isinstance(uuid, str) and isinstance(parent, str) and parent in self.lineage_of:
                self.lineage_of[uuid] = self.lineage_of[parent]
            return None
        session = _text(event.get("sessionId"), "sessionId")
        agent = event.get("agentId")
        if isinstance(agent, str) and agent:
            key = f"{session}/agent-{agent}"
        elif event.get("isSidechain") is True:
            if isinstance(parent, str) and parent in self.lineage_of:
                key = self.lineage_of[parent]
            else:
                key = f"{session}/sidechain-{str(uuid)[:8]}"
        else:
            key = session
        if isinstance(uuid, str):
            self.lineage_of[uuid] = key
        lineage = self.lineages.get(key)
        if lineage is None:
            lineage = self.lineages[key] = _Lineage(key)
            if kind == "user":  # its root is this line (one opened by a response has none)
                self._await(lineage)
        elif boundary or (parent is None and kind == "user" and key == session):
            # Before ``compact_boundary`` lines, a compaction's summary was a user line without
            # a parent marked ``isCompactSummary`` (docs/clients.md, "Format variants").
            compacted = boundary or event.get("isCompactSummary") is True
            lineage.event = "compacted" if compacted else "restarted"
            lineage.root = None
            self._await(lineage)
        if kind == "user" and lineage.awaiting_root:
            message = event.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            lineage.root = None if content is None else fingerprint(content)
            lineage.awaiting_root = False
            self.awaiting -= 1
        return None if boundary else lineage

    def _await(self, lineage: _Lineage) -> None:
        """The lineage's next user line is its root (its first message)."""
        if not lineage.awaiting_root:
            lineage.awaiting_root = True
            self.awaiting += 1


# A user line's own time, where Claude Code writes it: right after its ``uuid``.
_USER_TIME = re.compile(rb'"uuid":"[^"]{1,80}","timestamp":"([^"]{1,64})"')


def _claude_wanted(line: int, raw: bytes, state: _ClaudeFile) -> bool:
    """Whether a line can bill or change a lineage: a response, a compaction boundary, a
    sidechain line, a line without a parent, or a user line that gives a lineage its root
    (the file's first, or the first after a compaction). ``parentUuid``, ``isSidechain`` and
    ``agentId`` are read where they first occur: Claude Code writes them before the message,
    so the search stops within the first bytes of a long line. The byte searches run first:
    most lines (tool results, progress) fail every test, and each test is one C call."""
    if b'"usage"' in raw or b"compact_boundary" in raw:
        return True
    user_line = b'"type":"user"' in raw or b'"type": "user"' in raw
    if user_line and b'"tool_result"' not in raw:
        return True  # a prompt (its working directory opens a turn; tool results do not)
    parent = raw.find(b'"parentUuid"')
    if parent >= 0 and _value_is(raw, b'"parentUuid"', b"null", parent):
        return True
    sidechain = raw.find(b'"isSidechain"')
    if sidechain >= 0 and _value_is(raw, b'"isSidechain"', b"true", sidechain):
        # A sub-agent's line is its agent's lineage whatever its parent: only an older
        # sidechain, in its session's file, needs its parent links followed.
        head = raw.find(b'"message"')
        if raw.find(b'"agentId"', 0, head if head >= 0 else len(raw)) < 0:
            return True
    if (bool(state.awaiting) or not state.lineages or parent < 0) and b'"user"' in raw:
        return True
    if user_line:
        # Not parsed for its content, but its time is when the next request left.
        state.note_user_line(line, raw)
    return False


def _value_is(raw: bytes, key: bytes, value: bytes, at: int | None = None) -> bool:
    """Whether the first ``key`` of a JSON line holds ``value`` (a literal: true, null)."""
    at = raw.find(key) if at is None else at
    if at < 0:
        return False
    end = at + len(key)
    if raw.startswith(b":", end):  # as Claude Code writes it: no space (one C call each)
        return raw.startswith(value, end + 1) or (raw[end + 1 : end + 8].lstrip().startswith(value))
    rest = raw[end : end + 8].lstrip()
    return rest.startswith(b":") and rest[1:].lstrip().startswith(value)


@dataclass(frozen=True, slots=True)
class ModelDefaults:
    """The model and provider given for the requests whose lines name none (``--model``,
    ``--provider``: ``LogInput.default_model``/``default_provider``)."""

    model: str | None = None
    provider: str | None = None


NO_DEFAULTS = ModelDefaults()
NO_MODEL = "no model on this line; give --model"


def claude_requests(
    path: Path,
    name: str,
    seen: set[str],
    skipped: Counter[str],
    defaults: ModelDefaults = NO_DEFAULTS,
    *,
    project: str | None = None,
) -> Iterator[SessionRequest | LogRecordError]:
    """Every request of a transcript; ``project`` names its project where ``path`` is not
    where the transcript lies (an inflated copy of a compressed one)."""
    project = claude_project(path) if project is None else project
    state = _ClaudeFile(name)
    responses: dict[str, _Response] = {}  # message id -> its response, in first-line order
    # Tool results, progress, snapshots: nothing billed, no lineage changed, not parsed.
    for line, event in _events(path, name, lambda line, raw: _claude_wanted(line, raw, state)):
        if isinstance(event, LogRecordError):
            yield event
            continue
        if state.errors:
            yield from state.errors
            state.errors.clear()
        try:
            lineage = state.lineage(event)
            if lineage is not None and event.get("type") == "assistant":
                _claude_line(event, line, lineage, state, responses, seen, skipped, defaults)
            elif lineage is not None and event.get("type") == "user":
                written = event.get("timestamp")
                if written is not None:
                    lineage.sent_at = iso_seconds(written, "timestamp")
                if opens_turn(event):
                    cwd = event.get("cwd")
                    lineage.prompt_cwd = cwd if isinstance(cwd, str) and cwd else None
                    lineage.prompted = True
        except RecordFieldError as error:
            yield LogRecordError(name, line, error.field, error.reason)
        except LimitExceededError as error:  # a claimed count over its limit stops the read
            raise error.located(name, line) from None
    yield from state.errors
    for response in responses.values():
        try:
            built = _claude_requests(response, name, project)
        except RecordFieldError as error:
            yield LogRecordError(name, response.usage_line, error.field, error.reason)
            continue
        except LimitExceededError as error:
            raise error.located(name, response.usage_line) from None
        yield from built


def _claude_line(
    event: dict[str, Any],
    line: int,
    lineage: _Lineage,
    state: _ClaudeFile,
    responses: dict[str, _Response],
    seen: set[str],
    skipped: Counter[str],
    defaults: ModelDefaults,
) -> None:
    message = require_dict(event.get("message"), "message")
    usage = message.get("usage")
    model = message.get("model")
    if model == SYNTHETIC_MODEL:
        skipped["Claude Code's own <synthetic> message (no API call)"] += 1
        return
    if usage is None:
        return
    usage = require_dict(usage, "message.usage")
    message_id = _message_id(message, event, line)
    key = _response_key(message_id, event)
    earlier = responses.get(key)
    thought = has_thinking(message.get("content"))
    if earlier is not None:
        earlier.usage, earlier.usage_line = usage, line  # a later line: the final output
        earlier.thought = earlier.thought or thought
        skipped[REPEATED_RESPONSE] += 1
        return
    if key in seen:
        skipped[REPEATED_RESPONSE] += 1  # a resumed session: counted in an earlier file
        return
    seen.add(key)
    if message_id in state.names:
        # Another response of this file has the same message id (a publisher replaced the
        # ids, e.g. by "REDACTED"): its request id tells the two apart in reports too.
        message_id = f"{message_id}/{event.get('requestId')}"
    state.names.add(message_id)
    written = event.get("timestamp")
    written_at = None if written is None else iso_seconds(written, "timestamp")
    timestamp = request_sent_at(_last_user_time(lineage, state), written_at)
    version = event.get("version")
    if model is None or model == "":
        if defaults.model is None:
            raise RecordFieldError("message.model", NO_MODEL)
        model, provider = defaults.model, defaults.provider
    else:
        model, provider = _text(model, "message.model"), None
    provider = _claude_provider(model, provider)
    if usage.get("speed") == FAST:  # priced apart, cached apart (docs/clients.md)
        model = f"{model}{FAST_MODE_SUFFIX}"
    change = None
    if lineage.prompt_cwd is not None:  # the first response of a new turn
        before, lineage.turn_cwd = lineage.turn_cwd, lineage.prompt_cwd
        if before is not None and before != lineage.turn_cwd:
            change = (before, lineage.turn_cwd)
        lineage.prompt_cwd = None
    responses[key] = _Response(
        line=line,
        usage_line=line,
        message_id=message_id,
        model=model,
        timestamp=timestamp,
        lineage=lineage,
        event=lineage.event,
        root=lineage.root,
        session=_text(event.get("sessionId"), "sessionId"),
        version=version[:40] if isinstance(version, str) else None,
        usage=usage,
        provider=provider,
        directory_change=change,
        user_turn=lineage.prompted,
        thought=thought,
    )
    lineage.event = None
    lineage.prompted = False


def _last_user_time(lineage: _Lineage, state: _ClaudeFile) -> float | None:
    """The time of a lineage's latest user line (the prompt or tool results a response
    answers), taken once: the request was sent then, not when its response's first line was
    written, minutes later for a long one, so idle gaps (and cache expiry) are measured from
    the wrong moment otherwise (docs/clients.md, "When a request was sent"; ``request_sent_at``
    decides between the two). The user lines that are not parsed belong to the file's main
    chain (or its one sub-agent): sidechain lines are parsed."""
    sent = lineage.sent_at
    if "/sidechain-" not in lineage.key and state.unparsed_sent_at is not None:
        sent = state.unparsed_sent_at if sent is None else max(sent, state.unparsed_sent_at)
        state.unparsed_sent_at = None
    lineage.sent_at = None
    return sent


def _claude_provider(model: str, given: str | None = None) -> str:
    """Who billed a Claude Code request, told by the model id's form: Amazon Bedrock's
    (``us.anthropic.claude-...-v1:0``, an inference profile ARN), Google Vertex AI's
    (``claude-...@20250929``), else the provider ``given`` for a line naming no model
    (``--provider``), else Anthropic's API (docs/clients.md, "Format variants")."""
    if model.startswith("arn:aws:bedrock") or "anthropic." in model:
        return "bedrock"
    if "@" in model:
        return "vertex"
    return given or "anthropic"


def _message_id(message: dict[str, Any], event: dict[str, Any], line: int) -> str:
    """What names a response across its lines and files: ``message.id``, else the line's
    ``requestId`` (both shared by the lines of one response), else the line's ``uuid`` (a
    response of one line)."""
    given = message.get("id")
    if given is not None:
        return _text(given, "message.id")
    for value in (event.get("requestId"), event.get("uuid")):
        if isinstance(value, str) and value:
            return value
    return f"{event.get('sessionId')}:{line}"


def _response_key(message_id: str, event: dict[str, Any]) -> str:
    """What tells a response from every other, across its lines and files: its message id
    with the line's ``requestId`` where there is one (as ccusage keys them). The lines of
    one response, and the copies a resumed session makes of them, share both; two responses
    whose ids a publisher replaced by one placeholder ("REDACTED") still differ by request
    (docs/clients.md, "Format variants")."""
    request = event.get("requestId")
    if isinstance(request, str) and request and request != message_id:
        return f"{message_id}\x00{request}"
    return message_id


def _claude_requests(response: _Response, name: str, project: str) -> list[SessionRequest]:
    """A response's request, after the compaction the API ran inside it, if any: an entry
    of ``usage.iterations`` of type ``compaction`` is a sampling of its own, billed, and not
    in the top-level counts (platform.claude.com, "Compaction"; docs/clients.md). It reads
    the session's history (a compaction lineage, as Claude Code's own compaction agent),
    and the response then continues from the summary: its history was rewritten."""
    built: list[SessionRequest] = []
    iterations = response.usage.get("iterations")
    for index, iteration in enumerate(iterations if isinstance(iterations, list) else []):
        if not isinstance(iteration, dict) or iteration.get("type") != "compaction":
            continue
        where = f"message.usage.iterations[{index}]"
        key = f"{response.lineage.key}{COMPACTION_MARK}-{response.message_id}"
        built.append(_claude_request(response, name, project, iteration, where, key, index, None))
    if not built:
        return [
            _claude_request(
                response, name, project, response.usage, "message.usage", None, None, response.event
            )
        ]
    # The rest is the response's own sampling (its iterations summed, as the bill does).
    assert isinstance(iterations, list)
    rest = [
        item
        for item in iterations
        if not (isinstance(item, dict) and item.get("type") == "compaction")
    ]
    counts = {**response.usage, "iterations": rest}
    main = _claude_request(
        response, name, project, counts, "message.usage", None, None, "compacted"
    )
    return [*built, main]


def _claude_request(
    response: _Response,
    name: str,
    project: str,
    counts: dict[str, Any],
    where: str,
    lineage: str | None,
    iteration: int | None,
    event: str | None,
) -> SessionRequest:
    usage = normalize_usage(counts, convention="anthropic", path=where)
    hour = usage.cache_write_by_ttl.get(TTL_1H, 0)
    if usage.cache_write_tokens is not None and hour > usage.cache_write_tokens:
        raise RecordFieldError(
            f"{where}.cache_creation",
            f"1h {hour} written exceed cache_creation_input_tokens {usage.cache_write_tokens}",
        )
    suffix = "" if iteration is None else f"#compaction-{iteration}"
    return make_request(
        name,
        response.line,
        response.message_id + suffix,
        lineage or response.lineage.key,
        response.model,
        response.timestamp,
        usage,
        root=None if lineage else response.root,
        event=event,
        provider=response.provider,
        client_version=response.version,
        client=CLAUDE_CODE,
        session=response.session,
        project=project,
        directory_change=None if lineage else response.directory_change,
        user_turn=lineage is None and response.user_turn,
        thought=response.thought,
    )
