"""Message lists as observability tools record them -> request bodies the renderer reads.

Tools record prompts in their own shapes: OpenTelemetry GenAI's ``parts`` messages
(``{"role", "parts": [{"type": "text", "content"}, {"type": "tool_call", ...}]}``),
OpenInference's flattened ``llm.input_messages.N.message.*`` attributes, LangChain's
serialized messages (``{"type": "human", "content"}`` or ``{"lc": 1, "id": [...,
"HumanMessage"], "kwargs": {...}}``), or plain OpenAI chat messages with roles the API would
not take (LangChain writes a tool message's role as the tool's name). :func:`chat_messages`
brings any of these to OpenAI Chat Completions messages; :func:`body_for` builds the body
for the provider (Anthropic Messages for Anthropic and Bedrock's Claude models, else Chat
Completions, or Responses where the items are Responses items).

Content the renderer has no rule for (images as URLs inside parts, audio, file ids) becomes
its JSON as text: the prompt keeps its place and rough size, and the request is marked
approximate by the renderer's own rules (tools, images).
"""

from __future__ import annotations

from typing import Any

import orjson

from cachecast.core.errors import RecordFieldError

CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_LANGCHAIN_ROLES = {
    "human": "user",
    "humanmessage": "user",
    "humanmessagechunk": "user",
    "ai": "assistant",
    "aimessage": "assistant",
    "aimessagechunk": "assistant",
    "system": "system",
    "systemmessage": "system",
    "tool": "tool",
    "toolmessage": "tool",
    "function": "function",
    "functionmessage": "function",
    "chat": "user",
    "chatmessage": "user",
    "model": "assistant",  # Gemini's and semconv's name for the model's turn
}
RESPONSES_ITEM_TYPES = frozenset(
    {"function_call", "function_call_output", "reasoning", "computer_call", "web_search_call"}
)


def text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def maybe_json(value: Any) -> Any:
    """A JSON-encoded string decoded (tools store lists and objects as JSON strings)."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def is_responses_input(items: list[Any]) -> bool:
    return any(isinstance(i, dict) and i.get("type") in RESPONSES_ITEM_TYPES for i in items)


def chat_messages(messages: list[Any], path: str) -> list[dict[str, Any]]:
    """Any recorded message list as OpenAI Chat Completions messages."""
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        where = f"{path}[{index}]"
        if isinstance(message, list):  # LangChain batches: [[messages of prompt 1], ...]
            out.extend(chat_messages(message, where))
            continue
        if isinstance(message, str):
            out.append({"role": "user", "content": message})
            continue
        if not isinstance(message, dict):
            raise RecordFieldError(
                where, f"expected a message object, got {type(message).__name__}"
            )
        out.append(_chat_message(message, where))
    return out


def _chat_message(message: dict[str, Any], path: str) -> dict[str, Any]:
    if message.get("lc") == 1 and isinstance(message.get("kwargs"), dict):
        # LangChain's serialized form: the class name says the role.
        ids = message.get("id")
        cls = ids[-1] if isinstance(ids, list) and ids and isinstance(ids[-1], str) else ""
        kwargs = dict(message["kwargs"])
        kwargs.setdefault("type", cls)
        return _chat_message(kwargs, path)
    role = _role(message)
    if "parts" in message and "content" not in message:  # OpenTelemetry GenAI semconv
        return _from_parts(role, message["parts"], f"{path}.parts")
    out: dict[str, Any] = {"role": role, "content": _content(message.get("content"), role)}
    calls = message.get("tool_calls")
    if calls is None and isinstance(message.get("additional_kwargs"), dict):
        calls = message["additional_kwargs"].get("tool_calls")
    if isinstance(calls, list) and calls:
        out["tool_calls"] = [
            _tool_call(call, f"{path}.tool_calls[{i}]") for i, call in enumerate(calls)
        ]
    if role == "tool":
        call_id = message.get("tool_call_id")
        if isinstance(call_id, str):
            out["tool_call_id"] = call_id
    return out


def _role(message: dict[str, Any]) -> str:
    role = message.get("role")
    if isinstance(role, str):
        lowered = role.lower()
        if lowered in CHAT_ROLES:
            return lowered
        if lowered in _LANGCHAIN_ROLES:
            return _LANGCHAIN_ROLES[lowered]
        # LangChain.js writes a tool message's role as the tool's name.
        return "tool"
    kind = message.get("type")
    if isinstance(kind, str) and kind.lower() in _LANGCHAIN_ROLES:
        return _LANGCHAIN_ROLES[kind.lower()]
    return "user"


def _content(content: Any, role: str) -> Any:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[dict[str, Any]] = []
        for part in content:
            if isinstance(part, str):
                parts.append({"type": "text", "text": part})
            elif isinstance(part, dict) and part.get("type") in (
                "text",
                "input_text",
                "output_text",
            ):
                value = part.get("text", part.get("content", ""))
                converted: dict[str, Any] = {"type": "text", "text": text(value)}
                if isinstance(part.get("cache_control"), dict):
                    converted["cache_control"] = part["cache_control"]
                parts.append(converted)
            elif isinstance(part, dict) and part.get("type") == "image_url" and "image_url" in part:
                parts.append({"type": "image_url", "image_url": part["image_url"]})
            else:
                parts.append({"type": "text", "text": text(part)})
        return parts
    return text(content)


def _tool_call(call: Any, path: str) -> dict[str, Any]:
    if not isinstance(call, dict):
        raise RecordFieldError(path, "expected a tool call object")
    function = call.get("function")
    if isinstance(function, dict):
        name, arguments = function.get("name"), function.get("arguments", "")
    else:  # LangChain's {name, args, id} and semconv's {name, arguments, id}
        name, arguments = call.get("name"), call.get("arguments", call.get("args", ""))
    return {
        "id": call.get("id") if isinstance(call.get("id"), str) else "",
        "type": "function",
        "function": {"name": text(name) if name is not None else "", "arguments": text(arguments)},
    }


def _from_parts(role: str, parts: Any, path: str) -> dict[str, Any]:
    """An OpenTelemetry GenAI message (``{"role", "parts"}``) as a chat message."""
    if not isinstance(parts, list):
        raise RecordFieldError(path, f"expected a list, got {type(parts).__name__}")
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    call_id: str | None = None
    for index, part in enumerate(parts):
        if not isinstance(part, dict):
            raise RecordFieldError(f"{path}[{index}]", "expected a part object")
        kind = part.get("type")
        if kind == "text":
            texts.append(text(part.get("content", "")))
        elif kind == "tool_call":
            calls.append(_tool_call(part, f"{path}[{index}]"))
        elif kind == "tool_call_response":
            call_id = part.get("id") if isinstance(part.get("id"), str) else call_id
            texts.append(text(part.get("response", part.get("result", ""))))
        else:  # blob / uri / reasoning / anything newer: its JSON as text
            texts.append(text(part))
    if call_id is not None and role != "tool":
        role = "tool"
    out: dict[str, Any] = {"role": role, "content": "".join(texts) if texts else None}
    if calls:
        out["tool_calls"] = calls
    if call_id is not None:
        out["tool_call_id"] = call_id
    return out


def chat_tools(tools: Any) -> list[dict[str, Any]] | None:
    """Tool definitions as Chat Completions ``tools`` (``{"type": "function", "function"}``)."""
    tools = maybe_json(tools)
    if not isinstance(tools, list) or not tools:
        return None
    out = []
    for tool in tools:
        tool = maybe_json(tool)
        if not isinstance(tool, dict):
            continue
        if isinstance(tool.get("function"), dict):
            out.append({"type": "function", "function": tool["function"]})
        else:
            definition = {k: v for k, v in tool.items() if k != "type"}
            out.append({"type": "function", "function": definition})
    return out or None


def has_tool_calls(messages: list[dict[str, Any]]) -> bool:
    return any(m.get("tool_calls") or m.get("role") == "tool" for m in messages)


def body_for(
    provider: str | None,
    model: str | None,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A request body in the provider's API shape from chat messages."""
    if provider == "anthropic" or (
        provider == "bedrock" and model is not None and "claude" in model.lower()
    ):
        return anthropic_body(model, messages, tools)
    body: dict[str, Any] = {"messages": messages}
    if model is not None:
        body["model"] = model
    if tools:
        body["tools"] = tools
    return body


