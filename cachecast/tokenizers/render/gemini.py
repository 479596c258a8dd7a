"""Gemini generateContent bodies (``tools``, ``systemInstruction``, ``contents``) -> rendered
parts.

Tools first (compact JSON), then the system instruction, then one part per content. An
inline or file input counts Gemini's documented 258 tokens (an image up to 384 px per side);
a function call or response is its compact JSON. Gemini has no ``cache_control``: cachecast
writes that mark itself at the end of a ``cachedContent`` when it merges that content into the
request using it (``cachecast.logs.http.state``), and it is read here as a breakpoint.
"""

from __future__ import annotations

from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.tokenizers.render.conversation import Conversation, breakpoint_ttl, tool_parts
from cachecast.tokenizers.render.fields import as_dict, as_list, as_str, compact_json, require
from cachecast.tokenizers.render.parts import NonText, PartItem, Rendered, RenderedPart

GEMINI_IMAGE_TOKENS = 258  # Gemini: an image up to 384 px per side is 258 tokens
# A part's kind, in the REST API's lowerCamelCase or the proto field names it accepts as well
# (``function_call``, as clients such as llm-gemini send; docs/log-formats.md, "Gemini").
_MEDIA_KEYS = frozenset({"inlineData", "inline_data", "fileData", "file_data"})
_JSON_KEYS = frozenset(
    {
        "functionCall",
        "function_call",
        "functionResponse",
        "function_response",
        "executableCode",
        "executable_code",
        "codeExecutionResult",
        "code_execution_result",
    }
)


def _gemini_header(body: dict[str, Any], rendered: Rendered) -> bool:
    tools = body.get("tools")
    if tools is not None:
        rendered.parts.extend(tool_parts(tools, "tools"))
    system = body.get("systemInstruction", body.get("system_instruction"))
    if system is not None:
        system = as_dict(system, "systemInstruction")
        items = _gemini_parts(system.get("parts", []), "systemInstruction.parts")
        # cache_control is not Gemini's: cachecast marks the end of a cachedContent with it
        # when it merges that content into the request using it (see the module's docstring).
        ttl = breakpoint_ttl(system, "systemInstruction")
        rendered.parts.append(RenderedPart("system", "systemInstruction", "system", items, ttl))
    return False


def _gemini_content(content: Any, path: str, rendered: Rendered) -> bool:
    content = as_dict(content, path)
    role = content.get("role", "user")
    items = _gemini_parts(require(content, "parts", path), f"{path}.parts")
    ttl = breakpoint_ttl(content, path)  # (see _gemini_header)
    rendered.parts.append(RenderedPart("message", path, as_str(role, f"{path}.role"), items, ttl))
    return False


def _gemini_parts(parts: Any, path: str) -> list[PartItem]:
    items: list[PartItem] = []
    for index, part in enumerate(as_list(parts, path)):
        part_path = f"{path}[{index}]"
        part = as_dict(part, part_path)
        if "text" in part:
            items.append(as_str(part["text"], f"{part_path}.text"))
        elif _MEDIA_KEYS & part.keys():
            items.append(NonText.of(part, GEMINI_IMAGE_TOKENS))
        elif _JSON_KEYS & part.keys():
            items.append(compact_json(part))
        else:
            raise RecordFieldError(
                part_path,
                "expected text, inlineData, fileData, a function call or response, or code"
                " and its result",
            )
    return items


CONVERSATION = Conversation(False, "contents", _gemini_header, _gemini_content)
