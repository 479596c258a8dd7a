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
* ``hf:qwen2.5``: the same Qwen ranks with Qwen2.5's 22 added tokens only (the four Qwen3
  added, ``<tool_response>``, ``</tool_response>``, ``<think>``, ``</think>``, are plain text
  to Qwen2.5) and :data:`QWEN25_CHAT_TEMPLATE`, our reproduction of the Qwen2.5-Instruct
  prompt format including its default system prompt, tool definitions, tool calls and tool
  results (see ``docs/engine-tokenization.md``).

:func:`write_tokenizer_directory` saves any of these as a Hugging Face tokenizer directory
(``tokenizer.json``, ``tokenizer_config.json`` with the chat template, special tokens), so
an engine serving a model with it tokenizes exactly as cachecast does.

A chat is encoded whole (one ``encode`` of the rendered template, which is exact by
construction); segment boundaries come from rendering each message prefix of the
conversation and mapping its end to the token offsets. A boundary that falls inside a token
is moved to the end of that token.
"""

from __future__ import annotations

import bisect
import hashlib
import importlib.util
import json
import logging
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

NO_TORCH_NOTICE = "PyTorch was not found"


def _not_the_torch_notice(record: logging.LogRecord) -> bool:
    """Drop transformers' import-time notice that PyTorch is absent: cachecast uses its
    tokenizers only, which need no PyTorch, so the notice is noise on a command's stderr."""
    return not str(record.msg).startswith(NO_TORCH_NOTICE)


# Installed before transformers is first imported (lazily, by the loaders below); a filter
# survives transformers setting its logger's level on import.
logging.getLogger("transformers").addFilter(_not_the_torch_notice)

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
# Qwen2.5-Instruct's prompt format, written from its documented output: a system turn always
# comes first (the model's default text when the conversation has none); tool definitions
# follow the system text inside that turn, one compact JSON object per line between <tools>
# tags; an assistant turn with tool calls lists each call as {"name", "arguments"} JSON
# between <tool_call> tags; consecutive tool results share one user turn, each between
# <tool_response> tags. ``tojson`` is transformers' filter (json.dumps, ", " / ": ").
QWEN25_DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
QWEN25_CHAT_TEMPLATE = (
    "{%- set opening = messages[0] if messages else none %}"
    "{%- if opening is not none and opening.role == 'system' %}"
    "{%- set system_text = opening.content %}{%- set body_start = 1 %}"
    "{%- else %}{%- set system_text = '" + QWEN25_DEFAULT_SYSTEM + "' %}{%- set body_start = 0 %}"
    "{%- endif %}"
    "{{- '<|im_start|>system\n' + system_text }}"
    "{%- if tools %}"
    "{{- '\n\n# Tools\n\nYou may call one or more functions to assist with the user query."
    "\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>' }}"
    "{%- for tool in tools %}{{- '\n' + (tool | tojson) }}{%- endfor %}"
    "{{- '\n</tools>\n\nFor each function call, return a json object with function name and"
    ' arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name":'
    ' <function-name>, "arguments": <args-json-object>}\n</tool_call>\' }}'
    "{%- endif %}"
    "{{- '<|im_end|>\n' }}"
    "{%- for m in messages[body_start:] %}"
    "{%- set i = loop.index0 + body_start %}"
    "{%- if m.role == 'tool' %}"
    "{%- if i == 0 or messages[i - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\n<tool_response>\n' + m.content + '\n</tool_response>' }}"
    "{%- if loop.last or messages[i + 1].role != 'tool' %}{{- '<|im_end|>\n' }}{%- endif %}"
    "{%- elif m.role == 'assistant' and m.tool_calls %}"
    "{{- '<|im_start|>assistant' }}{%- if m.content %}{{- '\n' + m.content }}{%- endif %}"
    "{%- for call in m.tool_calls %}"
    "{%- set f = call.function if call.function is defined else call %}"
    '{{- \'\n<tool_call>\n{"name": "\' + f.name + \'", "arguments": \''
    " + (f.arguments | tojson) + '}\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\n' }}"
    "{%- elif m.role in ('user', 'system', 'assistant') %}"
    "{{- '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"
)
QWEN25_LAST_ADDED_ID = 151664  # <|file_sep|>: Qwen2.5 adds ids 151643..151664 (22 tokens)
QWEN25_CONFIG_VOCAB = 151936  # the embedding rows of Qwen2.5's configs (ids past 151664 unused)
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

    def __init__(
        self, tokenizer: Any, *, key: str, name: str, prompt_specials: bool = False
    ) -> None:
        self.tokenizer = tokenizer
        self.key = key
        self.name = name
        self.exact = True
        # Whether a plain-text prompt gets the tokenizer's own special tokens (Llama 3's BOS),
        # as a text completion does on an engine (vLLM's /v1/completions adds them by default).
        self.prompt_specials = prompt_specials

    def encode(self, text: str) -> list[int]:
        ids: list[int] = self.tokenizer.backend_tokenizer.encode(text, add_special_tokens=False).ids
        return ids

    def encode_prompt(self, text: str) -> list[int]:
        """A plain-text (completion) prompt's ids, special tokens as the model's tokenizer adds."""
        backend = self.tokenizer.backend_tokenizer
        ids: list[int] = backend.encode(text, add_special_tokens=self.prompt_specials).ids
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
            end = _message_end(full, prefix, messages[count - 1].get("content"))
            if end is None or (char_ends and end < char_ends[-1]):
                # The template renders earlier messages differently once more follow
                # (e.g. Mistral moves the system prompt): no stable boundary to report.
                return ids, [Segment("template", "chat", 0, len(ids))]
            char_ends.append(end)
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


