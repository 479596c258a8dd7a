"""What OpenAI's two request APIs (Chat Completions, Responses) render alike: a message's
content parts, the ``prompt_cache_breakpoint`` marks on them (GPT-5.6+), and the
request-level caching controls.

A message's text parts are concatenated without a separator. An image becomes a run of
placeholder ids as long as OpenAI's documented image cost: fixed at detail=low, an estimate
otherwise (the image's size is not in the log), so such a request is marked ``exact=False``.
"""

from __future__ import annotations

from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.tokenizers.render.fields import as_dict, as_list, as_str, require
from cachecast.tokenizers.render.parts import (
    NO_BREAKPOINT,
    NonText,
    PartItem,
    Rendered,
    RenderedPart,
)

# Token counts for one image (documented provider rules; dims are not in the log).
OPENAI_IMAGE_LOW_TOKENS = 85  # detail=low, fixed (OpenAI vision pricing docs)
OPENAI_IMAGE_HIGH_ESTIMATE = 765  # 1024x1024 at detail=high: 85 + 4 tiles x 170

OPENAI_CACHE_MODES = ("implicit", "explicit")


def request_controls(body: dict[str, Any], rendered: Rendered) -> None:
    """OpenAI's request-level caching controls (GPT-5.6+ ``prompt_cache_options`` with
    ``mode`` and ``ttl``; ``prompt_cache_retention`` of the models before it). The implicit
    breakpoint goes at the end of the newest message that may carry one (not an assistant
    message: assistant content takes no ``prompt_cache_breakpoint``)."""
    rendered.implicit_part = rendered.marks[-1].last_eligible if rendered.marks else -1
    options = body.get("prompt_cache_options")
    retention = body.get("prompt_cache_retention")
    if options is not None:
        options = as_dict(options, "prompt_cache_options")
        mode = options.get("mode", "implicit")
        if mode not in OPENAI_CACHE_MODES:
            raise RecordFieldError(
                "prompt_cache_options.mode", f"expected 'implicit' or 'explicit', got {mode!r}"
            )
        rendered.implicit_breakpoint = mode == "implicit"
        ttl = options.get("ttl")
        if ttl is not None:
            rendered.cache_ttl = as_str(ttl, "prompt_cache_options.ttl")
        if retention is not None:
            raise RecordFieldError(
                "prompt_cache_retention",
                "set together with prompt_cache_options: OpenAI rejects a request with both",
            )
    elif retention is not None:
        rendered.cache_ttl = as_str(retention, "prompt_cache_retention")


def marked(part: RenderedPart, marks: list[tuple[int, str | None]]) -> RenderedPart:
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
    marker = as_dict(marker, f"{path}.prompt_cache_breakpoint")
    mode = marker.get("mode", "explicit")
    if mode != "explicit":
        raise RecordFieldError(
            f"{path}.prompt_cache_breakpoint.mode", f"expected 'explicit', got {mode!r}"
        )
    ttl = marker.get("ttl")
    if ttl is not None and not isinstance(ttl, str):
        raise RecordFieldError(f"{path}.prompt_cache_breakpoint.ttl", "expected '30m' or '12h'")
    return ttl


def openai_content(
    content: Any, path: str
) -> tuple[list[PartItem], bool, list[tuple[int, str | None]]]:
    """Items of an OpenAI (chat or responses) content field; exact False when an image; and
    the ``prompt_cache_breakpoint`` marks (GPT-5.6+) as (items before the mark, TTL)."""
    if content is None:
        return [], True, []
    if isinstance(content, str):
        return [content], True, []
    items: list[PartItem] = []
    marks: list[tuple[int, str | None]] = []
    exact = True
    for index, part in enumerate(as_list(content, path)):
        part_path = f"{path}[{index}]"
        part = as_dict(part, part_path)
        kind = as_str(require(part, "type", part_path), f"{part_path}.type")
        mark = _cache_breakpoint_mark(part, part_path)
        if kind in ("text", "input_text", "output_text", "refusal"):
            key = "refusal" if kind == "refusal" else "text"
            items.append(as_str(require(part, key, part_path), f"{part_path}.{key}"))
        elif kind in ("image_url", "input_image"):
            image = part.get("image_url") if kind == "image_url" else part
            if isinstance(image, str):
                image = {"url": image}
            image = as_dict(image, f"{part_path}.image_url")
            detail = image.get("detail", part.get("detail", "auto"))
            reference = image.get("url") or image.get("image_url") or image.get("file_id")
            if reference is None:
                raise RecordFieldError(f"{part_path}.image_url", "missing url or file_id")
            count = OPENAI_IMAGE_LOW_TOKENS if detail == "low" else OPENAI_IMAGE_HIGH_ESTIMATE
            exact = exact and detail == "low"
            items.append(NonText.of(reference, count))
        elif kind == "thinking":
            # Mistral's ThinkChunk (Magistral's reasoning sent back in an assistant message:
            # docs/log-formats.md, "Bodies the renderer reads"): its text chunks; the markers
            # Mistral's template puts around them are not published, so not exact.
            inner = as_list(require(part, "thinking", part_path), f"{part_path}.thinking")
            for number, chunk in enumerate(inner):
                chunk_path = f"{part_path}.thinking[{number}]"
                chunk = as_dict(chunk, chunk_path)
                items.append(as_str(require(chunk, "text", chunk_path), f"{chunk_path}.text"))
            exact = False
        elif kind in ("input_audio", "file", "input_file"):
            items.append(NonText.of(part, 0))
            exact = False
        else:
            raise RecordFieldError(f"{part_path}.type", f"unsupported content part type {kind!r}")
        if mark != NO_BREAKPOINT:
            marks.append((len(items), mark))
    return items, exact, marks
