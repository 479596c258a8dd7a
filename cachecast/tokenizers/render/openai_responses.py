"""OpenAI Responses bodies (``instructions``, ``input``, ``tools``) -> rendered parts.

Tools first (compact JSON, as for Chat Completions: such a request is not exact), then the
instructions as a system part, then one part per input item: messages (content parts as in
``openai_content``), function calls and their outputs as compact JSON; built-in tools'
items (``*_call``, ``*_call_output``) as compact JSON of their fields, marked not exact.
Reasoning items add no
tokens: the API does not re-send them as prompt text. A whole input given as one string is
one user message.
"""

from __future__ import annotations

from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.tokenizers.render.conversation import Conversation, tool_parts
from cachecast.tokenizers.render.fields import as_dict, as_str, compact_json, require
from cachecast.tokenizers.render.openai_content import marked, openai_content, request_controls
from cachecast.tokenizers.render.parts import PartItem, Rendered, RenderedPart


def _responses_header(body: dict[str, Any], rendered: Rendered) -> bool:
    exact = True
    if "tools" in body:
        rendered.parts.extend(tool_parts(body["tools"], "tools"))
        rendered.chat_tools = list(body["tools"])
        exact = False
    instructions = body.get("instructions")
    if instructions is not None:
        text = as_str(instructions, "instructions")
        rendered.parts.append(RenderedPart("system", "instructions", "system", [text]))
    return exact


def _responses_item(item: Any, path: str, rendered: Rendered) -> bool:
    if isinstance(item, str):  # the whole input as one string
        rendered.parts.append(RenderedPart("message", path, "user", [item]))
        return True
    item = as_dict(item, path)
    kind = item.get("type", "message")
    exact = True
    marks: list[tuple[int, str | None]] = []
    items: list[PartItem]
    if kind == "message":
        role = as_str(require(item, "role", path), f"{path}.role")
        items, exact, marks = openai_content(item.get("content"), f"{path}.content")
    elif kind == "function_call":
        role = "assistant"
        name = as_str(require(item, "name", path), f"{path}.name")
        items = [compact_json({"name": name, "arguments": item.get("arguments", "")})]
    elif kind == "function_call_output":
        role = "tool"
        output = require(item, "output", path)
        items = [output if isinstance(output, str) else compact_json(output)]
    elif kind == "reasoning":
        # Reasoning items are not re-sent as prompt text by the API; they add no tokens.
        return True
    elif isinstance(kind, str) and kind.endswith(("_call", "_call_output")):
        # Built-in tools' items (web_search_call, file_search_call, computer_call and its
        # output, code_interpreter_call, custom_tool_call, mcp_call, ...): sent back as the
        # model's and the tool's turns, in a framing the API does not publish. Their fields
        # as compact JSON approximate it; the request is not exact.
        role = "tool" if kind.endswith("_output") else "assistant"
        items = [compact_json({k: v for k, v in item.items() if k not in ("id", "status")})]
        exact = False
    else:
        raise RecordFieldError(f"{path}.type", f"unsupported input item type {kind!r}")
    part_kind = "system" if role in ("system", "developer") else "message"
    rendered.parts.append(marked(RenderedPart(part_kind, path, role, items), marks))
    return exact


CONVERSATION = Conversation(True, "input", _responses_header, _responses_item, request_controls)
