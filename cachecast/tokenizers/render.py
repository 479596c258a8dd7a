"""Request bodies -> an ordered list of prompt parts (tools, system, messages, content blocks).

Each API's body is reduced to :class:`Part` objects in the order the provider builds its
prompt prefix: tools first, then the system prompt, then the messages (Anthropic documents
this order for its cache prefix: tools, system, messages; OpenAI's prefix likewise holds the
tool definitions ahead of the conversation). A part becomes one segment of the tokenized
request; a part with a ``cache_control`` marker also carries a breakpoint at its end.

Text inside a part: an OpenAI message's text parts are concatenated without a separator,
tool calls are appended as compact JSON ``{"name":..., "arguments":...}``; tool definitions
are compact JSON of the tool object (OpenAI's own tool rendering is not public, so a request
with tools or images is marked ``exact=False``). Images become a run of placeholder ids
(see ``base.NON_TEXT_ID_BASE``) whose length follows the provider's documented image cost
where it is fixed (OpenAI detail=low: 85; Gemini: 258) and a documented estimate otherwise.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

# Token counts for one image (documented provider rules; dims are not in the log).
OPENAI_IMAGE_LOW_TOKENS = 85  # detail=low, fixed (OpenAI vision pricing docs)
OPENAI_IMAGE_HIGH_ESTIMATE = 765  # 1024x1024 at detail=high: 85 + 4 tiles x 170
ANTHROPIC_IMAGE_ESTIMATE = 1600  # about (width*height)/750 for a ~1.15 megapixel image
GEMINI_IMAGE_TOKENS = 258  # Gemini: an image up to 384 px per side is 258 tokens


class FieldError(ValueError):
    """A record's field is missing or malformed; ``records`` adds file and line."""

    def __init__(self, field_path: str, reason: str) -> None:
        super().__init__(f"{field_path}: {reason}")
        self.field = field_path
        self.reason = reason


@dataclass(frozen=True, slots=True)
class NonText:
    """A non-text input (image, file) standing for ``count`` tokens; ``digest`` names it."""

    digest: bytes
    count: int

    def ids(self, base: int, span: int) -> list[int]:
        start = int.from_bytes(self.digest[:8], "little")
        return [base + (start + i) % span for i in range(self.count)]


Item = str | NonText

NO_BREAKPOINT = "__none__"


@dataclass(slots=True)
class Part:
    """One prompt part. ``framed`` parts get the chat framing around ``role`` + items."""

    kind: str
    label: str
    role: str
    items: list[Item] = field(default_factory=list)
    breakpoint_ttl: str | None = NO_BREAKPOINT  # NO_BREAKPOINT: no cache_control here
    framed: bool = True

    def text(self) -> str:
        return "".join(item for item in self.items if isinstance(item, str))


@dataclass(slots=True)
class Rendered:
    """A request body reduced to parts; ``exact`` is False where our rendering guesses."""

    api: str
    parts: list[Part]
    exact: bool = True
    reply_priming: bool = True
    tokens: list[int] | None = None  # pre-tokenized input
    chat_tools: list[dict[str, Any]] | None = None


def detect_api(body: dict[str, Any], provider: str | None) -> str:
    """Which API shape a body has: chat, responses, anthropic, gemini, prompt, tokens."""
    if "tokens" in body:
        return "tokens"
    if "prompt" in body and "messages" not in body:
        return "prompt"
    if "contents" in body:
        return "gemini"
    if "messages" in body:
        if provider == "anthropic" or _looks_anthropic(body):
            return "anthropic"
        return "chat"
    if "input" in body or "instructions" in body:
        return "responses"
    raise FieldError(
        "request", "no prompt found: expected messages, input, contents, prompt or tokens"
    )


def render(body: dict[str, Any], api: str) -> Rendered:
    renderers = {
        "chat": _render_openai_chat,
        "responses": _render_responses,
        "anthropic": _render_anthropic,
        "gemini": _render_gemini,
        "prompt": _render_prompt,
        "tokens": _render_tokens,
    }
    return renderers[api](body)


