"""The prompt text of a log record, part by part in prompt order, for people to read.

Token positions come from the tokenizers; this view only names parts and quotes their text
(divergence excerpts, volatile spans, rewritten layouts). Labels follow the record's own
paths (``tools[1]``, ``messages[0]``), the same paths the
tokenizers put on their segments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

_WRAPPER_KEYS = ("request", "body")


@dataclass(frozen=True, slots=True)
class Part:
    label: str
    kind: str  # system, tool, message, prompt
    role: str | None
    text: str
    breakpoint: bool = False  # a cache_control marker ends this part


def request_body(record: dict[str, Any]) -> dict[str, Any]:
    """The request body inside a log record (a wrapper's ``request``/``body``, or the record)."""
    for key in _WRAPPER_KEYS:
        inner = record.get(key)
        if isinstance(inner, dict):
            return inner
    return record


def tool_text(tool: Any) -> str:
    # Compact JSON in the tool's own key order, as the tokenizers render a tool definition
    # (its cache_control marker is not part of the prompt).
    if isinstance(tool, dict):
        tool = {key: value for key, value in tool.items() if key != "cache_control"}
    return json.dumps(tool, ensure_ascii=False, separators=(",", ":"))


def _has_marker(value: Any) -> bool:
    if isinstance(value, dict):
        return "cache_control" in value
    if isinstance(value, list):
        return any(isinstance(block, dict) and "cache_control" in block for block in value)
    return False


def tool_name(tool: Any) -> str:
    if isinstance(tool, dict):
        function = tool.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return str(function["name"])
        if isinstance(tool.get("name"), str):
            return str(tool["name"])
    return tool_text(tool)[:40]


def _content_text(content: Any) -> str:
    """A message's text: its text parts joined without a separator (as the tokenizers do)."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif isinstance(block, str):
                texts.append(block)
    return "".join(texts)


def prompt_parts(record: dict[str, Any]) -> list[Part]:
    """The record's prompt, part by part, in the order providers build the prefix: tools,
    then the system prompt, then the messages."""
    body = request_body(record)
    parts: list[Part] = []
    for index, tool in enumerate(body.get("tools") or []):
        parts.append(Part(f"tools[{index}]", "tool", None, tool_text(tool), _has_marker(tool)))
    if "system" in body:  # Anthropic-style top-level system
        system = body["system"]
        parts.append(Part("system", "system", "system", _content_text(system), _has_marker(system)))
    for index, message in enumerate(body.get("messages") or []):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        kind = "system" if role in ("system", "developer") else "message"
        content = message.get("content")
        parts.append(
            Part(f"messages[{index}]", kind, role, _content_text(content), _has_marker(content))
        )
    if isinstance(body.get("prompt"), str):
        parts.append(Part("prompt", "prompt", None, body["prompt"]))
    return parts


def part_by_label(record: dict[str, Any], label: str) -> Part | None:
    for part in prompt_parts(record):
        if part.label == label or label.startswith(part.label + "."):
            return part
    return None


def template_key(record: dict[str, Any]) -> tuple[str, ...]:
    """What makes two requests 'the same template': the model, the set of tools, and the roles
    of the parts that open the prompt (system and the first message)."""
    body = request_body(record)
    tools = sorted(tool_name(tool) for tool in body.get("tools") or [])
    roles = [str(m.get("role")) for m in (body.get("messages") or [])[:1] if isinstance(m, dict)]
    return (str(body.get("model", "")), "system" if "system" in body else "", *roles, *tools)
