"""The tokenizer interface and the tiktoken-backed implementation.

Chat rendering for tiktoken encodings ("pieces" rendering, see ``render``): every message is
``<start> role <message> content <end>``, three framing tokens per message plus the reply
priming ``<start> assistant <message>``, which is how OpenAI counts chat tokens
(tokens_per_message = 3, reply primed with 3 tokens). The framing ids are the o200k_harmony
specials tiktoken publishes (``<|start|>`` 200006, ``<|message|>`` 200008, ``<|end|>``
200007) for o200k_base, and ChatML's ``<|im_start|>`` 100264, ``<|im_sep|>`` 100266,
``<|im_end|>`` 100265 for cl100k_base (OpenAI does not publish its private framing ids; only
their number matters for counts, and equal framing gives equal ids for prefix matching).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property

import tiktoken

# Placeholder token ids for non-text inputs (images): far above any vocabulary, derived from
# the input's content so that equal images give equal ids and different images differ.
NON_TEXT_ID_BASE = 1 << 30
NON_TEXT_ID_SPAN = 1 << 24


@dataclass(frozen=True, slots=True)
class Framing:
    """Special tokens that frame a chat message, as ids and as marker strings."""

    start: tuple[str, int]
    message: tuple[str, int]
    end: tuple[str, int]

    def specials(self) -> dict[str, int]:
        return dict((self.start, self.message, self.end))


FRAMINGS: dict[str, Framing] = {
    "o200k_base": Framing(("<|start|>", 200006), ("<|message|>", 200008), ("<|end|>", 200007)),
    "cl100k_base": Framing(
        ("<|im_start|>", 100264), ("<|im_sep|>", 100266), ("<|im_end|>", 100265)
    ),
}


class Tokenizer(ABC):
    """What the log reader needs from a tokenizer."""

    name: str  # what results report as ``tokenizer``
    key: str  # registry key that loads this tokenizer again (worker processes)
    exact: bool  # False where the provider's tokenizer is not public

    @abstractmethod
    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` as ordinary text (special-token strings are plain text)."""

    @property
    def cache_namespace(self) -> str:
        """Tokenizers with equal namespaces give equal ids for equal text."""
        return self.key


class TiktokenTokenizer(Tokenizer):
    """A ``tiktoken.Encoding`` (exact for OpenAI, an approximation for other providers)."""

    def __init__(self, encoding: tiktoken.Encoding, *, name: str, exact: bool) -> None:
        self.encoding = encoding
        self.key = name
        self.name = name if exact else f"{encoding.name} (approximation)"
        self.exact = exact
        self.framing = FRAMINGS[encoding.name]

    def encode(self, text: str) -> list[int]:
        return self.encoding.encode_ordinary(text)

    @property
    def cache_namespace(self) -> str:
        return self.encoding.name

    @cached_property
    def framed_encoding(self) -> tiktoken.Encoding:
        """The encoding plus the framing specials: encodes a whole rendered request at once.

        This is the baseline the segment-wise encoding must equal (tests, bench).
        """
        return tiktoken.Encoding(
            name=f"{self.encoding.name}+chat",
            pat_str=self.encoding._pat_str,
            mergeable_ranks=self.encoding._mergeable_ranks,
            special_tokens={**self.encoding._special_tokens, **self.framing.specials()},
        )
