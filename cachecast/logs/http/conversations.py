"""Mistral's Conversations API (``POST /v1/conversations`` to start one, ``POST
/v1/conversations/{conversation_id}`` to append to it, ``.../restart`` to restart it from an
entry) read as the Chat Completions call each turn stands for (docs/log-formats.md,
"Recorded HTTP").

A request body (Mistral's API reference, https://docs.mistral.ai/api/ , "beta.conversations";
the fields as the OpenAPI-generated client documents them:
https://docs.rs/crate/mistral-openapi-client/latest/source/docs/ConversationAppendRequestBase.md):
``model`` (or ``agent_id``), ``instructions`` (the system prompt), ``tools`` (Chat Completions'
``{"type": "function", "function": {...}}``, or a built-in tool such as ``web_search``),
``inputs`` (text, or a list of entries: ``message.input`` / ``message.output`` with ``role``
and ``content`` (text or typed chunks), ``function.call`` with ``tool_call_id``, ``name`` and
``arguments``, ``function.result`` with ``tool_call_id`` and ``result``), ``completion_args``,
``store``, ``stream``, ``handoff_execution``. Read as Chat Completions ``messages`` (the
instructions as a system message, entries as user, assistant and tool messages) and
``tools``.

An append sends only the new entries: the conversation so far is the server's. Where the
recording holds that conversation (its start and the appends before, answered with the same
``conversation_id``) the turn's prompt is read as that history followed by the new entries,
and the model is the conversation's; otherwise, and for a restart, an agent or a built-in
tool (whose prompt the provider writes), the prompt read is not the whole prompt.

A response is a ``conversation.response``: ``conversation_id``, ``outputs`` (the new entries:
``message.output`` with ``model`` and ``content``, ``function.call``, ``tool.execution``...),
``usage``: ``prompt_tokens``, ``completion_tokens``, ``total_tokens`` (``ConversationUsageInfo``,
https://docs.rs/crate/mistral-openapi-client/latest/source/docs/ConversationResponse.md), the
same counts as Chat Completions' usage, read as them. A streamed turn (events) is not read
here.

Mistral's Agents completions (``POST /v1/agents/completions``: Chat Completions ``messages``
with an ``agent_id`` in place of a model) are read the same way: an agent is created (``POST
/v1/agents``) or updated (``PATCH /v1/agents/{id}``) with ``model``, ``instructions`` and
``tools`` the server keeps, and the answer (the agent object) states them; where the
recording holds that call, a completion naming the agent is read with its instructions as a
system message in front, its tools and its model; otherwise the prompt read is not whole. A
conversation started with an ``agent_id`` is read the same way.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from cachecast.core.errors import RecordFieldError
from cachecast.logs.http.bodies import decode_body
from cachecast.logs.http.exchange import Exchange

CONVERSATIONS = "/v1/conversations"
AGENTS = "/v1/agents"
AGENT_COMPLETIONS = "/v1/agents/completions"


@dataclass(frozen=True, slots=True)
class Agent:
    """A Mistral agent as its creation (or latest update) answered: what the server adds to
    a completion or conversation naming it."""

    model: str | None
    instructions: str | None
    tools: tuple[dict[str, Any], ...]


def remember_agent(exchange: Exchange, agents: MutableMapping[str, Agent]) -> None:
    """Keep the agent a recorded ``POST /v1/agents`` (or ``PATCH /v1/agents/{id}``) answered
    with, under its ``id``; any other call is left alone."""
    parts = urlsplit(exchange.url)
    if "api.mistral.ai" not in (parts.hostname or "").lower():
        return
    path = parts.path.rstrip("/")
    method = exchange.method.upper()
    updated = method == "PATCH" and path.rsplit("/", 1)[0].endswith(AGENTS)
    if not (method == "POST" and path.endswith(AGENTS)) and not updated:
        return
    if exchange.status is not None and not 200 <= exchange.status < 300:
        return
    try:
        agent = decode_body(exchange.response_body, exchange.response_headers, "response.body")
    except RecordFieldError:
        return
    if not isinstance(agent, dict) or not isinstance(agent.get("id"), str):
        return
    model, instructions = agent.get("model"), agent.get("instructions")
    tools = agent.get("tools")
    agents[agent["id"]] = Agent(
        model if isinstance(model, str) else None,
        instructions if isinstance(instructions, str) else None,
        tuple(t for t in tools if isinstance(t, dict)) if isinstance(tools, list) else (),
    )


def agent_completion_as_chat(
    body: dict[str, Any], agents: MutableMapping[str, Agent]
) -> tuple[dict[str, Any], bool]:
    """An Agents completion body as the Chat Completions body it stands for (the agent's
    instructions, tools and model put in), and whether that is the whole prompt."""
    named = body.get("agent_id")
    agent = agents.get(named) if isinstance(named, str) else None
    chat = {k: v for k, v in body.items() if k != "agent_id"}
    if agent is None:
        return chat, False  # the agent's instructions are the server's
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    if agent.instructions:
        messages = [{"role": "system", "content": agent.instructions}, *messages]
    chat["messages"] = messages
    if agent.model is not None:
        chat["model"] = agent.model
    if agent.tools and not body.get("tools"):
        tools = [t for t in agent.tools if t.get("type") == "function"]
        if tools:
            chat["tools"] = tools
        if len(tools) < len(agent.tools):
            return chat, False  # a built-in tool: Mistral's own text
    return chat, True


@dataclass(frozen=True, slots=True)
class Conversation:
    """A conversation as the recording shows it: its model, its Chat Completions messages
    so far (instructions, inputs, outputs), its tools, and whether those are all of it."""

    model: str | None
    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...]
    whole: bool


def conversation_target(path: str) -> tuple[str | None, bool] | None:
    """For a Conversations path: the conversation an append names (None for a start) and
    whether the call restarts it; None for any other path."""
    path = path.rstrip("/")
    if path.endswith(CONVERSATIONS):
        return None, False
    if CONVERSATIONS + "/" not in path:
        return None
    rest = path.rsplit(CONVERSATIONS + "/", 1)[1].split("/")
    if len(rest) == 1 and rest[0]:
        return rest[0], False
    if len(rest) == 2 and rest[0] and rest[1] == "restart":
        return rest[0], True
    return None


def _text(content: Any, field: str) -> tuple[str, bool]:
    """An entry's ``content`` as text, and whether every chunk was text."""
    if isinstance(content, str):
        return content, True
    if not isinstance(content, list):
        raise RecordFieldError(field, "expected text or a list of content chunks")
    texts: list[str] = []
    whole = True
    for index, chunk in enumerate(content):
        if not isinstance(chunk, dict):
            raise RecordFieldError(f"{field}[{index}]", "expected a content chunk object")
        if chunk.get("type") == "text" and isinstance(chunk.get("text"), str):
            texts.append(chunk["text"])
        else:
            whole = False  # an image, a document, a tool reference: not read as text
    return "".join(texts), whole


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def entries_as_messages(entries: Any, field: str) -> tuple[list[dict[str, Any]], bool]:
    """Conversation entries (or one text) as Chat Completions messages, and whether every
    entry was read."""
    if isinstance(entries, str):
        return [{"role": "user", "content": entries}], True
    if not isinstance(entries, list):
        raise RecordFieldError(field, "expected text or a list of entries")
    messages: list[dict[str, Any]] = []
    whole = True
    for index, entry in enumerate(entries):
        where = f"{field}[{index}]"
        if not isinstance(entry, dict):
            raise RecordFieldError(where, "expected an entry object")
        kind = entry.get("type")
        role = entry.get("role")
        if kind in (None, "message.input", "message.output") and role in (
            "user",
            "assistant",
            "system",
        ):
            text, read = _text(entry.get("content"), f"{where}.content")
            messages.append({"role": role, "content": text})
            whole = whole and read
        elif kind == "function.call":
            call = {
                "id": entry.get("tool_call_id"),
                "type": "function",
                "function": {
                    "name": entry.get("name"),
                    "arguments": _arguments(entry.get("arguments")),
                },
            }
            if messages and messages[-1]["role"] == "assistant" and "tool_calls" in messages[-1]:
                messages[-1]["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function.result":
            result = entry.get("result")
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": entry.get("tool_call_id"),
                    "content": result if isinstance(result, str) else json.dumps(result),
                }
            )
        else:
            whole = False  # a built-in tool's run, an agent handoff: the provider's own text
    return messages, whole


