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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from cachecast.core.errors import RecordFieldError
from cachecast.tokenizers.types import Breakpoint, Segment

# Token counts for one image (documented provider rules; dims are not in the log).
OPENAI_IMAGE_LOW_TOKENS = 85  # detail=low, fixed (OpenAI vision pricing docs)
OPENAI_IMAGE_HIGH_ESTIMATE = 765  # 1024x1024 at detail=high: 85 + 4 tiles x 170
ANTHROPIC_IMAGE_ESTIMATE = 1600  # about (width*height)/750 for a ~1.15 megapixel image
GEMINI_IMAGE_TOKENS = 258  # Gemini: an image up to 384 px per side is 258 tokens
ANTHROPIC_MAX_BREAKPOINTS = 4  # the Messages API rejects a request with more (400)


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
    cacheable: bool = True  # False where the API refuses cache_control (thinking blocks)
    # Breakpoints inside the part: (number of leading items they follow, TTL name or None).
    # OpenAI's prompt_cache_breakpoint marks one content part of a message, not the message.
    inner_breakpoints: list[tuple[int, str | None]] = field(default_factory=list)

    def text(self) -> str:
        return "".join(item for item in self.items if isinstance(item, str))


@dataclass(frozen=True, slots=True)
class Mark:
    """Running totals after the header (tools, system) and the first i messages: what a later
    request whose body starts with the same header and messages takes over unchanged."""

    parts: int  # parts so far (one segment each)
    breakpoints: int  # explicit cache_control breakpoints so far
    last_cacheable: int  # index of the last part that may carry a breakpoint, -1: none
    last_cacheable_marked: bool  # that part carries an explicit breakpoint itself
    exact: bool
    last_eligible: int = -1  # the last part of a message an OpenAI breakpoint may end


@dataclass(slots=True)
class Rendered:
    """A request body reduced to parts; ``exact`` is False where our rendering guesses.

    Conversations (chat, responses, anthropic, gemini) also keep ``marks`` (one per message
    boundary) and their body, so that a later request extending the same conversation can
    take over this one's leading parts instead of rendering them again (:func:`render_after`):
    it then has ``prefix`` set to this request, ``prefix_parts`` / ``prefix_breakpoints``
    taken from it, and ``parts`` holding only the parts after them. The encoder stores this
    request's result in the ``encoded_*`` fields for such later requests.
    """

    api: str
    parts: list[Part]
    exact: bool = True
    reply_priming: bool = True
    tokens: list[int] | None = None  # pre-tokenized input
    chat_tools: list[dict[str, Any]] | None = None
    body: dict[str, Any] | None = None
    header_json: bytes | None = None  # see _header_json; filled when first compared
    marks: list[Mark] = field(default_factory=list)  # marks[i]: header + messages[:i]
    auto_breakpoint_part: int = -1  # Anthropic top-level cache_control: its part, -1: none
    auto_breakpoint_ttl: str | None = None
    # OpenAI request-level controls (prompt_cache_options, prompt_cache_retention): the part
    # ending the newest message the implicit breakpoint may go on (-1: none), whether the
    # implicit breakpoint is on (mode "implicit", the default), the request's TTL name.
    implicit_part: int = -1
    implicit_breakpoint: bool = True
    cache_ttl: str | None = None
    prefix: Rendered | None = None
    prefix_parts: int = 0
    prefix_breakpoints: int = 0
    encoded_tokens: Any = None
    encoded_segments: tuple[Segment, ...] = ()
    encoded_explicit_breakpoints: tuple[Breakpoint, ...] = ()

    @property
    def part_count(self) -> int:
        """All parts of the request, those taken over from ``prefix`` included."""
        return self.prefix_parts + len(self.parts)


def detect_api(body: dict[str, Any], provider: str | None) -> str:
    """Which API shape a body has: chat, responses, anthropic, bedrock (Converse), gemini,
    prompt, tokens."""
    if "tokens" in body:
        return "tokens"
    if "prompt" in body and "messages" not in body:
        return "prompt"
    if "contents" in body:
        return "gemini"
    if "messages" in body:
        if _looks_converse(body):
            return "bedrock"
        if provider == "anthropic" or _looks_anthropic(body):
            return "anthropic"
        return "chat"
    if "input" in body or "instructions" in body:
        return "responses"
    raise RecordFieldError(
        "request", "no prompt found: expected messages, input, contents, prompt or tokens"
    )


