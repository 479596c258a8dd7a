"""Expand a layout into a synthetic prompt log: one OpenAI-chat wrapper record per request.

Session ``s`` starts at ``start + s * session_interval``; its turn ``t`` arrives
``t * turn_interval`` later. Turn ``t`` sends the system prompt, the tools, the opening
messages, every message of turns ``0..t-1`` (the history, rendered once with that turn's own
variables, exactly as an agent re-sends it), then this turn's messages up to its last user
message. Records come out in arrival order, ties broken by session then turn.

Variables visible to every placeholder: the session's and the turn's sample values, and
``now`` (ISO 8601, seconds, UTC), ``now_epoch``, ``date``, ``request_id``, ``session_id``,
``session_index``, ``turn_index``, ``request_index``.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from cachecast.layouts.sandbox import render_budget
from cachecast.layouts.spec import Layout, render_value


@dataclass(frozen=True, slots=True)
class SyntheticRequest:
    request_id: str
    session: str
    timestamp: float
    scope: str | None
    body: dict[str, Any]  # an OpenAI Chat Completions request body
    output_tokens: int


def expand(
    layout: Layout, *, model: str | None = None, provider: str | None = None
) -> list[SyntheticRequest]:
    """Every request the layout's arrival pattern produces, in arrival order. All its
    templates share one budget of output and time (layouts.sandbox, docs/limits.md)."""
    with render_budget():
        return _expand(layout, model=model, provider=provider)


def _expand(layout: Layout, *, model: str | None, provider: str | None) -> list[SyntheticRequest]:
    arrival = layout.arrival
    anthropic = (provider or layout.provider or "").lower() == "anthropic"
    requests: list[SyntheticRequest] = []
    for session_index in range(arrival.sessions):
        session_values = layout.session_values[session_index % len(layout.session_values)]
        history: list[dict[str, Any]] = []
        session_id = f"s{session_index:04d}"
        for turn_index in range(arrival.turns_per_session):
            request_index = session_index * arrival.turns_per_session + turn_index
            turn_values = layout.turn_values[request_index % len(layout.turn_values)]
            offset = (
                session_index * arrival.session_interval_seconds
                + turn_index * arrival.turn_interval_seconds
            )
            moment = arrival.start + dt.timedelta(seconds=offset)
            request_id = f"{session_id}-t{turn_index:03d}"
            variables: dict[str, Any] = {
                **session_values,
                **turn_values,
                "now": moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "now_epoch": int(moment.timestamp()),
                "date": moment.astimezone(dt.UTC).date().isoformat(),
                "request_id": request_id,
                "session_id": session_id,
                "session_index": session_index,
                "turn_index": turn_index,
                "request_index": request_index,
            }
            turn_messages = [
                render_value(message, variables, where=f"turn[{index}]", file=layout.source)
                for index, message in enumerate(layout.turn)
            ]
            last_user = max(i for i, m in enumerate(turn_messages) if m["role"] == "user")
            messages: list[dict[str, Any]] = []
            system: str | None = None
            if layout.system is not None:
                system = render_value(layout.system, variables, where="system", file=layout.source)
                if not anthropic:
                    messages.append({"role": "system", "content": system})
            messages.extend(
                render_value(message, variables, where=f"messages[{index}]", file=layout.source)
                for index, message in enumerate(layout.messages)
            )
            messages.extend(history)
            messages.extend(turn_messages[: last_user + 1])
            history.extend(turn_messages)

            body: dict[str, Any] = {"messages": messages}
            if anthropic and system is not None:
                body["system"] = system
            if model or layout.model:
                body["model"] = model or layout.model
            tools = [
                render_value(tool, variables, where=f"tools[{index}]", file=layout.source)
                for index, tool in enumerate(layout.tools)
            ]
            if layout.tool_order == "shuffle":
                # A tool list built from a set or dict comes out in a different order per
                # process; a seeded shuffle per request reproduces that, deterministically:
                # seeded by the file's name, not its path, so that the same layout gives the
                # same requests wherever it sits (a checkout, a CI runner's temporary folder).
                random.Random(f"{PurePath(layout.source).name}:{request_index}").shuffle(tools)
            if tools:
                body["tools"] = tools
            add_breakpoints(body, layout.breakpoints)
            scope = None
            if layout.scope is not None:
                scope = render_value(layout.scope, variables, where="scope", file=layout.source)
            requests.append(
                SyntheticRequest(
                    request_id=request_id,
                    session=session_id,
                    timestamp=moment.timestamp(),
                    scope=scope,
                    body=body,
                    output_tokens=arrival.output_tokens,
                )
            )
    requests.sort(key=lambda request: request.timestamp)  # stable: session, turn order kept
    return requests


def _marker(ttl: str | None) -> dict[str, str]:
    return {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}


def _openai_marker(ttl: str | None) -> dict[str, str]:
    return {"mode": "explicit", **({"ttl": ttl} if ttl else {})}


def _as_blocks(content: Any, ttl: str | None, *, openai: bool = False) -> Any:
    """Content with a breakpoint on its last text block: Anthropic's ``cache_control``, or
    (``openai``) OpenAI's ``prompt_cache_breakpoint`` (docs/contracts.md)."""
    key, marker = (
        ("prompt_cache_breakpoint", _openai_marker(ttl))
        if openai
        else ("cache_control", _marker(ttl))
    )
    if isinstance(content, str):
        return [{"type": "text", "text": content, key: marker}]
    if isinstance(content, list) and content and isinstance(content[-1], dict):
        return [*content[:-1], {**content[-1], key: marker}]
    return content  # None (an assistant turn of tool calls only): nothing to mark


def add_breakpoints(
    body: dict[str, Any],
    breakpoints: Sequence[tuple[str, str | None]],
    *,
    openai: bool = False,
) -> None:
    """Put breakpoint markers where ``breakpoints`` say, in place: Anthropic's
    ``cache_control`` (a layout's requests), or with ``openai`` OpenAI's
    ``prompt_cache_breakpoint`` on content parts, so that a logged Chat Completions request
    stays one (a ``cache_control`` marker would make it read as an Anthropic body, where an
    assistant turn's ``content: null`` is not valid). OpenAI takes no breakpoint on an
    assistant message's content: a last message from the assistant keeps none."""
    messages = body.get("messages") or []
    for place, ttl in breakpoints:
        if place == "tools" and body.get("tools") and not openai:
            body["tools"][-1] = {**body["tools"][-1], "cache_control": _marker(ttl)}
        elif place == "system":
            if "system" in body:
                body["system"] = _as_blocks(body["system"], ttl)
            elif messages and messages[0].get("role") in ("system", "developer"):
                messages[0] = {
                    **messages[0],
                    "content": _as_blocks(messages[0].get("content"), ttl, openai=openai),
                }
        elif place == "last_message" and messages:
            last = messages[-1]
            if openai and last.get("role") == "assistant":
                continue
            messages[-1] = {**last, "content": _as_blocks(last.get("content"), ttl, openai=openai)}


def to_record(request: SyntheticRequest, *, provider: str | None) -> dict[str, Any]:
    """The log record the tokenizers read for one synthetic request."""
    record: dict[str, Any] = {
        "request_id": request.request_id,
        "timestamp": request.timestamp,
        "session": request.session,
        "request": request.body,
        "output_tokens": request.output_tokens,
    }
    if provider is not None:
        record["provider"] = provider
    if request.scope is not None:
        record["scope"] = request.scope
    return record


def iter_records(
    requests: list[SyntheticRequest], *, provider: str | None
) -> Iterator[dict[str, Any]]:
    for request in requests:
        yield to_record(request, provider=provider)
