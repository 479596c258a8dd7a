"""OpenAI Chat Completions bodies (``messages``, ``tools``) -> rendered parts.

Tools first (one part per definition, compact JSON: OpenAI's own tool rendering is not
public, so a request with tools is marked ``exact=False``), then one part per message: its
content parts (``openai_content``) followed by its tool calls, each appended as compact JSON
``{"name":..., "arguments":...}``.
"""

from __future__ import annotations

from typing import Any

from cachecast.tokenizers.render.conversation import Conversation, tool_parts
from cachecast.tokenizers.render.fields import as_dict, as_list, as_str, compact_json, require
from cachecast.tokenizers.render.openai_content import marked, openai_content, request_controls
from cachecast.tokenizers.render.parts import Rendered, RenderedPart


def _chat_header(body: dict[str, Any], rendered: Rendered) -> bool:
    if "tools" not in body:
        return True
    rendered.parts.extend(tool_parts(body["tools"], "tools"))
    rendered.chat_tools = list(body["tools"])
    return False  # OpenAI's own tool rendering is not public


def _chat_message(message: Any, path: str, rendered: Rendered) -> bool:
    # Fast path for the common shape (checked exactly as the general path would).
    if type(message) is dict and len(message) == 2:
        role = message.get("role")
        content = message.get("content")
        if type(role) is str and type(content) is str:
            kind = "system" if role in ("system", "developer") else "message"
            rendered.parts.append(RenderedPart(kind, path, role, [content]))
            return True
    message = as_dict(message, path)
    role = as_str(require(message, "role", path), f"{path}.role")
    items, exact, marks = openai_content(message.get("content"), f"{path}.content")
    calls = as_list(message.get("tool_calls", []), f"{path}.tool_calls")
    for call_index, call in enumerate(calls):
        call_path = f"{path}.tool_calls[{call_index}]"
        function = as_dict(require(as_dict(call, call_path), "function", call_path), call_path)
        items.append(
            compact_json(
                {
                    "name": require(function, "name", f"{call_path}.function"),
                    "arguments": function.get("arguments", ""),
                }
            )
        )
    kind = "system" if role in ("system", "developer") else "message"
    rendered.parts.append(marked(RenderedPart(kind, path, role, items), marks))
    return exact


CONVERSATION = Conversation(True, "messages", _chat_header, _chat_message, request_controls)
