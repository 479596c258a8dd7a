"""What coding agents print when run headless (in CI, from scripts): one parser, read as
session requests by ``sessions.headless`` and as canonical records by :func:`read`
(docs/clients.md, "Headless output"; docs/log-formats.md).

* ``claude-stream-json``: ``claude -p --output-format stream-json --verbose``. JSON lines of
  the Agent SDK's messages: ``system`` (subtype ``init``: ``session_id``, ``model``, ``cwd``,
  ``tools``, ``claude_code_version``), ``assistant`` (``message``: one API response, with
  ``id``, ``model``, ``usage``; one line per content block, each repeating the id and usage,
  as in transcripts: counted once, with the usage of its last line), ``user`` (tool results),
  ``stream_event`` (``--include-partial-messages``), and one final ``result`` (the run's
  ``total_cost_usd``, aggregate ``usage``, ``modelUsage`` per model, ``num_turns``). A
  response of a sub-agent carries the ``parent_tool_use_id`` of the Task call that started it:
  its lineage is ``<session>/agent-<parent_tool_use_id>``. A ``system`` message of subtype
  ``compact_boundary`` marks the next response ``compacted`` (its history was replaced).
* ``claude-stream-json`` too: the JSON array of every message that ``--output-format json``
  prints under ``--verbose`` (:func:`claude_events`).
* ``claude-json``: ``claude -p --output-format json``, the ``result`` message alone. Its
  ``modelUsage`` gives each model's tokens over the run: one unit ``run`` per model (no
  request is known apart; nothing is split).
* ``codex-exec``: ``codex exec --json``. JSON lines ``thread.started`` (``thread_id``),
  ``turn.started``, ``item.*``, ``turn.completed`` (``usage``: ``input_tokens``,
  ``cached_input_tokens``, ``output_tokens``: every request of the turn summed: one unit
  ``turn``), ``turn.failed``, ``error``. No model is named. Before that protocol (codex 0.3x
  and earlier) it printed its configuration (``model``, ``provider``, ``sandbox``,
  ``approval``...), then ``{"prompt"}``, then the core's events ``{"id", "msg"}``, among them
  ``token_count`` after every response (the counts flat, later under
  ``info.last_token_usage``): one unit ``request`` each.

None of them carries a time: the units are undated (docs/clients.md says how they are
priced).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from cachecast.core.errors import RecordFieldError
from cachecast.logs.canonical import make_record, require_dict
from cachecast.logs.errors import LogRecordError
from cachecast.logs.headless_names import CLAUDE_RESULT, CODEX_EXEC, REQUEST, RUN, TURN
from cachecast.logs.stream import Item, LogStream, json_lines, load_document
from cachecast.logs.usage import normalize_usage, to_canonical

CLAUDE_TYPES = frozenset({"system", "assistant", "user", "result", "stream_event"})
CODEX_EXEC_TYPES = frozenset(
    {
        "thread.started",
        "turn.started",
        "turn.completed",
        "turn.failed",
        "item.started",
        "item.updated",
        "item.completed",
    }
)
SYNTHETIC_MODEL = "<synthetic>"
RESULT_LINE = "Claude Code result message (the run's totals: cross-checked, not billed)"
REPEATED = "Claude Code line repeating a response (counted once per message.id)"
FAILED_TURN = "Codex turn.failed (no usage stated)"
REPEATED_COUNT = "Codex token_count repeating the previous one, or of rate limits only"


def claude_line(record: dict[str, Any]) -> bool:
    """A message of the Agent SDK's stream (its ``session_id`` in snake case: a transcript's
    lines say ``sessionId``)."""
    return record.get("type") in CLAUDE_TYPES and "session_id" in record


def wrapped_messages(record: dict[str, Any]) -> tuple[str, list[Any]] | None:
    """``(key, messages)`` where ``record`` is not a message but keeps the Agent SDK's
    messages in a list under one key (a test harness's recording of a run:
    ``{prompt, model, events: [...], recordedAt}``), else None."""
    if record.get("type") in CLAUDE_TYPES:
        return None
    for key, value in record.items():
        if (
            isinstance(value, list)
            and value
            and any(isinstance(item, dict) and claude_line(item) for item in value[:8])
        ):
            return str(key), value
    return None


def claude_result(record: dict[str, Any]) -> bool:
    return record.get("type") == "result" and "session_id" in record


def codex_exec_line(record: dict[str, Any]) -> bool:
    """A line of ``codex exec --json``: a thread event, or (the older protocol) an event
    ``{"id", "msg": {"type"}}`` or the configuration summary it printed first."""
    if record.get("type") in CODEX_EXEC_TYPES:
        return True
    msg = record.get("msg")
    if "id" in record and isinstance(msg, dict) and isinstance(msg.get("type"), str):
        return True
    return "type" not in record and {"model", "sandbox", "approval"} <= record.keys()


def stream_fits(records: list[dict[str, Any]]) -> str | None:
    if any(claude_line(r) for r in records) and not claude_result(records[0]):
        return None
    if len(records) == 1 and wrapped_messages(records[0]) is not None:
        return None  # one document keeping the messages under a key
    return "no Agent SDK message {type: system/assistant/user/result, session_id} before a result"


def result_fits(records: list[dict[str, Any]]) -> str | None:
    if records and claude_result(records[0]):
        return None
    return "not a Claude Code result message {type: result, session_id, usage, modelUsage}"


def codex_fits(records: list[dict[str, Any]]) -> str | None:
    if any(codex_exec_line(r) for r in records):
        return None
    return "no codex exec --json event (thread.started, turn.completed, {id, msg})"


@dataclass(frozen=True, slots=True)
class Unit:
    """One usage the output states: a response (``request``), a turn, or a model's run."""

    line: int
    unit: str
    request_id: str
    session: str
    lineage: str
    model: str | None
    usage: dict[str, Any]
    convention: str  # ``logs.usage`` convention of ``usage``
    where: str  # the field path of ``usage`` in its line
    version: str | None = None
    project: str = ""
    provider: str | None = None
    event: str | None = None  # "compacted": the history was replaced before this request


