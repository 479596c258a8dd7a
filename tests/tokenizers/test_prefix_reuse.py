"""read_log takes a conversation's earlier request over for the next one (render_after):
the result must be exactly what rendering and encoding each request on its own gives.

The oracle is independent of the reuse: each request's whole rendering encoded in one call
by tiktoken with the framing specials allowed (as the bench's baseline does), and the
record-by-record reader (read_records, which never reuses) for segments and breakpoints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachecast.core.errors import LogRecordError
from cachecast.tokenizers import conversations as conversations_module
from cachecast.tokenizers import get_tokenizer, read_log, read_records
from cachecast.tokenizers.base import TiktokenTokenizer
from cachecast.tokenizers.encode import BatchEncoder, SegmentCache, rendered_text
from cachecast.tokenizers.render import Rendered, detect_api, render, render_after


@pytest.fixture
def reused(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many leading parts each reused request took over (proves the reuse ran)."""
    taken: list[int] = []

    def counting(body: dict[str, Any], api: str, previous: Rendered) -> Rendered | None:
        rendered = render_after(body, api, previous)
        if rendered is not None:
            taken.append(rendered.prefix_parts)
        return rendered

    monkeypatch.setattr(conversations_module, "render_after", counting)
    return taken


def whole_request_ids(record: dict[str, Any]) -> list[int]:
    tokenizer = get_tokenizer(record["model"])
    assert isinstance(tokenizer, TiktokenTokenizer)
    text = rendered_text(render(record, detect_api(record, None)), tokenizer)
    return tokenizer.framed_encoding.encode(text, allowed_special="all")


def batch_ids(records: list[dict[str, Any]], workers: int) -> list[list[int]]:
    """Each chat record's ids from one BatchEncoder batch with ``workers`` threads."""
    tokenizer = get_tokenizer("gpt-4o")
    assert isinstance(tokenizer, TiktokenTokenizer)
    encoder = BatchEncoder(tokenizer, SegmentCache(), workers=workers)
    try:
        results = encoder.encode_batch([render(record, "chat") for record in records])
    finally:
        encoder.close()
    return [list(result.tokens) for result in results]


def write(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def call(arguments: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": arguments}}],
    }


def test_chat_conversation_with_look_alike_edits(tmp_path: Path, reused: list[int]) -> None:
    system = {"role": "system", "content": "Be brief."}
    user = {"role": "user", "content": "count to three"}
    # Python's == holds between 1, 1.0 and True and between two key orders, but each
    # renders to a different JSON text: none of these requests may reuse the previous one's
    # tool-call message.
    records = [
        {"model": "gpt-4o", "messages": [system, user, call({"n": 1, "m": 2})]},
        {"model": "gpt-4o", "messages": [system, user, call({"n": 1.0, "m": 2})]},
        {"model": "gpt-4o", "messages": [system, user, call({"n": True, "m": 2})]},
        {"model": "gpt-4o", "messages": [system, user, call({"m": 2, "n": True})]},
        # Growing, then the same request again, then an edited earlier message.
        {"model": "gpt-4o", "messages": [system, user, call({"m": 2, "n": True}), user]},
        {"model": "gpt-4o", "messages": [system, user, call({"m": 2, "n": True}), user]},
        {"model": "gpt-4o", "messages": [system, {"role": "user", "content": "count!"}, user]},
        # Tools added: the header differs, nothing is taken over.
        {
            "model": "gpt-4o",
            "tools": [{"type": "function", "function": {"name": "f"}}],
            "messages": [system, {"role": "user", "content": "count!"}, user],
        },
        # The same tool with its keys in another order: another header (renders differently).
        {
            "model": "gpt-4o",
            "tools": [{"function": {"name": "f"}, "type": "function"}],
            "messages": [system, {"role": "user", "content": "count!"}, user],
        },
    ]
    log = tmp_path / "chat.jsonl"
    write(log, records)
    errors: list[LogRecordError] = []
    requests = list(read_log(log, errors=errors))
    assert errors == []
    assert [list(r.tokens or []) for r in requests] == [whole_request_ids(r) for r in records]
    # The look-alike edits really render differently (else the test would prove nothing).
    assert len({tuple(r.tokens or []) for r in requests[:4]}) == 4
    alone = list(read_records(records, str(log)))
    assert [r.segments for r in requests] == [r.segments for r in alone]
    assert [r.exact for r in requests] == [r.exact for r in alone]
    # Requests 2-4 keep system + user (2 parts; the look-alike call is not taken over), 5
    # keeps the 3 messages of 4, 6 all 4 of 5; 7 opens differently (another conversation
    # key, nothing to compare with), 8 has tools and 9 reorders them (other headers): none.
    assert reused == [2, 2, 2, 3, 4]


def test_interleaved_conversations_and_other_apis(tmp_path: Path, reused: list[int]) -> None:
    def chat(opening: str, turns: int) -> dict[str, Any]:
        messages = [{"role": "system", "content": "shared system prompt"}]
        for turn in range(turns):
            messages.append({"role": "user", "content": f"{opening} {turn}"})
            messages.append({"role": "assistant", "content": f"answer {turn}"})
        return {"model": "gpt-4o", "messages": messages}

    responses = {
        "model": "gpt-4o",
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "function_call", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "output": {"ok": 1}},
        ],
    }
    gemini = {
        "model": "gemini-2.5-flash",
        "systemInstruction": {"parts": [{"text": "sys"}]},
        "contents": [{"role": "user", "parts": [{"text": "a"}]}],
    }
    gemini_more = dict(
        gemini, contents=[*gemini["contents"], {"role": "model", "parts": [{"text": "b"}]}]
    )
    anthropic = {
        "model": "claude-sonnet-4-5",
        "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}],
            },
        ],
    }
    anthropic_more = dict(
        anthropic, messages=[*anthropic["messages"], {"role": "user", "content": "more"}]
    )
    records = [
        chat("alpha", 1),
        chat("beta", 1),
        chat("alpha", 2),
        responses,
        chat("beta", 2),
        dict(responses, input=[*responses["input"], {"role": "user", "content": "next"}]),
        gemini,
        gemini_more,
        anthropic,
        anthropic_more,
        chat("alpha", 3),
    ]
    log = tmp_path / "mixed.jsonl"
    write(log, records)
    errors: list[LogRecordError] = []
    requests = list(read_log(log, errors=errors))
    assert errors == []
    alone = list(read_records(records, str(log)))
    for reused, single in zip(requests, alone, strict=True):
        assert list(reused.tokens or []) == list(single.tokens or [])
        assert reused.segments == single.segments
        assert reused.breakpoints == single.breakpoints
        assert reused.exact == single.exact
    chats = [i for i, r in enumerate(records) if r.get("messages") and r["model"] == "gpt-4o"]
    for index in chats:
        assert list(requests[index].tokens or []) == whole_request_ids(records[index])
    assert reused != []
    # Anthropic: the second request keeps the two explicit breakpoints of the first.
    assert [b.offset for b in requests[9].breakpoints] == [
        b.offset for b in requests[8].breakpoints
    ]


