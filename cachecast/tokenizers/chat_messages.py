"""OpenAI chat bodies -> the messages and tools a Hugging Face chat template is given.

An open model's prompt is whatever its chat template renders from the structures the
serving engine hands it, and vLLM's OpenAI-compatible server normalizes a request before
rendering. To compute the prompt tokens the engine computes, cachecast hands the template the
same structures; the rules (vLLM 0.32) are listed in ``docs/engine-tokenization.md`` and the
engine tests compare both tokenizations on a served model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from cachecast.core.errors import RecordFieldError

BILLING_HEADER = "x-anthropic-billing-header"  # a system text line vLLM drops (volatile)


@dataclass(frozen=True, slots=True)
class TemplateInput:
    """What the template receives: one message per body message (same order), the tools,
    and whether that is exactly what the engine would hand it."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    exact: bool


def template_input(body: dict[str, Any]) -> TemplateInput:
    """The chat template's input for an OpenAI Chat Completions ``body``."""
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list):
        raise RecordFieldError("messages", "expected a list")
    exact = True
    messages: list[dict[str, Any]] = []
    for index, raw in enumerate(raw_messages):
        message, message_exact = _message(raw, f"messages[{index}]")
        messages.append(message)
        exact = exact and message_exact
    # vLLM merges system messages into the first one when a developer message became one;
    # a later system message as such is left in place, as the template is given it.
    if any(m["role"] == "system" for m in messages[1:]) and any(
        isinstance(raw, dict) and raw.get("role") == "developer" for raw in raw_messages
    ):
        exact = False
    tools = body.get("tools")
    return TemplateInput(messages, None if tools is None else _tools(tools), exact)


def _message(raw: Any, path: str) -> tuple[dict[str, Any], bool]:
    if not isinstance(raw, dict):
        raise RecordFieldError(path, f"expected an object, got {type(raw).__name__}")
    role = raw.get("role")
    if not isinstance(role, str):
        raise RecordFieldError(f"{path}.role", "missing or not a string")
    content, exact = _content(raw.get("content"), f"{path}.content", system=role == "system")
    message: dict[str, Any] = {"role": "system" if role == "developer" else role}
    message["content"] = content
    if role == "assistant" and raw.get("tool_calls") is not None:
        calls = raw["tool_calls"]
        if not isinstance(calls, list):
            raise RecordFieldError(f"{path}.tool_calls", "expected a list")
        if calls:  # an empty list is dropped, so the template takes the plain path
            message["tool_calls"] = [
                _tool_call(call, f"{path}.tool_calls[{number}]")
                for number, call in enumerate(calls)
            ]
    if role == "tool" and "tool_call_id" in raw:
        message["tool_call_id"] = raw["tool_call_id"]
    if isinstance(raw.get("name"), str):
        message["name"] = raw["name"]
    return message, exact


def _content(value: Any, path: str, *, system: bool) -> tuple[str, bool]:
    """A message's text: a string as is; a list's text parts joined by newlines (other parts
    are not text to the template: inexact); null is empty."""
    if value is None:
        return "", True
    if isinstance(value, str):
        parts: list[Any] = [value]
    elif isinstance(value, list):
        parts = value
    else:
        raise RecordFieldError(path, f"expected a string or a list, got {type(value).__name__}")
    texts: list[str] = []
    exact = True
    for number, part in enumerate(parts):
        if isinstance(part, str):
            text = part
        elif isinstance(part, dict) and part.get("type") == "text":
            if not isinstance(part.get("text"), str):
                raise RecordFieldError(f"{path}[{number}].text", "missing or not a string")
            text = part["text"]
        else:
            exact = False
            continue
        if system and text.startswith(BILLING_HEADER):
            text = text.partition("\n")[2]
            if not text:
                continue
        texts.append(text)
    return "\n".join(texts), exact


def _tool_call(call: Any, path: str) -> dict[str, Any]:
    if not isinstance(call, dict):
        raise RecordFieldError(path, "expected an object")
    function = call.get("function")
    if call.get("type", "function") != "function" or not isinstance(function, dict):
        raise RecordFieldError(path, "only tool calls of type 'function' with a function object")
    arguments = function.get("arguments")
    parsed: Any = {}
    if isinstance(arguments, dict):
        parsed = arguments
    elif isinstance(arguments, str) and arguments:
        try:
            parsed = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            parsed = {}  # vLLM coerces unparsable arguments to an empty object
    elif arguments:
        parsed = arguments
    if not isinstance(parsed, dict):
        parsed = {}
    return {**call, "function": {**function, "arguments": parsed}}


def _tools(value: Any) -> list[dict[str, Any]]:
    """Tool definitions as vLLM's request model dumps them: fixed keys in a fixed order."""
    if not isinstance(value, list):
        raise RecordFieldError("tools", "expected a list")
    tools = []
    for number, tool in enumerate(value):
        path = f"tools[{number}]"
        if not isinstance(tool, dict):
            raise RecordFieldError(path, "expected an object")
        if tool.get("type", "function") != "function":
            raise RecordFieldError(f"{path}.type", "only tools of type 'function' are supported")
        function = tool.get("function")
        if not isinstance(function, dict):
            raise RecordFieldError(f"{path}.function", "missing or not an object")
        name = function.get("name")
        if not isinstance(name, str):
            raise RecordFieldError(f"{path}.function.name", "missing or not a string")
        dumped: dict[str, Any] = {
            "name": name,
            "description": function.get("description"),
            "parameters": function.get("parameters"),
        }
        defer = function.get("defer_loading")
        if defer is None:  # the tool's own flag is carried into its function
            defer = tool.get("defer_loading")
        for key, value_ in (("strict", function.get("strict")), ("defer_loading", defer)):
            if value_ is not None:
                dumped[key] = value_
        entry: dict[str, Any] = {"type": "function", "function": dumped}
        if tool.get("defer_loading") is not None:
            entry["defer_loading"] = tool["defer_loading"]
        tools.append(entry)
    return tools