@dataclass(slots=True)
class Statement:
    """What a Claude Code result message states about its run (the client's own figures)."""

    line: int
    session: str
    total_cost_usd: str | None  # as written (a JSON number's text: Decimal-exact)
    num_turns: int | None
    usage: dict[str, Any] | None
    model_usage: dict[str, dict[str, Any]]


def units(
    path: Path, source: str, format: str, skipped: Counter[str]
) -> Iterator[Unit | LogRecordError]:
    """Every usage unit of a headless output file of ``format``, errors in place."""
    if format == CODEX_EXEC:
        yield from _codex(path, source, skipped)
    elif format == CLAUDE_RESULT:
        yield from _claude_result(path, source, skipped)
    else:
        yield from _claude_stream(path, source, skipped)


def statements(path: Path, source: str) -> list[Statement]:
    """The result messages of a Claude Code headless output (one per run)."""
    found = []
    for line, _, event in claude_events(path, source):
        if isinstance(event, dict) and claude_result(event):
            try:
                found.append(_statement(line, event))
            except RecordFieldError:
                continue  # the unit reader reports the line
    return found


def claude_events(
    path: Path, source: str
) -> Iterator[tuple[int, str, dict[str, Any] | LogRecordError]]:
    """The messages of a Claude Code headless output with their line and the prefix of their
    field paths: JSON lines (``stream-json``, one-line ``json``), or one JSON document: the
    result object printed over several lines (``| jq .``), or the array of every message
    that ``--output-format json`` prints under ``--verbose`` (or the ``verbose`` setting;
    anthropics/claude-code#84784): line 1, each message named by its index (``[3].``); or
    a document keeping that array under one key (:func:`wrapped_messages`: ``events[3].``)."""
    with open(path, "rb") as handle:
        head = handle.read(1 << 16).lstrip()
    first = head.split(b"\n", 1)[0]
    if head.startswith(b"[") or (head.startswith(b"{") and not _parses(first)):
        document = load_document(path)
        wrapped = wrapped_messages(document) if isinstance(document, dict) else None
        items: list[Any]
        if wrapped is not None:
            key, items = wrapped
            prefixes = [f"{key}[{index}]." for index in range(len(items))]
        elif isinstance(document, list):
            items, prefixes = document, [f"[{index}]." for index in range(len(document))]
        else:
            items, prefixes = [document], [""]
        for prefix, item in zip(prefixes, items, strict=True):
            if isinstance(item, dict):
                yield 1, prefix, item
            else:
                yield 1, prefix, LogRecordError(source, 1, prefix or "<document>", "not a message")
        return
    for line, event in json_lines(path, source):
        yield line, "", event


