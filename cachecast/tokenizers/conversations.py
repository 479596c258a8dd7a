"""The conversations a log reader keeps open, so that a request extending an earlier one
takes that one's rendering over (``render.render_after``) instead of rendering every
message again.

Only for tiktoken models: their parts are encoded one by one, so parts taken over keep their
ids; an HF chat template is applied to the whole conversation instead. Memory follows the
live traffic: at most :data:`MAX_OPEN_CONVERSATIONS`, least recently used dropped first, and
none idle for longer than :data:`CONVERSATION_IDLE_SECONDS` of the log's time.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from cachecast.tokenizers.base import TiktokenTokenizer, Tokenizer
from cachecast.tokenizers.render import Rendered, conversation_field, render, render_after

# Conversations whose latest request is kept for the next one to take its leading parts over
# (least recently used dropped first): bounds memory on logs with many interleaved sessions.
MAX_OPEN_CONVERSATIONS = 512
# A conversation whose latest request is older than this (in the log's time) is dropped too,
# so that memory follows the conversations still going on, not every one the log has held.
CONVERSATION_IDLE_SECONDS = 3600.0


class OpenConversations:
    """The latest rendered request of each conversation, by a key that picks the candidate
    (model, API, session, opening message); whether its parts are taken over is decided by
    comparing the bodies (``render_after``), never by the key."""

    def __init__(self) -> None:
        self.conversations: OrderedDict[tuple[Any, ...], tuple[Rendered, float]] = OrderedDict()

    def render(
        self,
        body: dict[str, Any],
        api: str,
        model: str | None,
        tokenizer: Tokenizer | None,
        record: dict[str, Any],
        now: float,
    ) -> Rendered:
        """Render, taking over the leading parts of the conversation's previous request
        where they are equal; ``now`` is the latest timestamp the log has shown."""
        field = conversation_field(api)
        if field is None or not isinstance(tokenizer, TiktokenTokenizer):
            return render(body, api)
        # The key only picks the candidate; correctness comes from comparing the bodies.
        messages = body.get(field)
        opening = None
        if isinstance(messages, list) and messages:
            first = messages[min(1, len(messages) - 1)]
            if isinstance(first, dict) and isinstance(first.get("content"), str):
                opening = first["content"]
        key = (model, api, record.get("session"), opening)
        if not isinstance(key[2], str | int | None):
            return render(body, api)
        conversations = self.conversations
        previous = conversations.get(key)
        rendered = render_after(body, api, previous[0]) if previous is not None else None
        if rendered is None:
            rendered = render(body, api)
        if rendered.body is not None:
            conversations[key] = (rendered, now)
            conversations.move_to_end(key)
            if len(conversations) > MAX_OPEN_CONVERSATIONS:
                conversations.popitem(last=False)
            idle_before = now - CONVERSATION_IDLE_SECONDS
            while conversations[next(iter(conversations))][1] < idle_before:
                conversations.popitem(last=False)  # stops at this one, the newest
        return rendered