def _tools(body: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    tools = body.get("tools")
    kept: list[dict[str, Any]] = []
    whole = True
    for index, tool in enumerate(tools if isinstance(tools, list) else []):
        if not isinstance(tool, dict):
            raise RecordFieldError(f"request.body.tools[{index}]", "expected a tool object")
        if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
            kept.append(tool)
        else:
            whole = False  # a built-in tool (web search, code interpreter): Mistral's own text
    return kept, whole


def conversation_as_chat(
    body: dict[str, Any],
    path: str,
    response: Any,
    conversations: MutableMapping[str, Conversation],
    agents: MutableMapping[str, Agent] | None = None,
) -> tuple[dict[str, Any], Any, bool]:
    """A Conversations call as the Chat Completions request and response it stands for, and
    whether the request is the whole prompt; the conversation, with this turn's outputs,
    is kept under the ``conversation_id`` the response names."""
    target = conversation_target(path)
    named, restart = target if target is not None else (None, False)
    earlier = conversations.get(named) if named is not None else None
    own, whole = entries_as_messages(body.get("inputs", []), "request.body.inputs")
    tools, tools_whole = _tools(body)
    named_agent = body.get("agent_id")
    agent = (agents or {}).get(named_agent) if isinstance(named_agent, str) else None
    whole = whole and tools_whole and not restart and (named_agent is None or agent is not None)
    if named is not None and not restart and earlier is not None:
        messages = [*earlier.messages, *own]
        tools = tools or list(earlier.tools)
        model = body.get("model") if isinstance(body.get("model"), str) else earlier.model
        whole = whole and earlier.whole
    else:
        instructions = body.get("instructions")
        model = body.get("model") if isinstance(body.get("model"), str) else None
        if agent is not None:
            instructions = agent.instructions if instructions is None else instructions
            model = agent.model if model is None else model
            tools = tools or [t for t in agent.tools if t.get("type") == "function"]
        system = [{"role": "system", "content": instructions}]
        messages = [*system, *own] if isinstance(instructions, str) else own
        whole = whole and named is None  # an append to a conversation the recording lacks
    outputs = response.get("outputs") if isinstance(response, dict) else None
    produced, outputs_whole = (
        entries_as_messages(outputs, "response.body.outputs")
        if isinstance(outputs, list)
        else ([], False)
    )
    if model is None and isinstance(outputs, list):
        named_models = (o.get("model") for o in outputs if isinstance(o, dict))
        model = next((m for m in named_models if isinstance(m, str)), None)
    chat: dict[str, Any] = {"messages": messages}
    if model is not None:
        chat["model"] = model
    if tools:
        chat["tools"] = tools
    if isinstance(response, dict) and isinstance(response.get("conversation_id"), str):
        conversations[response["conversation_id"]] = Conversation(
            model, (*messages, *produced), tuple(tools), whole and outputs_whole
        )
    return chat, _response_as_chat(response, produced, model), whole


def _response_as_chat(response: Any, produced: list[dict[str, Any]], model: str | None) -> Any:
    """A ``conversation.response`` as a Chat Completions response; anything else (a stream
    of events) is handed on as it is."""
    if not isinstance(response, dict) or not isinstance(response.get("usage"), dict):
        return response
    text = "".join(m["content"] for m in produced if m["role"] == "assistant" and m["content"])
    calls = [c for m in produced if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = calls
    chat: dict[str, Any] = {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message}],
        "usage": response["usage"],
    }
    if model is not None:
        chat["model"] = model
    if isinstance(response.get("conversation_id"), str):
        chat["id"] = response["conversation_id"]
    return chat
