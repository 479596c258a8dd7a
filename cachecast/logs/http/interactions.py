"""Gemini's Interactions API (``POST .../v1beta/interactions``, generally available since June
2026 and the API Google recommends for new projects) read as the generateContent call it stands
for (docs/log-formats.md, "Recorded HTTP").

A request body (Google's Interactions API guide,
https://ai.google.dev/gemini-api/docs/interactions; the step shapes as recorded calls of
tidyverse/ellmer show them, docs/log-formats.md): ``model``, ``system_instruction`` (text),
``input`` (text, or a list of typed steps: ``user_input`` and ``model_output`` with ``content``
parts, ``function_call`` with ``name`` and ``arguments``, ``function_result`` with ``name`` and
``result``, ``thought`` with an opaque ``signature``), ``tools`` (``{"type": "function", name,
description, parameters}``), ``generation_config``, ``store``, ``previous_interaction_id``. Read
as ``systemInstruction``, ``contents`` (user and model turns, function calls and responses as
generateContent's parts) and ``functionDeclarations``. A thought step's signature (opaque
state handed back) is left out.

The prompt read is not the whole prompt where the request continues a stored interaction
(``previous_interaction_id``: the earlier turns are the server's), or holds a step, part or tool
of a kind not read here.

A response is an ``interaction`` object: ``model``, ``steps`` (the new steps), ``usage``:
``total_input_tokens`` (the prompt), ``total_cached_tokens`` (the cached part of the prompt),
``total_output_tokens``, ``total_thought_tokens``, ``total_tool_use_tokens``, ``total_tokens``
(the ``Usage`` type of Google's js-genai SDK reference,
https://googleapis.github.io/js-genai/release_docs/types/gaos_models_interactions_usage.Usage.html,
and Google Cloud's REST reference,
https://docs.cloud.google.com/gemini-enterprise-agent-platform/reference/rest/v1beta1/Usage).
Those are generateContent's ``promptTokenCount``, ``cachedContentTokenCount`` (a part of the
prompt), ``candidatesTokenCount``, ``thoughtsTokenCount``, ``toolUsePromptTokenCount`` and
``totalTokenCount``, and are read as them.
"""

from __future__ import annotations

from typing import Any

from cachecast.core.errors import RecordFieldError

# Interactions usage -> generateContent usageMetadata (see the module docstring).
USAGE_FIELDS = {
    "total_input_tokens": "promptTokenCount",
    "total_cached_tokens": "cachedContentTokenCount",
    "total_output_tokens": "candidatesTokenCount",
    "total_thought_tokens": "thoughtsTokenCount",
    "total_tool_use_tokens": "toolUsePromptTokenCount",
    "total_tokens": "totalTokenCount",
}


def _text_parts(content: Any, field: str) -> tuple[list[dict[str, Any]], bool]:
    """A step's ``content`` as generateContent text parts, and whether every part was text."""
    if isinstance(content, str):
        return [{"text": content}], True
    if not isinstance(content, list):
        raise RecordFieldError(field, "expected text or a list of content parts")
    parts: list[dict[str, Any]] = []
    whole = True
    for index, part in enumerate(content):
        if (
            isinstance(part, dict)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        ):
            parts.append({"text": part["text"]})
        elif isinstance(part, dict):
            whole = False  # an image, a document, audio: not read as text
        else:
            raise RecordFieldError(f"{field}[{index}]", "expected a content part object")
    return parts, whole


def _turn(contents: list[dict[str, Any]], role: str, parts: list[dict[str, Any]]) -> None:
    """Append ``parts`` to the last turn where it is ``role``'s, else as a new turn."""
    if not parts:
        return
    if contents and contents[-1]["role"] == role:
        contents[-1]["parts"].extend(parts)
    else:
        contents.append({"role": role, "parts": list(parts)})


def _contents(steps: Any, field: str) -> tuple[list[dict[str, Any]], bool]:
    if isinstance(steps, str):
        return [{"role": "user", "parts": [{"text": steps}]}], True
    if not isinstance(steps, list):
        raise RecordFieldError(field, "expected text or a list of steps")
    contents: list[dict[str, Any]] = []
    whole = True
    for index, step in enumerate(steps):
        where = f"{field}[{index}]"
        if not isinstance(step, dict):
            raise RecordFieldError(where, "expected a step object")
        kind = step.get("type")
        if kind in ("user_input", "model_output"):
            parts, read = _text_parts(step.get("content"), f"{where}.content")
            _turn(contents, "user" if kind == "user_input" else "model", parts)
            whole = whole and read
        elif kind == "function_call":
            call = {"name": step.get("name"), "args": step.get("arguments") or {}}
            _turn(contents, "model", [{"functionCall": call}])
        elif kind == "function_result":
            reply = {"name": step.get("name"), "response": {"result": step.get("result")}}
            _turn(contents, "user", [{"functionResponse": reply}])
        elif kind == "thought":
            continue  # an opaque signature handed back (see the module docstring)
        else:
            whole = False
    return contents, whole


def interactions_as_gemini(body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """An Interactions API request body as the generateContent body it stands for, and
    whether that is the whole prompt."""
    contents, whole = _contents(body.get("input", []), "request.body.input")
    gemini: dict[str, Any] = {"contents": contents}
    if isinstance(body.get("model"), str):
        gemini["model"] = body["model"]
    system = body.get("system_instruction")
    if isinstance(system, str):
        gemini["systemInstruction"] = {"parts": [{"text": system}]}
    elif system is not None:
        whole = False
    declarations: list[dict[str, Any]] = []
    tools = body.get("tools")
    for index, tool in enumerate(tools if isinstance(tools, list) else []):
        if not isinstance(tool, dict):
            raise RecordFieldError(f"request.body.tools[{index}]", "expected a tool object")
        if tool.get("type") != "function":
            whole = False  # a built-in tool (search, code execution): Google's own definition
            continue
        declarations.append(
            {key: tool[key] for key in ("name", "description", "parameters") if key in tool}
        )
    if declarations:
        gemini["tools"] = [{"functionDeclarations": declarations}]
    if body.get("previous_interaction_id"):
        whole = False  # the earlier turns are stored on the server, not in this body
    return gemini, whole


def interactions_response_as_gemini(response: Any) -> Any:
    """An ``interaction`` response as a generateContent response: its usage as
    ``usageMetadata``, its model as ``modelVersion``, its new text and function calls as the
    candidate's parts. Anything else (a stream of events) is handed on as it is."""
    if not isinstance(response, dict) or not isinstance(response.get("usage"), dict):
        return response
    usage = response["usage"]
    metadata = {name: usage[key] for key, name in USAGE_FIELDS.items() if key in usage}
    parts: list[dict[str, Any]] = []
    steps = response.get("steps")
    for step in steps if isinstance(steps, list) else []:
        if not isinstance(step, dict):
            continue
        if step.get("type") == "model_output" and isinstance(step.get("content"), list):
            parts.extend(
                {"text": part["text"]}
                for part in step["content"]
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
        elif step.get("type") == "function_call":
            parts.append(
                {"functionCall": {"name": step.get("name"), "args": step.get("arguments") or {}}}
            )
    gemini: dict[str, Any] = {
        "candidates": [{"content": {"role": "model", "parts": parts}}],
        "usageMetadata": metadata,
    }
    if isinstance(response.get("model"), str):
        gemini["modelVersion"] = response["model"]
    if isinstance(response.get("id"), str):
        gemini["responseId"] = response["id"]
    return gemini