def conversation_field(api: str) -> str | None:
    """The field holding a conversation API's message list; None for other APIs."""
    conversation = _CONVERSATIONS.get(api)
    return None if conversation is None else conversation.field


def render(body: dict[str, Any], api: str) -> Rendered:
    conversation = _CONVERSATIONS.get(api)
    if conversation is not None:
        return conversation.render(body, api)
    if api == "prompt":
        return _render_prompt(body)
    return _render_tokens(body)


def render_after(body: dict[str, Any], api: str, previous: Rendered) -> Rendered | None:
    """Render ``body`` taking over the leading parts of ``previous``, an earlier request of
    the same conversation, or None when they share nothing reusable.

    Reuse needs the same API, every field other than the message list equal (tools, system,
    top-level cache_control...: the header and the breakpoint rules come from them) and then
    holds for the longest run of leading messages equal to ``previous``'s. Equal means equal
    as JSON text (:func:`_header_json`, :func:`_same_message`): Python's ``==`` alone would
    take ``1``, ``1.0`` and ``true`` or two key orders as equal, which render differently.
    """
    conversation = _CONVERSATIONS.get(api)
    old_body = previous.body
    if conversation is None or previous.api != api or old_body is None:
        return None
    name = conversation.field
    messages = body.get(name)
    old_messages = old_body.get(name)
    if type(messages) is not list or type(old_messages) is not list:
        return None
    if len(body) != len(old_body):
        return None
    header = _header_json(body, name)
    if previous.header_json is None:
        previous.header_json = _header_json(old_body, name)
    if header != previous.header_json:
        return None
    common = 0
    for new, old in zip(messages, old_messages, strict=False):
        if not _same_message(new, old):
            break
        common += 1
    mark = previous.marks[common]
    rendered = Rendered(
        api,
        [],
        exact=mark.exact,
        chat_tools=previous.chat_tools,
        body=body,
        header_json=header,
        marks=previous.marks[: common + 1],
        prefix=previous,
        prefix_parts=mark.parts,
        prefix_breakpoints=mark.breakpoints,
    )
    conversation.messages(rendered, messages, common)
    _automatic_breakpoint(body, rendered)
    _request_controls(body, rendered)
    return rendered


def _header_json(body: dict[str, Any], messages_field: str) -> bytes:
    """Every field but the messages, as JSON text: equal text, equal header and rules.
    (One serialization per request is cheaper than walking the tool schemas each time.)"""
    return orjson.dumps({key: value for key, value in body.items() if key != messages_field})


def _same_message(a: Any, b: Any) -> bool:
    """Whether two messages render the same: equal as JSON text, except that the order of
    their own keys does not matter: every renderer reads a message's fields by name (nested
    values are rendered as JSON text, so their key order still does)."""
    if a != b:
        return False
    if type(a) is not dict or type(b) is not dict:
        return _same_types(a, b)
    for key, value in a.items():
        if type(value) is not str and not _same_types(value, b[key]):
            return False
    return True


def _same_types(a: Any, b: Any) -> bool:
    """For values already ``==``: same types all through (``1 == 1.0 == True`` in Python)
    and the same key order (tool definitions render their keys in the given order)."""
    kind = type(a)
    if kind is not type(b):
        return False
    # Plain loops, strings skipped (already equal, and only ever equal to strings): this
    # runs on every message of every request and a generator per level costs more.
    if kind is dict:
        if list(a) != list(b):
            return False
        for key, value in a.items():
            if type(value) is not str and not _same_types(value, b[key]):
                return False
        return True
    if kind is list:
        for x, y in zip(a, b, strict=True):
            if type(x) is not str and not _same_types(x, y):
                return False
    return True