def _message_end(full: str, prefix: str, content: Any) -> int | None:
    """Where a conversation's first messages end in its full rendering: the end of their own
    rendering when that is a prefix of it; else where the two first differ, provided the
    last message's text lies before that point (only its closing framing differs, e.g. Qwen
    closes a run of tool results once, after the last); else None."""
    if full.startswith(prefix):
        return len(prefix)
    common = next(
        (i for i, (a, b) in enumerate(zip(full, prefix, strict=False)) if a != b),
        min(len(full), len(prefix)),
    )
    if isinstance(content, str) and content:
        found = prefix.rfind(content)
        if found < 0 or found + len(content) > common:
            return None
    return common


def load_hf_tokenizer(key: str) -> HFTokenizer:
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    if key.startswith("hf-dir:"):
        path = Path(key.removeprefix("hf-dir:"))
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        # The directory's own tokenizer.json decides what a text prompt gets, as on an engine.
        return HFTokenizer(tokenizer, key=key, name=f"hf:{path.name}", prompt_specials=True)
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
    if name in ("llama3", "qwen", "qwen2.5"):
        return _from_quicktok_ranks(name, key)
    raise KeyError(f"no registry data for Hugging Face tokenizer {name!r}")


def write_tokenizer_directory(model: str, directory: str | Path) -> Path:
    """Save the tokenizer cachecast uses for ``model`` as a Hugging Face tokenizer directory.

    Writes ``tokenizer.json`` (vocabulary, merges, pre-tokenizer, added tokens, the
    post-processor that decides a text prompt's special tokens) and ``tokenizer_config.json``
    (chat template, special tokens, tokenizer class). A model directory holding these files
    and served by an engine (vLLM loads them with transformers' ``AutoTokenizer``) tokenizes
    prompts and chats exactly as cachecast does for ``model``; the engine tests check it.
    Raises ValueError when ``model``'s tokenizer is not a Hugging Face one.
    """
    from cachecast.tokenizers.registry import get_tokenizer, tokenizer_key_for

    tokenizer = get_tokenizer(model)
    if not isinstance(tokenizer, HFTokenizer):
        raise ValueError(
            f"model {model!r} uses the {tokenizer.name} tokenizer, not a Hugging Face one:"
            " there is no tokenizer directory to write"
        )
    fast = tokenizer.tokenizer
    backend = fast.backend_tokenizer
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    backend.save(str(target / "tokenizer.json"))
    added = {
        str(token_id): {
            "content": token.content,
            "lstrip": token.lstrip,
            "normalized": token.normalized,
            "rstrip": token.rstrip,
            "single_word": token.single_word,
            "special": token.special,
        }
        for token_id, token in sorted(backend.get_added_tokens_decoder().items())
    }
    key = tokenizer_key_for(model)
    qwen = key in ("hf:qwen", "hf:qwen2.5")
    config: dict[str, Any] = {
        "added_tokens_decoder": added,
        "bos_token": fast.bos_token,
        "chat_template": fast.chat_template,
        "clean_up_tokenization_spaces": False,
        "eos_token": fast.eos_token,
        "model_max_length": 131072 if qwen else 1_000_000,
        "pad_token": fast.pad_token,
        "split_special_tokens": False,
        # Qwen's own class rebuilds the tokenizer from tokenizer.json's vocabulary and merges
        # with its built-in pattern and normalizer, as a real Qwen deployment loads it; the
        # generic class takes tokenizer.json as it is.
        "tokenizer_class": "Qwen2Tokenizer" if qwen else "PreTrainedTokenizerFast",
    }
    if qwen:
        config.update({"add_bos_token": False, "add_prefix_space": False, "errors": "replace"})
    (target / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False))
    specials = {
        name: getattr(fast, name)
        for name in ("bos_token", "eos_token", "pad_token")
        if getattr(fast, name) is not None
    }
    (target / "special_tokens_map.json").write_text(json.dumps(specials, indent=2))
    return target


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


