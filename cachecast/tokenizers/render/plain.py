"""Bodies that are no conversation: a plain ``{"prompt": ...}`` (one unframed part) and a
pre-tokenized ``{"tokens": [...]}`` (its ids as given, checked to fit a uint32)."""

from __future__ import annotations

from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.tokenizers.render.fields import as_list, as_str
from cachecast.tokenizers.render.parts import Rendered, RenderedPart

MAX_TOKEN_ID = 0xFFFFFFFF


def render_prompt(body: dict[str, Any]) -> Rendered:
    text = as_str(body["prompt"], "prompt")
    part = RenderedPart("prompt", "prompt", "", [text], framed=False)
    return Rendered("prompt", [part], reply_priming=False)


def render_tokens(body: dict[str, Any]) -> Rendered:
    tokens = as_list(body["tokens"], "tokens")
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