def _parses(line: bytes) -> bool:
    try:
        return isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return False


def _statement(line: int, event: dict[str, Any]) -> Statement:
    cost = event.get("total_cost_usd")
    turns = event.get("num_turns")
    usage = event.get("usage")
    models = event.get("modelUsage")
    return Statement(
        line,
        str(event.get("session_id")),
        None if not _number(cost) else repr(cost),
        turns if isinstance(turns, int) and not isinstance(turns, bool) else None,
        usage if isinstance(usage, dict) else None,
        {m: u for m, u in models.items() if isinstance(u, dict)}
        if isinstance(models, dict)
        else {},
    )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _claude_stream(
    path: Path, source: str, skipped: Counter[str]
) -> Iterator[Unit | LogRecordError]:
    model: str | None = None
    version: str | None = None
    project = ""
    pending: dict[str, Unit] = {}  # message id -> its response, in first-line order
    compacted = False  # a compact_boundary since the previous response
    # --include-partial-messages: the raw stream's events. An assistant line states the
    # usage at message_start (output_tokens so far); the stream's message_delta has the
    # final, cumulative counts (docs/log-formats.md, "Streams"). Per lineage, the response
    # whose stream is open; per response, its final output count.
    streaming: dict[str, str] = {}
    final_output: dict[str, int] = {}
    for line, at, event in claude_events(path, source):
        if isinstance(event, LogRecordError):
            yield event
            continue
        kind = event.get("type")
        if kind == "system":
            if event.get("subtype") == "compact_boundary":  # SDKCompactBoundaryMessage
                compacted = True
            elif event.get("subtype") == "init":
                named = event.get("model")
                model = named if isinstance(named, str) and named else model
                cli = event.get("claude_code_version")
                version = cli[:40] if isinstance(cli, str) else version
                cwd = event.get("cwd")
                project = cwd if isinstance(cwd, str) else project
            continue
        if kind == "result":
            skipped[RESULT_LINE] += 1
            continue
        if kind == "stream_event":
            _follow_stream(event, source, streaming, final_output)
            continue
        if kind != "assistant":
            continue
        try:
            message = require_dict(event.get("message"), f"{at}message")
            usage = message.get("usage")
            named = message.get("model")
            if named == SYNTHETIC_MODEL:
                skipped["Claude Code's own <synthetic> message (no API call)"] += 1
                continue
            if usage is None:
                continue
            usage = require_dict(usage, f"{at}message.usage")
            if named is not None and not isinstance(named, str):
                raise RecordFieldError(f"{at}message.model", f"expected a string, got {named!r}")
            message_id = message.get("id")
            if not isinstance(message_id, str) or not message_id:
                message_id = f"{source}:{line}"
            session = str(event.get("session_id") or source)
            parent = event.get("parent_tool_use_id")
            lineage = f"{session}/agent-{parent}" if isinstance(parent, str) and parent else session
        except RecordFieldError as exc:
            yield LogRecordError(source, line, exc.field, exc.reason)
            continue
        where = f"{at}message.usage"
        earlier = pending.get(message_id)
        if earlier is not None:  # a later block of the same response: its usage so far
            pending[message_id] = replace(
                earlier, usage=usage, where=where, version=version, project=project
            )
            skipped[REPEATED] += 1
            continue
        pending[message_id] = Unit(
            line=line,
            unit=REQUEST,
            request_id=message_id,
            session=session,
            lineage=lineage,
            model=named or model,
            usage=usage,
            convention="anthropic",
            where=where,
            version=version,
            project=project,
            event="compacted" if compacted else None,
        )
        compacted = False
    for message_id, unit in pending.items():
        output = final_output.get(message_id)
        if output is not None and output != unit.usage.get("output_tokens"):
            unit = replace(unit, usage={**unit.usage, "output_tokens": output})
        yield unit


