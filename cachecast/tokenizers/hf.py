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

A chat is encoded whole (one ``encode`` of the rendered template, which is exact by
construction); segment boundaries come from rendering each message prefix of the
conversation and mapping its end to the token offsets. A boundary that falls inside a token
is moved to the end of that token.
"""

from __future__ import annotations

import bisect
import importlib.util
from pathlib import Path
from typing import Any

from cachecast.tokenizers.base import Tokenizer
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
        backend = MistralConverter(str(path)).converted()
        fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
            tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
        )
        fast.chat_template = TEKKEN_CHAT_TEMPLATE
        return HFTokenizer(fast, key=key, name=f"hf:{name} (mistral-common)")
    raise KeyError(f"no registry data for Hugging Face tokenizer {name!r}")


def mistral_common_tekken_path(name: str) -> Path:
    spec = importlib.util.find_spec("mistral_common")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("mistral-common is not installed: no Tekken vocabulary")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"mistral-common does not ship {path.name}")
    return path
