"""Open-model tokenizers through Hugging Face transformers (self-hosted side).

Sources, all offline:

* ``hf-dir:PATH``: a local tokenizer directory (``tokenizer.json`` + ``tokenizer_config.json``
  with its ``chat_template``), loaded with ``AutoTokenizer.from_pretrained(local_files_only)``;
  chats are rendered with the model's own ``apply_chat_template``.
* ``hf:tekken_240718`` / ``hf:tekken_240911``: Mistral Tekken vocabularies that
  mistral-common ships, converted to a ``PreTrainedTokenizerFast`` by transformers' own
  ``MistralConverter``; its ids are checked in the tests against mistral-common's
  ``Tekkenizer`` on the same file. Chats use :data:`TEKKEN_CHAT_TEMPLATE`, our text-only
  reproduction of Mistral's v3 (Tekken) instruct format, ``<s>[INST]...[/INST]...</s>``.

* ``hf:llama3`` / ``hf:qwen``: the Llama 3 and Qwen2.5/Qwen3 rank files that quicktok-v1
  ships, converted by transformers' ``TikTokenConverter`` (merges derived from the ranks) with
  each model's pre-tokenizer pattern (Qwen adds its NFC normalizer) and special tokens at the
  ids quicktok lists. The rebuilt rank text must hash to :data:`PINNED_RANK_SHA256` (pinned
  from the shipped data, so a changed or corrupted file is refused). Chats use
  :data:`LLAMA3_CHAT_TEMPLATE` (Meta's Llama 3 prompt format) and :data:`CHATML_TEMPLATE`
  (Qwen's ChatML), text-only reproductions; a local directory with the model's own
  ``tokenizer_config.json`` is the exact route for other template features.

A chat is encoded whole (one ``encode`` of the rendered template, which is exact by
construction); segment boundaries come from rendering each message prefix of the
conversation and mapping its end to the token offsets. A boundary that falls inside a token
is moved to the end of that token.
"""

from __future__ import annotations

import bisect
import hashlib
import importlib.util
import os
import struct
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import platformdirs

from cachecast.tokenizers.base import Tokenizer
from cachecast.tokenizers.openai_data import (
    VocabularyIntegrityError,
    quicktok_vocab_to_tiktoken_text,
)
from cachecast.tokenizers.types import Segment

# Mistral v3 (Tekken) instruct format for text conversations: the system prompt is put in
# front of the last user message, as mistral-common does.
TEKKEN_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- set system = messages | selectattr('role', 'equalto', 'system') | map(attribute='content')"
    " | join('\\n\\n') %}"
    "{%- set turns = messages | rejectattr('role', 'equalto', 'system') | list %}"
    "{%- set last_user = namespace(i=-1) %}"
    "{%- for m in turns %}{% if m.role == 'user' %}{% set last_user.i = loop.index0 %}{% endif %}"
    "{% endfor %}"
    "{%- for m in turns %}"
    "{%- if m.role == 'user' %}[INST]"
    "{%- if loop.index0 == last_user.i and system %}{{ system }}\n\n{% endif %}"
    "{{ m.content }}[/INST]"
    "{%- else %}{{ m.content }}{{ eos_token }}{% endif %}"
    "{%- endfor %}"
)


LLAMA3_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>"
    "\n\n{{ m.content | trim }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
CHATML_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# Pre-tokenizer patterns: Llama 3's (Meta's tokenizer.py) and Qwen2's (single digits).
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
PINNED_RANK_SHA256 = {
    "llama3": "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55",
    "qwen3": "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186",
}


class HFTokenizer(Tokenizer):
    """A transformers fast tokenizer; chats go through its chat template."""

    def __init__(self, tokenizer: Any, *, key: str, name: str) -> None:
        self.tokenizer = tokenizer
        self.key = key
        self.name = name
        self.exact = True

    def encode(self, text: str) -> list[int]:
        ids: list[int] = self.tokenizer.backend_tokenizer.encode(text, add_special_tokens=False).ids
        return ids

    def encode_chat(
        self,
        messages: list[dict[str, Any]],
        labels: list[str],
        kinds: list[str],
        tools: list[dict[str, Any]] | None = None,
    ) -> tuple[list[int], list[Segment]]:
        """Render and encode a conversation; one segment per message plus the reply prompt."""
        full = self._render(messages, tools, generation_prompt=True)
        encoded = self.tokenizer.backend_tokenizer.encode(full, add_special_tokens=False)
        ids: list[int] = encoded.ids
        starts = [start for start, _ in encoded.offsets]
        char_ends: list[int] = []
        for count in range(1, len(messages) + 1):
            prefix = self._render(messages[:count], tools, generation_prompt=False)
            if not full.startswith(prefix):
                # The template renders earlier messages differently once more follow
                # (e.g. Mistral moves the system prompt): no stable boundary to report.
                return ids, [Segment("template", "chat", 0, len(ids))]
            char_ends.append(len(prefix))
        segments: list[Segment] = []
        start = 0
        for char_end, label, kind in zip(char_ends, labels, kinds, strict=True):
            end = self._token_boundary(char_end, starts)
            segments.append(Segment(kind, label, start, end))
            start = end
        segments.append(Segment("template", "generation_prompt", start, len(ids)))
        return ids, segments

    def _render(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        generation_prompt: bool,
    ) -> str:
        rendered: str = self.tokenizer.apply_chat_template(
            messages, tools=tools, tokenize=False, add_generation_prompt=generation_prompt
        )
        return rendered

    @staticmethod
    def _token_boundary(char_end: int, starts: list[int]) -> int:
        """Index of the first token starting at or after ``char_end`` (a token that starts
        before and ends after it is counted in the earlier segment)."""
        return bisect.bisect_left(starts, char_end)


