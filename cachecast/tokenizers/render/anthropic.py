"""Anthropic Messages bodies (``tools``, ``system``, ``messages``, ``cache_control``) ->
rendered parts.

Each tool, system block and content block is its own framed part (an approximation:
Anthropic's tokenizer and framing are not public), so a ``cache_control`` breakpoint falls
exactly at the end of the block that carries it. The order is the one Anthropic documents
for its cache prefix: tools, system, messages. A request-level ``cache_control``
("automatic caching") puts one more breakpoint on the last cacheable block, and the API's
limit of 4 breakpoints per request is enforced.
"""

from __future__ import annotations

from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.tokenizers.render.conversation import Conversation, breakpoint_ttl, tool_parts
from cachecast.tokenizers.render.fields import as_dict, as_list, as_str, compact_json, require
from cachecast.tokenizers.render.images import base64_image_tokens
from cachecast.tokenizers.render.parts import NonText, PartItem, Rendered, RenderedPart

ANTHROPIC_IMAGE_ESTIMATE = 1600  # about (width*height)/750 for a ~1.15 megapixel image
ANTHROPIC_MAX_BREAKPOINTS = 4  # the Messages API rejects a request with more (400)


def looks_anthropic(body: dict[str, Any]) -> bool:
    """Whether a body with ``messages`` is an Anthropic one though no provider says so."""
    if "anthropic_version" in body:  # Bedrock InvokeModel and Vertex AI Anthropic bodies
        return True
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


def _anthropic_header(body: dict[str, Any], rendered: Rendered) -> bool:
    if "tools" in body:
        rendered.parts.extend(tool_parts(body["tools"], "tools"))
        rendered.chat_tools = list(body["tools"])
    system = body.get("system")
    if isinstance(system, str):
        rendered.parts.append(RenderedPart("system", "system", "system", [system]))
    elif system is not None:
        for index, block in enumerate(as_list(system, "system")):
            path = f"system[{index}]"
            block = as_dict(block, path)
            text = as_str(require(block, "text", path), f"{path}.text")
            rendered.parts.append(
                RenderedPart("system", path, "system", [text], breakpoint_ttl(block, path))
            )
    return False


def _anthropic_message(message: Any, path: str, rendered: Rendered) -> bool:
    message = as_dict(message, path)
    role = as_str(require(message, "role", path), f"{path}.role")
    content = require(message, "content", path)
    if isinstance(content, str):
        rendered.parts.append(RenderedPart("message", path, role, [content]))
        return False
    for block_index, block in enumerate(as_list(content, f"{path}.content")):
        block_path = f"{path}.content[{block_index}]"
        block = as_dict(block, block_path)
        rendered.parts.append(
            RenderedPart(
                "content",
                block_path,
                role,
                [_anthropic_block(block, block_path)],
                breakpoint_ttl(block, block_path),
                # Thinking blocks cannot carry cache_control, so automatic caching skips them.
                cacheable=block.get("type") not in ("thinking", "redacted_thinking"),
            )
        )
    return False


def _anthropic_block(block: dict[str, Any], path: str) -> PartItem:
    kind = as_str(require(block, "type", path), f"{path}.type")
    if kind == "text":
        return as_str(require(block, "text", path), f"{path}.text")
    if kind in ("image", "document"):
        source = require(block, "source", path)
        if kind == "document" and isinstance(source, dict) and source.get("type") == "text":
            return as_str(require(source, "data", f"{path}.source"), f"{path}.source.data")
        return NonText.of(source, _image_count(kind, source))
    if kind == "tool_use":
        return compact_json({"name": require(block, "name", path), "input": block.get("input", {})})
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, list):
            return compact_json(content)
        return as_str(content, f"{path}.content")
    if kind in ("thinking", "redacted_thinking"):
        return str(block.get("thinking", block.get("data", "")))
    raise RecordFieldError(f"{path}.type", f"unsupported content block type {kind!r}")


def _image_count(kind: str, source: Any) -> int:
    """An inline base64 image counts its documented tokens (``render.images``); any other
    source, and documents (PDF pages are text plus images), the fixed estimate."""
    if kind == "image" and isinstance(source, dict) and isinstance(source.get("data"), str):
        counted = base64_image_tokens(source["data"])
        if counted is not None:
            return counted
    return ANTHROPIC_IMAGE_ESTIMATE


def _automatic_breakpoint(body: dict[str, Any], rendered: Rendered) -> None:
    """Anthropic's top-level ``cache_control`` ("automatic caching") puts a breakpoint on the
    last cacheable block; then enforce the API's limit of 4 breakpoints per request."""
    final = rendered.marks[-1]
    total = final.breakpoints
    marker = body.get("cache_control")
    automatic = 0
    if marker is not None:
        marker = as_dict(marker, "cache_control")
        ttl = marker.get("ttl")
        if ttl is not None and not isinstance(ttl, str):
            raise RecordFieldError("cache_control.ttl", "expected a string such as '5m' or '1h'")
        # On a block that already has its own cache_control, no second breakpoint arises.
        if final.last_cacheable >= 0 and not final.last_cacheable_marked:
            rendered.auto_breakpoint_part = final.last_cacheable
            rendered.auto_breakpoint_ttl = ttl
            automatic = 1
    if total + automatic > ANTHROPIC_MAX_BREAKPOINTS:
        how = f"{total} on blocks" + (" + 1 from the top-level cache_control" if automatic else "")
        raise RecordFieldError(
            "cache_control",
            f"{total + automatic} cache breakpoints ({how}); the Anthropic API accepts at most "
            f"{ANTHROPIC_MAX_BREAKPOINTS} per request and rejects this one",
        )


CONVERSATION = Conversation(
    False, "messages", _anthropic_header, _anthropic_message, _automatic_breakpoint
)