def _follow_stream(
    event: dict[str, Any], source: str, streaming: dict[str, str], final_output: dict[str, int]
) -> None:
    """Note a ``stream_event``'s response id (``message_start``) or final output count
    (``message_delta``) for the response its lineage is streaming."""
    raw = event.get("event")
    if not isinstance(raw, dict):
        return
    session = str(event.get("session_id") or source)
    parent = event.get("parent_tool_use_id")
    lineage = f"{session}/agent-{parent}" if isinstance(parent, str) and parent else session
    if raw.get("type") == "message_start":
        message = raw.get("message")
        message_id = message.get("id") if isinstance(message, dict) else None
        if isinstance(message_id, str) and message_id:
            streaming[lineage] = message_id
    elif raw.get("type") == "message_delta" and lineage in streaming:
        usage = raw.get("usage")
        output = usage.get("output_tokens") if isinstance(usage, dict) else None
        if isinstance(output, int) and not isinstance(output, bool) and output >= 0:
            final_output[streaming[lineage]] = output


def _claude_result(
    path: Path, source: str, skipped: Counter[str]
) -> Iterator[Unit | LogRecordError]:
    for line, _, event in claude_events(path, source):
        if isinstance(event, LogRecordError):
            yield event
            continue
        if not claude_result(event):
            skipped["line other than a Claude Code result message"] += 1
            continue
        statement = _statement(line, event)
        if not statement.model_usage:
            # Older versions state the run's usage alone, no model: --model names it.
            if statement.usage is None:
                yield LogRecordError(source, line, "usage", "the result states no usage")
                continue
            yield _run_unit(statement, statement.session, None, statement.usage, "usage")
            continue
        for name, counts in statement.model_usage.items():
            usage = _model_usage(counts, statement, len(statement.model_usage))
            yield _run_unit(
                statement, f"{statement.session}:{name}", name, usage, f"modelUsage.{name}"
            )


def _run_unit(
    statement: Statement, request_id: str, model: str | None, usage: dict[str, Any], where: str
) -> Unit:
    """One model's usage over a Claude Code run (a result message), in the Messages API's
    names: the run's session is its lineage."""
    return Unit(
        line=statement.line,
        unit=RUN,
        request_id=request_id,
        session=statement.session,
        lineage=statement.session,
        model=model,
        usage=usage,
        convention="anthropic",
        where=where,
    )


def _model_usage(counts: dict[str, Any], statement: Statement, models: int) -> dict[str, Any]:
    """A ``modelUsage`` entry in the Messages API's names. It gives no TTL split of its
    writes: where the run used one model and the aggregate ``usage`` states the same writes
    with their ``cache_creation`` split, that split is kept; else the writes are 5-minute
    ones, the API's default (docs/clients.md, "Headless output")."""
    usage: dict[str, Any] = {
        "input_tokens": counts.get("inputTokens", 0),
        "output_tokens": counts.get("outputTokens", 0),
        "cache_read_input_tokens": counts.get("cacheReadInputTokens", 0),
        "cache_creation_input_tokens": counts.get("cacheCreationInputTokens", 0),
    }
    whole = statement.usage or {}
    split = whole.get("cache_creation")
    same = whole.get("cache_creation_input_tokens") == usage["cache_creation_input_tokens"]
    if models == 1 and same and isinstance(split, dict):
        usage["cache_creation"] = split
    return usage


