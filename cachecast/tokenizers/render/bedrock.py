"""Bedrock Converse bodies (``toolConfig``, ``system``, ``messages``) -> rendered parts.

Tools (``toolConfig.tools``), then system blocks, then messages: the order of Bedrock's cache
prefix for Claude models, as for Anthropic's own API. Content blocks are keyed by their kind
(``{"text": ...}``, ``{"toolUse": ...}``) and each is its own framed part. A
``{"cachePoint": {...}}`` block is a cache breakpoint at the end of what comes before it: it
becomes an empty, unframed part carrying the breakpoint (so it needs no earlier part to be at
hand). A text-format document (txt, md, csv, html) counts as its text; images, other
documents and videos count Anthropic's image estimate, except an inline image whose pixel
size its bytes give (``render.images``: Claude's documented count).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.tokenizers.render.anthropic import ANTHROPIC_IMAGE_ESTIMATE
from cachecast.tokenizers.render.conversation import Conversation
from cachecast.tokenizers.render.fields import as_dict, as_list, as_str, compact_json, require
from cachecast.tokenizers.render.images import base64_image_tokens
from cachecast.tokenizers.render.parts import NonText, PartItem, Rendered, RenderedPart


def looks_converse(body: dict[str, Any]) -> bool:
    """Bedrock Converse (and Nova's InvokeModel body): content blocks are keyed by kind
    (``{"text": ...}``, ``{"toolUse": ...}``, ``{"cachePoint": ...}``) with no ``type``."""
    if "toolConfig" in body or "inferenceConfig" in body:
        return True
    system = body.get("system")
    if type(system) is list and system and type(system[0]) is dict and "type" not in system[0]:
        return True
    messages = body["messages"]
    if type(messages) is list and messages and type(messages[0]) is dict:
        content = messages[0].get("content")
        if type(content) is list and content and type(content[0]) is dict:
            return "type" not in content[0]
    return False


def _converse_header(body: dict[str, Any], rendered: Rendered) -> bool:
    config = body.get("toolConfig")
    if config is not None:
        config = as_dict(config, "toolConfig")
        for index, tool in enumerate(as_list(config.get("tools", []), "toolConfig.tools")):
            path = f"toolConfig.tools[{index}]"
            tool = as_dict(tool, path)
            if "cachePoint" in tool:
                rendered.parts.append(_cache_point(tool, path))
            else:
                rendered.parts.append(RenderedPart("tool", path, "system", [compact_json(tool)]))
        rendered.chat_tools = list(config.get("tools", []))
    system = body.get("system")
    if system is not None:
        for index, block in enumerate(as_list(system, "system")):
            path = f"system[{index}]"
            block = as_dict(block, path)
            if "cachePoint" in block:
                rendered.parts.append(_cache_point(block, path))
            elif "text" in block:
                text = as_str(block["text"], f"{path}.text")
                rendered.parts.append(RenderedPart("system", path, "system", [text]))
            else:
                rendered.parts.append(RenderedPart("system", path, "system", [compact_json(block)]))
    return False


def _converse_message(message: Any, path: str, rendered: Rendered) -> bool:
    message = as_dict(message, path)
    role = as_str(require(message, "role", path), f"{path}.role")
    blocks = as_list(require(message, "content", path), f"{path}.content")
    for index, block in enumerate(blocks):
        block_path = f"{path}.content[{index}]"
        block = as_dict(block, block_path)
        if "cachePoint" in block:
            rendered.parts.append(_cache_point(block, block_path))
            continue
        rendered.parts.append(
            RenderedPart("content", block_path, role, [_converse_block(block, block_path)])
        )
    return False


def _cache_point(block: dict[str, Any], path: str) -> RenderedPart:
    point = as_dict(block["cachePoint"], f"{path}.cachePoint")
    ttl = point.get("ttl")
    if ttl is not None and not isinstance(ttl, str):
        raise RecordFieldError(f"{path}.cachePoint.ttl", "expected '5m' or '1h'")
    return RenderedPart("content", path, "", [], ttl, framed=False)


def _converse_block(block: dict[str, Any], path: str) -> PartItem:
    if "text" in block:
        return as_str(block["text"], f"{path}.text")
    if "toolUse" in block:
        use = as_dict(block["toolUse"], f"{path}.toolUse")
        name = require(use, "name", f"{path}.toolUse")
        return compact_json({"name": name, "input": use.get("input", {})})
    if "toolResult" in block:
        result = as_dict(block["toolResult"], f"{path}.toolResult")
        return compact_json(result.get("content", []))
    if "reasoningContent" in block:
        reasoning = as_dict(block["reasoningContent"], f"{path}.reasoningContent")
        text = reasoning.get("reasoningText")
        if isinstance(text, dict) and isinstance(text.get("text"), str):
            return str(text["text"])
        return ""  # redacted reasoning: no text to count
    if "document" in block:
        text = _document_text(block["document"])
        if text is not None:
            return text
    if "image" in block:
        image = block["image"]
        source = image.get("source") if isinstance(image, dict) else None
        if isinstance(source, dict) and isinstance(source.get("bytes"), str):
            counted = base64_image_tokens(source["bytes"])
            if counted is not None:
                return NonText.of(image, counted)
    for kind in ("image", "document", "video"):
        if kind in block:
            return NonText.of(block[kind], ANTHROPIC_IMAGE_ESTIMATE)
    if "guardContent" in block:
        return compact_json(block["guardContent"])
    raise RecordFieldError(
        path,
        "expected a text, image, document, toolUse, toolResult, reasoningContent or cachePoint"
        " block",
    )


# DocumentBlock formats that are text (the others, pdf/doc/docx/xls/xlsx, are binary files).
TEXT_DOCUMENT_FORMATS = frozenset({"txt", "md", "csv", "html"})


def _document_text(document: Any) -> str | None:
    """The text of a text-format Converse document: ``source.text``, or ``source.bytes``
    (base64 in the JSON wire form) decoded as UTF-8; None for binary formats, S3 sources and
    bytes that are not UTF-8 text (those keep the fixed estimate). Claude reads a plain-text
    document as its text, as the Messages API's ``{"type": "text"}`` document source."""
    if not isinstance(document, dict) or document.get("format") not in TEXT_DOCUMENT_FORMATS:
        return None
    source = document.get("source")
    if not isinstance(source, dict):
        return None
    if isinstance(source.get("text"), str):
        return str(source["text"])
    data = source.get("bytes")
    if not isinstance(data, str):
        return None
    try:
        return base64.b64decode(data, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


CONVERSATION = Conversation(False, "messages", _converse_header, _converse_message)
