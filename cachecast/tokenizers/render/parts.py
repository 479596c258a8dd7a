"""What a request body is rendered to: :class:`RenderedPart` objects held by a :class:`Rendered`.

A part becomes one segment of the tokenized request; a part with a ``cache_control`` marker
also carries a breakpoint at its end. Its items are text or :class:`NonText` (an image, a
file), which the encoder turns into a run of placeholder ids (see ``base.NON_TEXT_ID_BASE``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cachecast.tokenizers.render.fields import digest as digest_of
from cachecast.tokenizers.types import Breakpoint, Segment


@dataclass(frozen=True, slots=True)
class NonText:
    """A non-text input (image, file) standing for ``count`` tokens; ``digest`` names it."""

    digest: bytes
    count: int

    @classmethod
    def of(cls, value: Any, count: int) -> NonText:
        """The input ``value`` (its URL, source object, inline data...) for ``count`` tokens,
        named by a digest of its compact JSON."""
        return cls(digest_of(value), count)

    def ids(self, base: int, span: int) -> list[int]:
        start = int.from_bytes(self.digest[:8], "little")
        return [base + (start + i) % span for i in range(self.count)]


PartItem = str | NonText

NO_BREAKPOINT = "__none__"


@dataclass(slots=True)
class RenderedPart:
    """One prompt part. ``framed`` parts get the chat framing around ``role`` + items."""

    kind: str
    label: str
    role: str
    items: list[PartItem] = field(default_factory=list)
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
    size: int = 0  # characters of text and non-text tokens so far (what sizes a batch)


@dataclass(slots=True)
class Rendered:
    """A request body reduced to parts; ``exact`` is False where our rendering guesses.

    Conversations (chat, responses, anthropic, gemini, bedrock) also keep ``marks`` (one per
    message boundary) and their body, so that a later request extending the same conversation
    can take over this one's leading parts instead of rendering them again
    (``render.render_after``): it then has ``prefix`` set to this request, ``prefix_parts`` /
    ``prefix_breakpoints`` taken from it, and ``parts`` holding only the parts after them. The
    encoder stores this request's result in the ``encoded_*`` fields for such later requests.
    """

    api: str
    parts: list[RenderedPart]
    exact: bool = True
    reply_priming: bool = True
    tokens: list[int] | None = None  # pre-tokenized input
    chat_tools: list[dict[str, Any]] | None = None
    body: dict[str, Any] | None = None
    header_json: bytes | None = None  # see conversation.header_json; filled when compared
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

    def size(self) -> int:
        """The characters of text and the non-text tokens of the whole request, those taken
        over included: an estimate of its ids' count (most tokens are several characters)
        for the reader's batches, found without walking the parts taken over."""
        if self.tokens is not None:
            return len(self.tokens)
        if not self.marks:
            return parts_size(self.parts)
        last = self.marks[-1]
        return last.size + parts_size(self.parts[last.parts - self.prefix_parts :])


def parts_size(parts: list[RenderedPart]) -> int:
    return sum(
        len(item) if isinstance(item, str) else item.count for part in parts for item in part.items
    )