def _from_quicktok_ranks(name: str, key: str) -> HFTokenizer:
    from tokenizers import normalizers, processors
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    stem = "llama3" if name == "llama3" else "qwen3"
    specials = quicktok_specials(stem)
    if name == "qwen2.5":
        specials = [(token, ident) for token, ident in specials if ident <= QWEN25_LAST_ADDED_ID]
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

    # (The Qwen3 set keeps its historical cache name "qwen3-...".)
    cache_name = "qwen3" if name == "qwen" else name
    backend = _cached_conversion(f"{cache_name}-{PINNED_RANK_SHA256[stem][:16]}", convert)
    for token, token_id in specials:
        if backend.token_to_id(token) != token_id:
            raise VocabularyIntegrityError(f"{stem}: special {token} is not at id {token_id}")
    if stem == "qwen3":
        backend.normalizer = normalizers.NFC()
        fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
            tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>"
        )
        if name == "qwen2.5":
            fast.chat_template = QWEN25_CHAT_TEMPLATE
            label = "hf:qwen2.5 (quicktok-v1 qwen3 ranks, Qwen2.5 added tokens)"
        else:
            fast.chat_template = CHATML_TEMPLATE
            label = "hf:qwen (quicktok-v1 qwen3 ranks)"
        return HFTokenizer(fast, key=key, name=label, prompt_specials=True)
    # Meta's tokenizer puts <|begin_of_text|> in front of every text it encodes with special
    # tokens (a text completion); chats carry it in the template instead.
    backend.post_processor = processors.Sequence(
        [
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(
                single="<|begin_of_text|> $A",
                pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                special_tokens=[("<|begin_of_text|>", backend.token_to_id("<|begin_of_text|>"))],
            ),
        ]
    )
    fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=backend, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>"
    )
    fast.chat_template = LLAMA3_CHAT_TEMPLATE
    return HFTokenizer(fast, key=key, name="hf:llama3 (quicktok-v1 ranks)", prompt_specials=True)


def mistral_common_tekken_path(name: str) -> Path:
    spec = importlib.util.find_spec("mistral_common")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("mistral-common is not installed: no Tekken vocabulary")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"mistral-common does not ship {path.name}")
    return path