def load_hf_tokenizer(key: str) -> HFTokenizer:
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    if key.startswith("hf-dir:"):
        path = Path(key.removeprefix("hf-dir:"))
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        return HFTokenizer(tokenizer, key=key, name=f"hf:{path.name}")
    name = key.removeprefix("hf:")
    if name.startswith("tekken_"):
        from transformers.integrations.mistral.tokenizer import MistralConverter

        path = mistral_common_tekken_path(name)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        backend = _cached_conversion(
            f"{name}-{digest}", lambda: MistralConverter(str(path)).converted()
        )
        fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
            tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
        )
        fast.chat_template = TEKKEN_CHAT_TEMPLATE
        return HFTokenizer(fast, key=key, name=f"hf:{name} (mistral-common)")
    if name in ("llama3", "qwen"):
        return _from_quicktok_ranks("llama3" if name == "llama3" else "qwen3", key)
    raise KeyError(f"no registry data for Hugging Face tokenizer {name!r}")


def conversion_cache_dir() -> Path:
    """Where converted tokenizers are kept: ``$CACHECAST_CACHE_DIR`` or the user cache dir."""
    configured = os.environ.get("CACHECAST_CACHE_DIR")
    if configured:
        return Path(configured) / "tokenizers"
    return Path(platformdirs.user_cache_dir("cachecast")) / "tokenizers"


def _cached_conversion(name: str, convert: Callable[[], Any]) -> Any:
    """A converted ``tokenizers.Tokenizer``, saved as JSON under a name that includes the
    source data's hash and the tokenizers version, since converting merges from ranks takes
    tens of seconds and loading the saved JSON about one."""
    from tokenizers import Tokenizer as BackendTokenizer
    from tokenizers import __version__ as tokenizers_version

    path = conversion_cache_dir() / f"{name}-tokenizers{tokenizers_version}.json"
    if path.is_file():
        return BackendTokenizer.from_file(str(path))
    backend = convert()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        backend.save(str(partial))
        partial.replace(path)
    except OSError as exc:
        # A read-only cache only costs time on the next load; say so rather than fail.
        warnings.warn(f"could not cache the converted tokenizer at {path}: {exc}", stacklevel=2)
    return backend


def quicktok_specials(stem: str) -> list[tuple[str, int]]:
    """quicktok's ``<stem>.special``: u32 count, then per token u32 id, u16 length, bytes."""
    path = quicktok_data_dir() / f"{stem}.special"
    data = path.read_bytes()
    (count,) = struct.unpack_from("<I", data, 0)
    offset = 4
    specials = []
    for _ in range(count):
        token_id, length = struct.unpack_from("<IH", data, offset)
        offset += 6
        specials.append((data[offset : offset + length].decode("utf-8"), token_id))
        offset += length
    if offset != len(data):
        raise VocabularyIntegrityError(f"{path}: {len(data) - offset} trailing bytes")
    return sorted(specials, key=lambda pair: pair[1])


def quicktok_data_dir() -> Path:
    spec = importlib.util.find_spec("quicktok")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("quicktok-v1 is not installed: no Llama 3 / Qwen vocabulary")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def verified_quicktok_rank_text(stem: str) -> bytes:
    """The ``.tiktoken`` text of quicktok's ``stem`` ranks, refused unless it hashes as pinned."""
    path = quicktok_data_dir() / f"{stem}.vocab"
    text = quicktok_vocab_to_tiktoken_text(path.read_bytes(), str(path))
    actual = hashlib.sha256(text).hexdigest()
    if actual != PINNED_RANK_SHA256[stem]:
        raise VocabularyIntegrityError(
            f"refusing {path}: rebuilt ranks hash to {actual}, pinned {PINNED_RANK_SHA256[stem]}"
        )
    return text


def _from_quicktok_ranks(stem: str, key: str) -> HFTokenizer:
    from tokenizers import normalizers
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    specials = quicktok_specials(stem)
    rank_text = verified_quicktok_rank_text(stem)
    pattern = LLAMA3_PATTERN if stem == "llama3" else QWEN_PATTERN

    def convert() -> Any:
        with tempfile.TemporaryDirectory() as folder:
            rank_file = Path(folder) / f"{stem}.tiktoken"
            rank_file.write_bytes(rank_text)
            return TikTokenConverter(  # type: ignore[no-untyped-call]
                vocab_file=str(rank_file),
                pattern=pattern,
                extra_special_tokens=[token for token, _ in specials],
            ).converted()

    backend = _cached_conversion(f"{stem}-{PINNED_RANK_SHA256[stem][:16]}", convert)
    for token, token_id in specials:
        if backend.token_to_id(token) != token_id:
            raise VocabularyIntegrityError(f"{stem}: special {token} is not at id {token_id}")
    if stem == "qwen3":
        backend.normalizer = normalizers.NFC()
        fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
            tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>"
        )
        fast.chat_template = CHATML_TEMPLATE
        return HFTokenizer(fast, key=key, name="hf:qwen (quicktok-v1 qwen3 ranks)")
    fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=backend, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>"
    )
    fast.chat_template = LLAMA3_CHAT_TEMPLATE
    return HFTokenizer(fast, key=key, name="hf:llama3 (quicktok-v1 ranks)")


def mistral_common_tekken_path(name: str) -> Path:
    spec = importlib.util.find_spec("mistral_common")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("mistral-common is not installed: no Tekken vocabulary")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"mistral-common does not ship {path.name}")
    return path
