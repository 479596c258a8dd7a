"""Llama 3 and Qwen through transformers, from quicktok-v1's shipped ranks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import quicktok
import tiktoken

from cachecast.tokenizers import get_tokenizer
from cachecast.tokenizers import hf as hf_module
from cachecast.tokenizers.hf import (
    LLAMA3_PATTERN,
    HFTokenizer,
    verified_quicktok_rank_text,
)
from cachecast.tokenizers.openai_data import VocabularyIntegrityError
from tests.tokenizers.test_encodings import SAMPLES

NON_NFC = "cafe\u0301 e\u0301"  # decomposed accents: Qwen's NFC normalizer composes them


def test_llama3_ids_equal_meta_construction_and_quicktok() -> None:
    tokenizer = get_tokenizer("meta-llama/Llama-3.1-8B-Instruct")
    assert isinstance(tokenizer, HFTokenizer)
    # Meta's reference tokenizer is tiktoken over the same ranks with this pattern.
    ranks = {}
    for line in verified_quicktok_rank_text("llama3").splitlines():
        token, rank = line.split()
        import base64

        ranks[base64.b64decode(token)] = int(rank)
    meta = tiktoken.Encoding(
        name="llama3", pat_str=LLAMA3_PATTERN, mergeable_ranks=ranks, special_tokens={}
    )
    upstream = quicktok.get_encoding("llama3")
    for text in [*SAMPLES, NON_NFC]:
        ids = tokenizer.encode(text)
        assert ids == meta.encode_ordinary(text), text
        assert ids == list(upstream.encode(text)), text


def test_qwen_ids_equal_quicktok_with_nfc() -> None:
    tokenizer = get_tokenizer("qwen3-8b")
    upstream = quicktok.get_encoding("qwen3")
    for text in [*SAMPLES, NON_NFC]:
        assert tokenizer.encode(text) == list(upstream.encode(text)), text
    # NFC makes the decomposed and composed spellings tokenize alike.
    assert tokenizer.encode(NON_NFC) == tokenizer.encode("café é")


def test_llama3_chat_segments_follow_meta_prompt_format() -> None:
    tokenizer = get_tokenizer("llama-3-8b-instruct")
    assert isinstance(tokenizer, HFTokenizer)
    enc = quicktok.get_encoding("llama3").encode
    bos, start, end, eot = 128000, 128006, 128007, 128009  # ids listed in llama3.special
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    ids, segments = tokenizer.encode_chat(messages, ["s", "u"], ["system", "message"])
    # <|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|> ...
    first = [bos, start, *enc("system"), end, *enc("\n\nBe brief."), eot]
    second = [start, *enc("user"), end, *enc("\n\nhi"), eot]
    prompt = [start, *enc("assistant"), end, *enc("\n\n")]
    assert ids == first + second + prompt
    assert [(s.start, s.end) for s in segments] == [
        (0, len(first)),
        (len(first), len(first) + len(second)),
        (len(first) + len(second), len(ids)),
    ]


def test_changed_open_model_ranks_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "data"
    shutil.copytree(hf_module.quicktok_data_dir(), copy)
    data = bytearray((copy / "qwen3.vocab").read_bytes())
    data[4 + 2] ^= 0x01  # first token's first byte
    (copy / "qwen3.vocab").write_bytes(bytes(data))
    monkeypatch.setattr(hf_module, "quicktok_data_dir", lambda: copy)
    with pytest.raises(VocabularyIntegrityError, match="refusing"):
        verified_quicktok_rank_text("qwen3")