@pytest.mark.parametrize("workers", [1, 2])
def test_batch_encoding_on_or_off_the_thread_with_separator_text(workers: int) -> None:
    # Same ids whether a batch's misses are encoded on the thread or inline; a text holding
    # a framing special's string is plain text all the same.
    tokenizer = get_tokenizer("gpt-4o")
    assert isinstance(tokenizer, TiktokenTokenizer)
    odd = "see <|end|> here"
    records = [
        {"model": "gpt-4o", "messages": [{"role": "user", "content": text}]}
        for text in ("hello world", odd, "", "hello world again")
    ]
    assert batch_ids(records, workers) == [whole_request_ids(r) for r in records[:1]] + [
        # The whole-request oracle would read <|end|> as the special: build it by hand,
        # framing ids around the plain-text ids of the content.
        [
            *tokenizer.framed_encoding.encode("<|start|>user<|message|>", allowed_special="all"),
            *tokenizer.encoding.encode_ordinary(odd),
            *tokenizer.framed_encoding.encode(
                "<|end|><|start|>assistant<|message|>", allowed_special="all"
            ),
        ],
        *[whole_request_ids(r) for r in records[2:]],
    ]


def test_strict_raises_after_the_earlier_requests(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    good = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    log.write_text(json.dumps(good) + "\n" + '{"model": "gpt-4o"}\n' + json.dumps(good) + "\n")
    seen = []
    with pytest.raises(LogRecordError) as raised:
        for request in read_log(log, strict=True):
            seen.append(request.line)
    assert seen == [1]
    assert (raised.value.line, raised.value.field) == (2, "request")


@pytest.mark.parametrize("workers", [2, 3])
def test_misses_split_across_encoding_threads_keep_each_requests_ids(workers: int) -> None:
    # 40 distinct texts are enough misses (8 or more per share) for the batch to be split
    # between the encoding thread and its helpers; every request must still get exactly the
    # ids tiktoken gives its whole rendering, in order.
    records = [
        {"model": "gpt-4o", "messages": [{"role": "user", "content": f"question {n}: {n * n}?"}]}
        for n in range(40)
    ]
    assert batch_ids(records, workers) == [whole_request_ids(r) for r in records]