@dataclass(frozen=True, slots=True)
class _Conversation:
    """How one API's conversation renders: the header (tools, system), the message list's
    field, and one message's parts; the message loop and the marks are shared."""

    exact: bool
    field: str
    header: Callable[[dict[str, Any], Rendered], bool]
    message: Callable[[Any, str, Rendered], bool]

    def render(self, body: dict[str, Any], api: str) -> Rendered:
        rendered = Rendered(api, [], exact=self.exact, body=body)
        start = Mark(0, 0, -1, False, self.exact)
        rendered.marks.append(_advance(start, rendered, self.header(body, rendered)))
        messages = _require(body, self.field, "")
        if self.field == "input" and isinstance(messages, str):  # Responses: one string
            self.message(messages, self.field, rendered)
            rendered.exact = rendered.exact and rendered.marks[-1].exact
            rendered.body = None  # nothing to take over from a non-list input
            _automatic_breakpoint(body, rendered)
            _request_controls(body, rendered)
            return rendered
        self.messages(rendered, _list(messages, self.field), 0)
        _automatic_breakpoint(body, rendered)
        _request_controls(body, rendered)
        return rendered

    def messages(self, rendered: Rendered, messages: list[Any], first: int) -> None:
        mark = rendered.marks[-1]
        marks = rendered.marks
        name = self.field
        for index in range(first, len(messages)):
            exact = self.message(messages[index], f"{name}[{index}]", rendered)
            mark = _advance(mark, rendered, exact)
            marks.append(mark)
        rendered.exact = mark.exact


def _advance(mark: Mark, rendered: Rendered, exact: bool) -> Mark:
    """The mark after the parts appended since ``mark``."""
    breakpoints = mark.breakpoints
    last = mark.last_cacheable
    marked = mark.last_cacheable_marked
    eligible = mark.last_eligible
    offset = rendered.prefix_parts
    parts = rendered.parts
    for index in range(mark.parts - offset, len(parts)):
        part = parts[index]
        has_breakpoint = part.breakpoint_ttl != NO_BREAKPOINT
        breakpoints += has_breakpoint + len(part.inner_breakpoints)
        if part.cacheable:
            last = offset + index
            marked = has_breakpoint
        if part.framed and part.kind != "tool" and part.role != "assistant":
            eligible = offset + index
    return Mark(offset + len(parts), breakpoints, last, marked, mark.exact and exact, eligible)


def _automatic_breakpoint(body: dict[str, Any], rendered: Rendered) -> None:
    """Anthropic's top-level ``cache_control`` ("automatic caching") puts a breakpoint on the
    last cacheable block; then enforce the API's limit of 4 breakpoints per request."""
    if rendered.api != "anthropic":
        return
    final = rendered.marks[-1]
    total = final.breakpoints
    marker = body.get("cache_control")
    automatic = 0
    if marker is not None:
        marker = _dict(marker, "cache_control")
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


OPENAI_CACHE_MODES = ("implicit", "explicit")


def _request_controls(body: dict[str, Any], rendered: Rendered) -> None:
    """OpenAI's request-level caching controls (GPT-5.6+ ``prompt_cache_options`` with
    ``mode`` and ``ttl``; ``prompt_cache_retention`` of the models before it). The implicit
    breakpoint goes at the end of the newest message that may carry one (not an assistant
    message: assistant content takes no ``prompt_cache_breakpoint``)."""
    if rendered.api not in ("chat", "responses"):
        return
    rendered.implicit_part = rendered.marks[-1].last_eligible if rendered.marks else -1
    options = body.get("prompt_cache_options")
    retention = body.get("prompt_cache_retention")
    if options is not None:
        options = _dict(options, "prompt_cache_options")
        mode = options.get("mode", "implicit")
        if mode not in OPENAI_CACHE_MODES:
            raise RecordFieldError(
                "prompt_cache_options.mode", f"expected 'implicit' or 'explicit', got {mode!r}"
            )
        rendered.implicit_breakpoint = mode == "implicit"
        ttl = options.get("ttl")
        if ttl is not None:
            rendered.cache_ttl = _str(ttl, "prompt_cache_options.ttl")
        if retention is not None:
            raise RecordFieldError(
                "prompt_cache_retention",
                "set together with prompt_cache_options: OpenAI rejects a request with both",
            )
    elif retention is not None:
        rendered.cache_ttl = _str(retention, "prompt_cache_retention")


# --- helpers -----------------------------------------------------------------------------


def _looks_converse(body: dict[str, Any]) -> bool:
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


def _looks_anthropic(body: dict[str, Any]) -> bool:
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


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _digest(value: Any) -> bytes:
    return hashlib.blake2b(_compact(value).encode(), digest_size=16).digest()


def _require(obj: dict[str, Any], key: str, path: str) -> Any:
    if key not in obj:
        raise RecordFieldError(f"{path}.{key}" if path else key, "missing")
    return obj[key]


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise RecordFieldError(path, f"expected a list, got {type(value).__name__}")
    return value


