"""Open-model prompts as a serving engine builds them: Qwen2.5's prompt format (default
system prompt, tools, tool calls, tool results), its added tokens, Llama 3's BOS on text
prompts, the OpenAI-server normalization of messages and tools, and the tokenizer directory
cachecast writes for an engine. Expected ids are built by hand from the documented format,
encoded piece by piece with quicktok's own encoder (independent of transformers)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import quicktok

from cachecast.core.errors import RecordFieldError
from cachecast.tokenizers import get_tokenizer, read_records
from cachecast.tokenizers.chat_messages import template_input
from cachecast.tokenizers.hf import HFTokenizer, write_tokenizer_directory

# Qwen2.5's added tokens are ids 151643..151664 (22); quicktok's qwen3 list has four more.
IM_START, IM_END, TOOL_CALL, TOOL_CALL_END = 151644, 151645, 151657, 151658
QWEN25_SPECIALS = {"<|im_start|>": IM_START, "<|im_end|>": IM_END}
QWEN25_SPECIALS.update({"<tool_call>": TOOL_CALL, "</tool_call>": TOOL_CALL_END})
DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."


def by_hand(text: str) -> list[int]:
    """``text`` split at the added tokens it uses, the rest encoded by quicktok."""
    encoding = quicktok.get_encoding("qwen3")
    pattern = "(" + "|".join(re.escape(token) for token in QWEN25_SPECIALS) + ")"
    ids: list[int] = []
    for piece in re.split(pattern, text):
        if piece in QWEN25_SPECIALS:
            ids.append(QWEN25_SPECIALS[piece])
        elif piece:
            ids.extend(encoding.encode_ordinary(piece))
    return ids


def tokens(model: str, body: dict[str, Any]) -> list[int]:
    (request,) = read_records([{"model": model, "request": body}], "t.jsonl", strict=True)
    assert request.tokens is not None
    return list(request.tokens)


def test_qwen25_without_system_gets_the_default_system_prompt() -> None:
    body = {"messages": [{"role": "user", "content": "What is 2 + 2?"}]}
    text = (
        f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n"
        "<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n"
    )
    assert tokens("qwen2.5-7b-instruct", body) == by_hand(text)
    # Qwen3's format (ChatML without a default system prompt) stays as it was.
    assert tokens("qwen3-8b", body) == by_hand(text.split("<|im_end|>\n", 1)[1])


def test_qwen25_tools_tool_calls_and_results() -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Find text.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "search", "arguments": '{"q":"x"}'},
    }
    body = {
        "messages": [
            {"role": "system", "content": "Be exact."},
            {"role": "user", "content": "Find x."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
            {"role": "tool", "tool_call_id": "c2", "content": "b.py"},
            {"role": "user", "content": "<tool_response> is plain text to Qwen2.5"},
        ],
        "tools": [tool],
    }
    # Documented format: tools as compact JSON lines (", " and ": " separators, keys in the
    # given order) after the system text; a call as {"name", "arguments"} with the arguments
    # parsed to an object; consecutive tool results in one user turn.
    tool_json = (
        '{"type": "function", "function": {"name": "search", "description": "Find text.",'
        ' "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}'
    )
    text = (
        "<|im_start|>system\nBe exact.\n\n# Tools\n\nYou may call one or more functions to"
        " assist with the user query.\n\nYou are provided with function signatures within"
        f" <tools></tools> XML tags:\n<tools>\n{tool_json}\n</tools>\n\nFor each function call,"
        " return a json object with function name and arguments within <tool_call></tool_call>"
        ' XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n'
        "</tool_call><|im_end|>\n"
        "<|im_start|>user\nFind x.<|im_end|>\n"
        '<|im_start|>assistant\n<tool_call>\n{"name": "search", "arguments": {"q": "x"}}\n'
        "</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\na.py\n</tool_response>\n<tool_response>\nb.py\n"
        "</tool_response><|im_end|>\n"
        "<|im_start|>user\n<tool_response> is plain text to Qwen2.5<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    (request,) = read_records(
        [{"model": "qwen2.5-7b-instruct", "request": body}], "t.jsonl", strict=True
    )
    assert list(request.tokens or ()) == by_hand(text)
    assert request.exact  # the template renders the tools: nothing is guessed
    # One segment per message plus the reply prompt; the system segment holds the tools, and
    # the first of two tool results ends with its own text (the turn closes after the second).
    first_result_end = by_hand(text.split("a.py\n</tool_response>")[0] + "a.py\n</tool_response>")
    assert [(s.label, s.end) for s in request.segments] == [
        ("messages[0]", len(by_hand(text.split("<|im_start|>user\nFind")[0]))),
        ("messages[1]", len(by_hand(text.split("<|im_start|>assistant\n<tool_call>")[0]))),
        ("messages[2]", len(by_hand(text.split("<|im_start|>user\n<tool_response>\na")[0]))),
        ("messages[3]", len(first_result_end)),
        ("messages[4]", len(by_hand(text.split("<|im_start|>user\n<tool_response> is")[0]))),
        ("messages[5]", len(by_hand(text)) - len(by_hand("<|im_start|>assistant\n"))),
        ("generation_prompt", len(by_hand(text))),
    ]


def test_qwen3_keeps_its_added_tokens() -> None:
    qwen3, qwen25 = get_tokenizer("qwen3-8b"), get_tokenizer("qwen2.5-7b")
    assert qwen3.encode("<think>") == [151667]  # quicktok's qwen3 list
    assert qwen25.encode("<think>") == quicktok.get_encoding("qwen3").encode_ordinary("<think>")
    assert qwen25.encode("<|file_sep|>") == [151664]


def test_llama3_text_prompt_starts_with_bos() -> None:
    # Meta's tokenizer adds <|begin_of_text|> (128000) to a text it encodes with special
    # tokens, which is what an engine does with a text completion's prompt.
    expected = [128000, *quicktok.get_encoding("llama3").encode_ordinary("Once upon a time")]
    assert tokens("llama-3-8b-instruct", {"prompt": "Once upon a time"}) == expected
    # Qwen adds nothing to a text prompt.
    assert tokens("qwen2.5-7b", {"prompt": "hi"}) == by_hand("hi")


def test_server_normalization_of_messages_and_tools() -> None:
    given = template_input(
        {
            "messages": [
                {"role": "system", "content": [{"type": "text", "text": "a"}, "b"]},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"type": "function", "function": {"name": "f", "arguments": "[1]"}},
                        {"type": "function", "function": {"name": "g", "arguments": "{bad"}},
                        {"type": "function", "function": {"name": "h", "arguments": '{"k": 2}'}},
                    ],
                },
                {"role": "assistant", "content": "x", "tool_calls": []},
                {"role": "tool", "tool_call_id": "t", "content": [{"type": "text", "text": "r"}]},
            ],
            "tools": [
                {"function": {"parameters": {}, "name": "ls", "x": 1}, "type": "function"},
                {"type": "function", "function": {"name": "rm", "strict": True}},
            ],
        }
    )
    assert given.exact
    system, calls, plain, tool = given.messages
    assert system == {"role": "system", "content": "a\nb"}  # text parts joined by newlines
    # arguments parsed to an object; not an object or not JSON -> {}
    assert [c["function"]["arguments"] for c in calls["tool_calls"]] == [{}, {}, {"k": 2}]
    assert calls["content"] == ""
    assert plain == {"role": "assistant", "content": "x"}  # an empty call list is dropped
    assert tool == {"role": "tool", "content": "r", "tool_call_id": "t"}
    assert given.tools == [
        {"type": "function", "function": {"name": "ls", "description": None, "parameters": {}}},
        {
            "type": "function",
            "function": {"name": "rm", "description": None, "parameters": None, "strict": True},
        },
    ]
    assert list(given.tools[0]["function"]) == ["name", "description", "parameters"]


def test_image_parts_make_the_chat_inexact() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    given = template_input({"messages": [{"role": "user", "content": [image, "hi"]}]})
    assert not given.exact and given.messages[0]["content"] == "hi"


def test_bad_tool_is_reported_with_its_field() -> None:
    with pytest.raises(RecordFieldError) as raised:
        template_input({"messages": [], "tools": [{"type": "function", "function": {}}]})
    assert raised.value.field == "tools[0].function.name"


@pytest.mark.parametrize("model", ["qwen2.5-7b-instruct", "llama-3-8b-instruct"])
def test_written_directory_loads_as_the_same_tokenizer(model: str, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    ours = get_tokenizer(model)
    assert isinstance(ours, HFTokenizer)
    directory = write_tokenizer_directory(model, tmp_path)
    config = json.loads((directory / "tokenizer_config.json").read_text())
    assert config["chat_template"] == ours.tokenizer.chat_template
    loaded = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "naïve 中文 42"}]
    rendered = loaded.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert (
        loaded(rendered, add_special_tokens=False)["input_ids"]
        == ours.encode_chat(messages, ["s", "u"], ["system", "message"])[0]
    )
    for text in ["Once upon a time", "  x\n\ny  ", "<|im_end|> 中文 🙂"]:
        assert loaded(text)["input_ids"] == ours.encode_prompt(text)


def test_no_directory_for_a_tiktoken_model(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a Hugging Face one"):
        write_tokenizer_directory("gpt-4o", tmp_path)