def anthropic_body(
    model: str | None, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> dict[str, Any]:
    """Chat messages as an Anthropic Messages body: system messages to ``system``, tool
    calls to ``tool_use`` blocks, tool messages to ``tool_result`` blocks of a user turn.
    Text parts keep their ``cache_control`` (LiteLLM and OpenRouter pass Anthropic's
    breakpoints through in OpenAI-shaped messages)."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        content = message.get("content")
        if role in ("system", "developer"):
            system.extend(_text_blocks(content))
            continue
        if role in ("tool", "function"):
            block = {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id", ""),
                "content": _plain(content),
            }
            if out and out[-1]["role"] == "user":
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
            continue
        blocks = _text_blocks(content)
        for call in message.get("tool_calls") or []:
            function = call["function"]
            arguments = maybe_json(function.get("arguments", ""))
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call.get("id", ""),
                    "name": function["name"],
                    "input": arguments,
                }
            )
        anthropic_role = "assistant" if role == "assistant" else "user"
        if out and out[-1]["role"] == anthropic_role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": anthropic_role, "content": blocks})
    body: dict[str, Any] = {"messages": out}
    if model is not None:
        body["model"] = model
    if system:
        body["system"] = system
    if tools:
        body["tools"] = [
            {
                "name": t["function"].get("name", ""),
                "description": t["function"].get("description", ""),
                "input_schema": t["function"].get("parameters", {}),
            }
            for t in tools
        ]
    return body


def _text_blocks(content: Any) -> list[dict[str, Any]]:
    if content is None or content == "":
        return []
    if not isinstance(content, list):
        return [{"type": "text", "text": _plain(content)}]
    blocks = []
    for part in content:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            block: dict[str, Any] = {"type": "text", "text": part["text"]}
            if isinstance(part.get("cache_control"), dict):
                block["cache_control"] = part["cache_control"]
            blocks.append(block)
        else:
            blocks.append({"type": "text", "text": text(part)})
    return blocks


def _plain(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "") if isinstance(p, dict) and isinstance(p.get("text"), str) else text(p)
            for p in content
        )
    return text(content)