def _dict(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise RecordFieldError(path, f"expected an object, got {type(value).__name__}")
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise RecordFieldError(path, f"expected a string, got {type(value).__name__}")
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
        raise RecordFieldError(
            f"{path}.cache_control.ttl", "expected a string such as '5m' or '1h'"
        )
    return ttl


# --- OpenAI Chat Completions -------------------------------------------------------------


def _chat_header(body: dict[str, Any], rendered: Rendered) -> bool:
    if "tools" not in body:
        return True
    rendered.parts.extend(_tool_parts(body["tools"], "tools"))
    rendered.chat_tools = list(body["tools"])
    return False  # OpenAI's own tool rendering is not public


def _chat_message(message: Any, path: str, rendered: Rendered) -> bool:
    # Fast path for the common shape (checked exactly as the general path would).
    if type(message) is dict and len(message) == 2:
        role = message.get("role")
        content = message.get("content")
        if type(role) is str and type(content) is str:
            kind = "system" if role in ("system", "developer") else "message"
            rendered.parts.append(Part(kind, path, role, [content]))
            return True
    message = _dict(message, path)
    role = _str(_require(message, "role", path), f"{path}.role")
    items, exact, marks = _openai_content(message.get("content"), f"{path}.content")
    for call_index, call in enumerate(_list(message.get("tool_calls", []), f"{path}.tool_calls")):
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
    kind = "system" if role in ("system", "developer") else "message"
    rendered.parts.append(_marked(Part(kind, path, role, items), marks))
    return exact


def _marked(part: Part, marks: list[tuple[int, str | None]]) -> Part:
    """``part`` with OpenAI's content-part breakpoints: one after the part's last item ends
    the whole message (its closing framing included: "everything up to and including that
    message" is the cached prefix, an assumption where the guide says no more), the others
    sit inside it."""
    for after, ttl in marks:
        if after == len(part.items):
            part.breakpoint_ttl = ttl
        else:
            part.inner_breakpoints.append((after, ttl))
    return part


def _cache_breakpoint_mark(part: dict[str, Any], path: str) -> str | None:
    """The TTL of a content part's ``prompt_cache_breakpoint`` (None: the request's), or
    NO_BREAKPOINT where the part has none."""
    marker = part.get("prompt_cache_breakpoint")
    if marker is None:
        return NO_BREAKPOINT
    marker = _dict(marker, f"{path}.prompt_cache_breakpoint")
    mode = marker.get("mode", "explicit")
    if mode != "explicit":
        raise RecordFieldError(
            f"{path}.prompt_cache_breakpoint.mode", f"expected 'explicit', got {mode!r}"
        )
    ttl = marker.get("ttl")
    if ttl is not None and not isinstance(ttl, str):
        raise RecordFieldError(f"{path}.prompt_cache_breakpoint.ttl", "expected '30m' or '12h'")
    return ttl


def _openai_content(
    content: Any, path: str
) -> tuple[list[Item], bool, list[tuple[int, str | None]]]:
    """Items of an OpenAI (chat or responses) content field; exact False when an image; and
    the ``prompt_cache_breakpoint`` marks (GPT-5.6+) as (items before the mark, TTL)."""
    if content is None:
        return [], True, []
    if isinstance(content, str):
        return [content], True, []
    items: list[Item] = []
    marks: list[tuple[int, str | None]] = []
    exact = True
    for index, part in enumerate(_list(content, path)):
        part_path = f"{path}[{index}]"
        part = _dict(part, part_path)
        kind = _str(_require(part, "type", part_path), f"{part_path}.type")
        mark = _cache_breakpoint_mark(part, part_path)
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
                raise RecordFieldError(f"{part_path}.image_url", "missing url or file_id")
            count = OPENAI_IMAGE_LOW_TOKENS if detail == "low" else OPENAI_IMAGE_HIGH_ESTIMATE
            exact = exact and detail == "low"
            items.append(NonText(_digest(reference), count))
        elif kind in ("input_audio", "file", "input_file"):
            items.append(NonText(_digest(part), 0))
            exact = False
        else:
            raise RecordFieldError(f"{part_path}.type", f"unsupported content part type {kind!r}")
        if mark != NO_BREAKPOINT:
            marks.append((len(items), mark))
    return items, exact, marks


# --- OpenAI Responses API ----------------------------------------------------------------


def _responses_header(body: dict[str, Any], rendered: Rendered) -> bool:
    exact = True
    if "tools" in body:
        rendered.parts.extend(_tool_parts(body["tools"], "tools"))
        rendered.chat_tools = list(body["tools"])
        exact = False
    instructions = body.get("instructions")
    if instructions is not None:
        text = _str(instructions, "instructions")
        rendered.parts.append(Part("system", "instructions", "system", [text]))
    return exact


def _responses_item(item: Any, path: str, rendered: Rendered) -> bool:
    if isinstance(item, str):  # the whole input as one string
        rendered.parts.append(Part("message", path, "user", [item]))
        return True
    item = _dict(item, path)
    kind = item.get("type", "message")
    exact = True
    marks: list[tuple[int, str | None]] = []
    if kind == "message":
        role = _str(_require(item, "role", path), f"{path}.role")
        items, exact, marks = _openai_content(item.get("content"), f"{path}.content")
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
        return True
    else:
        raise RecordFieldError(f"{path}.type", f"unsupported input item type {kind!r}")
    part_kind = "system" if role in ("system", "developer") else "message"
    rendered.parts.append(_marked(Part(part_kind, path, role, items), marks))
    return exact


# --- Anthropic Messages ------------------------------------------------------------------


# Each system block, tool and content block is its own framed part (an approximation:
# Anthropic's tokenizer and framing are not public), so a ``cache_control`` breakpoint falls
# exactly at the end of the block that carries it.


def _anthropic_header(body: dict[str, Any], rendered: Rendered) -> bool:
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
    return False


def _anthropic_message(message: Any, path: str, rendered: Rendered) -> bool:
    message = _dict(message, path)
    role = _str(_require(message, "role", path), f"{path}.role")
    content = _require(message, "content", path)
    if isinstance(content, str):
        rendered.parts.append(Part("message", path, role, [content]))
        return False
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
                # Thinking blocks cannot carry cache_control, so automatic caching skips them.
                cacheable=block.get("type") not in ("thinking", "redacted_thinking"),
            )
        )
    return False


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
    raise RecordFieldError(f"{path}.type", f"unsupported content block type {kind!r}")


