"""Request bodies -> an ordered list of prompt parts (tools, system, messages, content blocks).

Each API's body is reduced to :class:`RenderedPart` objects in the order the provider builds
its prompt prefix: tools first, then the system prompt, then the messages (Anthropic
documents this order for its cache prefix: tools, system, messages; OpenAI's prefix likewise
holds the tool definitions ahead of the conversation). A part becomes one segment of the
tokenized request; a part with a ``cache_control`` marker also carries a breakpoint at its
end.

One module per API: ``openai_chat`` (Chat Completions), ``openai_responses`` (Responses; what
the two OpenAI APIs share is ``openai_content``), ``anthropic`` (Messages), ``bedrock``
(Converse), ``gemini`` (generateContent), ``plain`` (``{"prompt"}``, ``{"tokens"}``). What
they share: the parts (``parts``), the field accessors (``fields``) and the conversation loop
with its reuse of an earlier request (``conversation``). This module tells a body's API
(:func:`detect_api`) and hands it to that API's renderer.

Text inside a part: tool calls and tool definitions are compact JSON (OpenAI's own tool
rendering is not public, so a request with tools or images is marked ``exact=False``). Images
become a run of placeholder ids (see ``base.NON_TEXT_ID_BASE``) whose length follows the
provider's documented image cost where it is fixed (OpenAI detail=low: 85; Gemini: 258) and
a documented estimate otherwise.
"""

from __future__ import annotations

from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.tokenizers.render import (
    anthropic,
    bedrock,
    gemini,
    openai_chat,
    openai_responses,
)
from cachecast.tokenizers.render.conversation import Conversation
from cachecast.tokenizers.render.parts import (
    NO_BREAKPOINT,
    Mark,
    NonText,
    PartItem,
    Rendered,
    RenderedPart,
)
from cachecast.tokenizers.render.plain import render_prompt, render_tokens

__all__ = [
    "NO_BREAKPOINT",
    "Mark",
    "NonText",
    "PartItem",
    "Rendered",
    "RenderedPart",
    "conversation_field",
    "detect_api",
    "render",
    "render_after",
]

_CONVERSATIONS: dict[str, Conversation] = {
    "chat": openai_chat.CONVERSATION,
    "responses": openai_responses.CONVERSATION,
    "anthropic": anthropic.CONVERSATION,
    "gemini": gemini.CONVERSATION,
    "bedrock": bedrock.CONVERSATION,
}


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
        if bedrock.looks_converse(body):
            return "bedrock"
        if provider == "anthropic" or anthropic.looks_anthropic(body):
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
        return render_prompt(body)
    return render_tokens(body)


def render_after(body: dict[str, Any], api: str, previous: Rendered) -> Rendered | None:
    """Render ``body`` taking over the leading parts of ``previous``, an earlier request of
    the same conversation, or None when they share nothing reusable (see
    :meth:`Conversation.render_after`)."""
    conversation = _CONVERSATIONS.get(api)
    if conversation is None:
        return None
    return conversation.render_after(body, api, previous)