def _codex(path: Path, source: str, skipped: Counter[str]) -> Iterator[Unit | LogRecordError]:
    session = path.stem
    model: str | None = None
    provider: str | None = None
    project = ""
    turns = 0
    total: Any = None  # the older protocol's running total, to tell a repeated count
    for line, event in json_lines(path, source):
        if isinstance(event, LogRecordError):
            yield event
            continue
        kind = event.get("type")
        msg = event.get("msg")
        try:
            if kind == "thread.started":
                session = str(event.get("thread_id") or session)
            elif kind == "turn.completed":
                usage = require_dict(event.get("usage"), "usage")
                turns += 1
                context = _CodexContext(session, model, project, provider)
                yield context.unit(line, TURN, f"{session}:turn-{turns}", usage, "usage")
            elif kind == "turn.failed":
                skipped[FAILED_TURN] += 1
            elif kind is None and "sandbox" in event and isinstance(event.get("model"), str):
                model = event["model"]  # the older protocol's configuration summary
                named = event.get("provider")
                provider = named if isinstance(named, str) and named else provider
                cwd = event.get("workdir")
                project = cwd if isinstance(cwd, str) else project
            elif isinstance(msg, dict):
                context = _CodexContext(session, model, project, provider)
                found = _codex_event(msg, line, context, turns, total)
                if isinstance(found, tuple):
                    session, model = found
                elif found is None:
                    if msg.get("type") == "token_count":
                        skipped[REPEATED_COUNT] += 1
                else:
                    unit, total = found.unit, found.usage_total
                    turns += 1
                    yield unit
        except RecordFieldError as exc:
            yield LogRecordError(source, line, exc.field, exc.reason)


@dataclass(frozen=True, slots=True)
class _Counted:
    unit: Unit
    usage_total: Any


@dataclass(frozen=True, slots=True)
class _CodexContext:
    """What the lines before a Codex count said: its session (its lineage too), the
    configured model, the working directory and the provider."""

    session: str
    model: str | None
    project: str
    provider: str | None

    def unit(
        self,
        line: int,
        unit: str,
        request_id: str,
        usage: dict[str, Any],
        where: str,
        model: str | None = None,
    ) -> Unit:
        """A count of this session: ``model`` where the event names its own."""
        return Unit(
            line=line,
            unit=unit,
            request_id=request_id,
            session=self.session,
            lineage=self.session,
            model=model or self.model,
            usage=usage,
            convention="codex",
            where=where,
            project=self.project,
            provider=self.provider,
        )


def _codex_event(
    msg: dict[str, Any], line: int, context: _CodexContext, count: int, total: Any
) -> tuple[str, str | None] | _Counted | None:
    """An older-protocol event: the session and model it configures, a request's count,
    or None (nothing to count)."""
    session, model = context.session, context.model
    kind = msg.get("type")
    if kind == "session_configured":
        named = msg.get("model")
        return str(msg.get("session_id") or session), named if isinstance(named, str) else model
    if kind != "token_count":
        return None
    info = msg.get("info")
    if info is None and "input_tokens" in msg:  # the counts flat in the event
        counts = {k: v for k, v in msg.items() if k != "type"}
        return _Counted(context.unit(line, REQUEST, f"{session}:{count + 1}", counts, "msg"), None)
    if info is None:
        return None  # rate limits only
    info = require_dict(info, "msg.info")
    running = info.get("total_token_usage")
    if running is not None and running == total:
        return None
    last = require_dict(info.get("last_token_usage"), "msg.info.last_token_usage")
    named = info.get("model")
    own = named if isinstance(named, str) and named else None
    request_id = f"{session}:{count + 1}"
    where = "msg.info.last_token_usage"
    return _Counted(context.unit(line, REQUEST, request_id, last, where, model=own), running)


def read(stream: LogStream) -> Iterator[Item]:
    """Canonical records, one per unit, for the passes that read any log (``inspect`` and
    the session reports read the units through ``sessions.headless``). Their prompts are not
    in the output: each record states its usage only (``prompt_complete`` false)."""
    for unit in units(stream.path, stream.source, stream.format, stream.skipped):
        if isinstance(unit, LogRecordError):
            yield unit.line or 0, unit
            continue
        try:
            observed = normalize_usage(unit.usage, convention=unit.convention, path=unit.where)
        except RecordFieldError as exc:
            yield unit.line, stream.error(unit.line, exc.field, exc.reason)
            continue
        body: dict[str, Any] = {"messages": []}
        if unit.model:
            body["model"] = unit.model
        record = make_record(
            request=body,
            model=unit.model,
            provider=unit.provider if unit.model else None,
            request_id=unit.request_id,
            session=unit.lineage,
            prompt_complete=False,
        )
        record["observed"] = to_canonical(observed)
        record["usage_unit"] = unit.unit
        yield unit.line, record