# --- Gemini generateContent --------------------------------------------------------------


def _gemini_header(body: dict[str, Any], rendered: Rendered) -> bool:
    tools = body.get("tools")
    if tools is not None:
        rendered.parts.extend(_tool_parts(tools, "tools"))
    system = body.get("systemInstruction", body.get("system_instruction"))
    if system is not None:
        system = _dict(system, "systemInstruction")
        items = _gemini_parts(system.get("parts", []), "systemInstruction.parts")
        # cache_control is not Gemini's: cachecast marks the end of a cachedContent with it
        # when it merges that content into the request using it (cachecast.logs.http).
        ttl = _breakpoint_ttl(system, "systemInstruction")
        rendered.parts.append(Part("system", "systemInstruction", "system", items, ttl))
    return False


def _gemini_content(content: Any, path: str, rendered: Rendered) -> bool:
    content = _dict(content, path)
    role = content.get("role", "user")
    items = _gemini_parts(_require(content, "parts", path), f"{path}.parts")
    ttl = _breakpoint_ttl(content, path)  # (see _gemini_header)
    rendered.parts.append(Part("message", path, _str(role, f"{path}.role"), items, ttl))
    return False


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
            raise RecordFieldError(
                part_path, "expected text, inlineData, fileData or a function part"
            )
    return items


# --- Bedrock Converse ----------------------------------------------------------------------


# Tools (toolConfig.tools), then system blocks, then messages: the order of Bedrock's cache
# prefix for Claude models, as for Anthropic's own API. A {"cachePoint": {...}} block is a
# cache breakpoint at the end of what comes before it: it becomes an empty, unframed part
# carrying the breakpoint (so it needs no earlier part to be at hand).


def _converse_header(body: dict[str, Any], rendered: Rendered) -> bool:
    config = body.get("toolConfig")
    if config is not None:
        config = _dict(config, "toolConfig")
        for index, tool in enumerate(_list(config.get("tools", []), "toolConfig.tools")):
            path = f"toolConfig.tools[{index}]"
            tool = _dict(tool, path)
            if "cachePoint" in tool:
                rendered.parts.append(_cache_point(tool, path))
            else:
                rendered.parts.append(Part("tool", path, "system", [_compact(tool)]))
        rendered.chat_tools = list(config.get("tools", []))
    system = body.get("system")
    if system is not None:
        for index, block in enumerate(_list(system, "system")):
            path = f"system[{index}]"
            block = _dict(block, path)
            if "cachePoint" in block:
                rendered.parts.append(_cache_point(block, path))
            elif "text" in block:
                text = _str(block["text"], f"{path}.text")
                rendered.parts.append(Part("system", path, "system", [text]))
            else:
                rendered.parts.append(Part("system", path, "system", [_compact(block)]))
    return False