# --- helpers -----------------------------------------------------------------------------


def _looks_anthropic(body: dict[str, Any]) -> bool:
    model = body.get("model")
    if isinstance(model, str) and model.lower().startswith("claude"):
        return True
    if "system" in body and "messages" in body:
        return True
    messages = body.get("messages")
    if not isinstance(messages, list):
        return False
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and "cache_control" in block:
                    return True
    return False


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _digest(value: Any) -> bytes:
    return hashlib.blake2b(_compact(value).encode(), digest_size=16).digest()


def _require(obj: dict[str, Any], key: str, path: str) -> Any:
    if key not in obj:
        raise FieldError(f"{path}.{key}" if path else key, "missing")
    return obj[key]


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise FieldError(path, f"expected a list, got {type(value).__name__}")
    return value


def _dict(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FieldError(path, f"expected an object, got {type(value).__name__}")
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise FieldError(path, f"expected a string, got {type(value).__name__}")
    return value


def _tool_parts(tools: Any, path: str) -> list[Part]:
    parts = []
    for index, tool in enumerate(_list(tools, path)):
        label = f"{path}[{index}]"
        tool = _dict(tool, label)
        ttl = _breakpoint_ttl(tool, label)
        definition = {key: value for key, value in tool.items() if key != "cache_control"}
        parts.append(Part("tool", label, "system", [_compact(definition)], ttl))
    return parts


def _breakpoint_ttl(block: dict[str, Any], path: str) -> str | None:
    marker = block.get("cache_control")
    if marker is None:
        return NO_BREAKPOINT
    marker = _dict(marker, f"{path}.cache_control")
    ttl = marker.get("ttl")
    if ttl is not None and not isinstance(ttl, str):
        raise FieldError(f"{path}.cache_control.ttl", "expected a string such as '5m' or '1h'")
    return ttl


# --- OpenAI Chat Completions -------------------------------------------------------------


def _render_openai_chat(body: dict[str, Any]) -> Rendered:
    rendered = Rendered("chat", [])
    if "tools" in body:
        rendered.parts.extend(_tool_parts(body["tools"], "tools"))
        rendered.chat_tools = list(body["tools"])
        rendered.exact = False
    messages = _list(_require(body, "messages", ""), "messages")
    parts = rendered.parts
    for index, message in enumerate(messages):
        path = f"messages[{index}]"
        # Fast path for the common shape (checked exactly as the general path would).
        if type(message) is dict and len(message) == 2:
            role = message.get("role")
            content = message.get("content")
            if type(role) is str and type(content) is str:
                kind = "system" if role in ("system", "developer") else "message"
                parts.append(Part(kind, path, role, [content]))
                continue
        message = _dict(message, path)
        role = _str(_require(message, "role", path), f"{path}.role")
        items, exact = _openai_content(message.get("content"), f"{path}.content")
        for call_index, call in enumerate(
            _list(message.get("tool_calls", []), f"{path}.tool_calls")
        ):
            call_path = f"{path}.tool_calls[{call_index}]"
            function = _dict(_require(_dict(call, call_path), "function", call_path), call_path)
            items.append(
                _compact(
                    {
                        "name": _require(function, "name", f"{call_path}.function"),
                        "arguments": function.get("arguments", ""),
                    }
                )
            )
        rendered.exact = rendered.exact and exact
        kind = "system" if role in ("system", "developer") else "message"
        rendered.parts.append(Part(kind, path, role, items))
    return rendered


def _openai_content(content: Any, path: str) -> tuple[list[Item], bool]:
    """Items of an OpenAI (chat or responses) content field; exact False when an image."""
    if content is None:
        return [], True
    if isinstance(content, str):
        return [content], True
    items: list[Item] = []
    exact = True
    for index, part in enumerate(_list(content, path)):
        part_path = f"{path}[{index}]"
        part = _dict(part, part_path)
        kind = _str(_require(part, "type", part_path), f"{part_path}.type")
        if kind in ("text", "input_text", "output_text", "refusal"):
            key = "refusal" if kind == "refusal" else "text"
            items.append(_str(_require(part, key, part_path), f"{part_path}.{key}"))
        elif kind in ("image_url", "input_image"):
            image = part.get("image_url") if kind == "image_url" else part
            if isinstance(image, str):
                image = {"url": image}
            image = _dict(image, f"{part_path}.image_url")
            detail = image.get("detail", part.get("detail", "auto"))
            reference = image.get("url") or image.get("image_url") or image.get("file_id")
            if reference is None:
                raise FieldError(f"{part_path}.image_url", "missing url or file_id")
            count = OPENAI_IMAGE_LOW_TOKENS if detail == "low" else OPENAI_IMAGE_HIGH_ESTIMATE
            exact = exact and detail == "low"
            items.append(NonText(_digest(reference), count))
        elif kind in ("input_audio", "file", "input_file"):
            items.append(NonText(_digest(part), 0))
            exact = False
        else:
            raise FieldError(f"{part_path}.type", f"unsupported content part type {kind!r}")
    return items, exact


# --- OpenAI Responses API ----------------------------------------------------------------


def _render_responses(body: dict[str, Any]) -> Rendered:
    rendered = Rendered("responses", [])
    if "tools" in body:
        rendered.parts.extend(_tool_parts(body["tools"], "tools"))
        rendered.chat_tools = list(body["tools"])
        rendered.exact = False
    instructions = body.get("instructions")
    if instructions is not None:
        text = _str(instructions, "instructions")
        rendered.parts.append(Part("system", "instructions", "system", [text]))
    given = _require(body, "input", "")
    if isinstance(given, str):
        rendered.parts.append(Part("message", "input", "user", [given]))
        return rendered
    for index, item in enumerate(_list(given, "input")):
        path = f"input[{index}]"
        item = _dict(item, path)
        kind = item.get("type", "message")
        if kind == "message":
            role = _str(_require(item, "role", path), f"{path}.role")
            items, exact = _openai_content(item.get("content"), f"{path}.content")
            rendered.exact = rendered.exact and exact
        elif kind == "function_call":
            role = "assistant"
            name = _str(_require(item, "name", path), f"{path}.name")
            items = [_compact({"name": name, "arguments": item.get("arguments", "")})]
        elif kind == "function_call_output":
            role = "tool"
            output = _require(item, "output", path)
            items = [output if isinstance(output, str) else _compact(output)]
        elif kind == "reasoning":
            # Reasoning items are not re-sent as prompt text by the API; they add no tokens.
            continue
        else:
            raise FieldError(f"{path}.type", f"unsupported input item type {kind!r}")
        part_kind = "system" if role in ("system", "developer") else "message"
        rendered.parts.append(Part(part_kind, path, role, items))
    return rendered


# --- Anthropic Messages ------------------------------------------------------------------


def _render_anthropic(body: dict[str, Any]) -> Rendered:
    """Each system block, tool and content block is its own framed part (an approximation:
    Anthropic's tokenizer and framing are not public), so a ``cache_control`` breakpoint
    falls exactly at the end of the block that carries it."""
    rendered = Rendered("anthropic", [], exact=False)
    if "tools" in body:
        rendered.parts.extend(_tool_parts(body["tools"], "tools"))
        rendered.chat_tools = list(body["tools"])
    system = body.get("system")
    if isinstance(system, str):
        rendered.parts.append(Part("system", "system", "system", [system]))
    elif system is not None:
        for index, block in enumerate(_list(system, "system")):
            path = f"system[{index}]"
            block = _dict(block, path)
            text = _str(_require(block, "text", path), f"{path}.text")
            rendered.parts.append(
                Part("system", path, "system", [text], _breakpoint_ttl(block, path))
            )
    messages = _list(_require(body, "messages", ""), "messages")
    for index, message in enumerate(messages):
        path = f"messages[{index}]"
        message = _dict(message, path)
        role = _str(_require(message, "role", path), f"{path}.role")
        content = _require(message, "content", path)
        if isinstance(content, str):
            rendered.parts.append(Part("message", path, role, [content]))
            continue
        for block_index, block in enumerate(_list(content, f"{path}.content")):
            block_path = f"{path}.content[{block_index}]"
            block = _dict(block, block_path)
            rendered.parts.append(
                Part(
                    "content",
                    block_path,
                    role,
                    [_anthropic_block(block, block_path)],
                    _breakpoint_ttl(block, block_path),
                )
            )
    return rendered


def _anthropic_block(block: dict[str, Any], path: str) -> Item:
    kind = _str(_require(block, "type", path), f"{path}.type")
    if kind == "text":
        return _str(_require(block, "text", path), f"{path}.text")
    if kind in ("image", "document"):
        source = _require(block, "source", path)
        if kind == "document" and isinstance(source, dict) and source.get("type") == "text":
            return _str(_require(source, "data", f"{path}.source"), f"{path}.source.data")
        return NonText(_digest(source), ANTHROPIC_IMAGE_ESTIMATE)
    if kind == "tool_use":
        return _compact({"name": _require(block, "name", path), "input": block.get("input", {})})
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, list):
            return _compact(content)
        return _str(content, f"{path}.content")
    if kind in ("thinking", "redacted_thinking"):
        return str(block.get("thinking", block.get("data", "")))
    raise FieldError(f"{path}.type", f"unsupported content block type {kind!r}")