def _converse_message(message: Any, path: str, rendered: Rendered) -> bool:
    message = _dict(message, path)
    role = _str(_require(message, "role", path), f"{path}.role")
    for index, block in enumerate(_list(_require(message, "content", path), f"{path}.content")):
        block_path = f"{path}.content[{index}]"
        block = _dict(block, block_path)
        if "cachePoint" in block:
            rendered.parts.append(_cache_point(block, block_path))
            continue
        rendered.parts.append(
            Part("content", block_path, role, [_converse_block(block, block_path)])
        )
    return False


def _cache_point(block: dict[str, Any], path: str) -> Part:
    point = _dict(block["cachePoint"], f"{path}.cachePoint")
    ttl = point.get("ttl")
    if ttl is not None and not isinstance(ttl, str):
        raise RecordFieldError(f"{path}.cachePoint.ttl", "expected '5m' or '1h'")
    return Part("content", path, "", [], ttl, framed=False)


def _converse_block(block: dict[str, Any], path: str) -> Item:
    if "text" in block:
        return _str(block["text"], f"{path}.text")
    if "toolUse" in block:
        use = _dict(block["toolUse"], f"{path}.toolUse")
        name = _require(use, "name", f"{path}.toolUse")
        return _compact({"name": name, "input": use.get("input", {})})
    if "toolResult" in block:
        result = _dict(block["toolResult"], f"{path}.toolResult")
        return _compact(result.get("content", []))
    if "reasoningContent" in block:
        reasoning = _dict(block["reasoningContent"], f"{path}.reasoningContent")
        text = reasoning.get("reasoningText")
        if isinstance(text, dict) and isinstance(text.get("text"), str):
            return str(text["text"])
        return ""  # redacted reasoning: no text to count
    for kind in ("image", "document", "video"):
        if kind in block:
            return NonText(_digest(block[kind]), ANTHROPIC_IMAGE_ESTIMATE)
    if "guardContent" in block:
        return _compact(block["guardContent"])
    raise RecordFieldError(
        path,
        "expected a text, image, document, toolUse, toolResult, reasoningContent or cachePoint"
        " block",
    )


# --- plain prompt and pre-tokenized ------------------------------------------------------


def _render_prompt(body: dict[str, Any]) -> Rendered:
    text = _str(body["prompt"], "prompt")
    part = Part("prompt", "prompt", "", [text], framed=False)
    return Rendered("prompt", [part], reply_priming=False)


MAX_TOKEN_ID = 0xFFFFFFFF


def _render_tokens(body: dict[str, Any]) -> Rendered:
    tokens = _list(body["tokens"], "tokens")
    for index, token in enumerate(tokens):
        if not isinstance(token, int) or isinstance(token, bool) or token < 0:
            raise RecordFieldError(
                f"tokens[{index}]", f"expected a non-negative integer, got {token!r}"
            )
    # Ids are hashed as uint32 (simulator.blocks); every tokenizer's vocabulary fits. One
    # max() in C rather than a second comparison per token in the loop above.
    if tokens and max(tokens) > MAX_TOKEN_ID:
        index = next(i for i, token in enumerate(tokens) if token > MAX_TOKEN_ID)
        raise RecordFieldError(
            f"tokens[{index}]", f"expected a token id (at most 2**32-1), got {tokens[index]!r}"
        )
    return Rendered("tokens", [], reply_priming=False, tokens=tokens)


_CONVERSATIONS: dict[str, _Conversation] = {
    "chat": _Conversation(True, "messages", _chat_header, _chat_message),
    "responses": _Conversation(True, "input", _responses_header, _responses_item),
    "anthropic": _Conversation(False, "messages", _anthropic_header, _anthropic_message),
    "gemini": _Conversation(False, "contents", _gemini_header, _gemini_content),
    "bedrock": _Conversation(False, "messages", _converse_header, _converse_message),
}