# --- Gemini generateContent --------------------------------------------------------------


def _render_gemini(body: dict[str, Any]) -> Rendered:
    rendered = Rendered("gemini", [], exact=False)
    tools = body.get("tools")
    if tools is not None:
        rendered.parts.extend(_tool_parts(tools, "tools"))
    system = body.get("systemInstruction", body.get("system_instruction"))
    if system is not None:
        system = _dict(system, "systemInstruction")
        items = _gemini_parts(system.get("parts", []), "systemInstruction.parts")
        rendered.parts.append(Part("system", "systemInstruction", "system", items))
    contents = _list(body["contents"], "contents")
    for index, content in enumerate(contents):
        path = f"contents[{index}]"
        content = _dict(content, path)
        role = content.get("role", "user")
        items = _gemini_parts(_require(content, "parts", path), f"{path}.parts")
        rendered.parts.append(Part("message", path, _str(role, f"{path}.role"), items))
    return rendered


def _gemini_parts(parts: Any, path: str) -> list[Item]:
    items: list[Item] = []
    for index, part in enumerate(_list(parts, path)):
        part_path = f"{path}[{index}]"
        part = _dict(part, part_path)
        if "text" in part:
            items.append(_str(part["text"], f"{part_path}.text"))
        elif "inlineData" in part or "fileData" in part or "inline_data" in part:
            items.append(NonText(_digest(part), GEMINI_IMAGE_TOKENS))
        elif "functionCall" in part or "functionResponse" in part:
            items.append(_compact(part))
        else:
            raise FieldError(part_path, "expected text, inlineData, fileData or a function part")
    return items


# --- plain prompt and pre-tokenized ------------------------------------------------------


def _render_prompt(body: dict[str, Any]) -> Rendered:
    text = _str(body["prompt"], "prompt")
    part = Part("prompt", "prompt", "", [text], framed=False)
    return Rendered("prompt", [part], reply_priming=False)


def _render_tokens(body: dict[str, Any]) -> Rendered:
    tokens = _list(body["tokens"], "tokens")
    for index, token in enumerate(tokens):
        if not isinstance(token, int) or isinstance(token, bool) or token < 0:
            raise FieldError(f"tokens[{index}]", f"expected a non-negative integer, got {token!r}")
    return Rendered("tokens", [], reply_priming=False, tokens=tokens)
