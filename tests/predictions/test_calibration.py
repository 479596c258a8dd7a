"""Calibrated approximate tokenization (``cachecast.tokenizers.calibration``).

The approximation is o200k_base with the chat framing ``base.py`` documents: every block is
``<start> role <message> text <end>`` (the role one token here) and the reply is primed
with ``<start> assistant <message>``; framing is not text and keeps its count, text scales.
Token counts of texts are taken from tiktoken's o200k_base here, independently of the
reader; observed counts are the ones the records report.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput, LogReading
from cachecast.tokenizers import read_records
from cachecast.tokenizers.calibration import Calibrator, tokenizer_family
from cachecast.tokenizers.openai_data import load_openai_encoding
from cachecast.usecases.reconcile import TOLERANCE_TOKENS, ReconcileRequest, reconcile

ENCODING = load_openai_encoding("o200k_base")
BLOCK_FRAMING = 4  # <start> role <message> ... <end>, the role being one token
PRIMING = 3  # <start> assistant <message>
SONNET = "claude-sonnet-4-5-20250929"
SYSTEM = "You are a meticulous assistant for a hardware store. " * 3
MANUAL = "Torque specifications: bolt M8 takes 25 newton metres when dry. " * 60


def text_tokens(text: str) -> int:
    return len(ENCODING.encode_ordinary(text))


def anthropic_usage(fresh: int, read: int, written: int) -> dict[str, Any]:
    return {
        "usage": {
            "input_tokens": fresh,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            "output_tokens": 10,
        }
    }


def block(text: str, marked: bool = False) -> dict[str, Any]:
    found: dict[str, Any] = {"type": "text", "text": text}
    if marked:
        found["cache_control"] = {"type": "ephemeral"}
    return found


def test_the_breakpoint_lands_where_the_provider_put_it(store: ContractStore) -> None:
    """A 1,114-token request with a breakpoint at the end of its user message wrote 1,111
    tokens; the next request read those 1,111 and wrote 403 (observed figures). Padding the
    difference at the end put the breakpoint under the 1,024 minimum: no write."""
    approximate = BLOCK_FRAMING * 2 + text_tokens(SYSTEM) + text_tokens(MANUAL) + PRIMING
    assert approximate < 1024 < 1114  # the old padding left the breakpoint below the minimum
    first = {
        "timestamp": 1_780_000_000,
        "provider": "anthropic",
        "model": SONNET,
        "request": {
            "system": SYSTEM,
            "messages": [{"role": "user", "content": [block(MANUAL, marked=True)]}],
        },
        "response": anthropic_usage(3, 0, 1111),
    }
    second = {
        "timestamp": 1_780_000_060,
        "provider": "anthropic",
        "model": SONNET,
        "request": {
            "system": SYSTEM,
            "messages": [
                {"role": "user", "content": [block(MANUAL)]},
                {"role": "assistant", "content": "Noted. What do you need?"},
                {"role": "user", "content": [block("And for M10? " * 40, marked=True)]},
            ],
        },
        "response": anthropic_usage(3, 1111, 403),
    }
    report = reconcile(ReconcileRequest(log=LogInput(records=[first, second])), store)
    rows = sorted(report.requests, key=lambda row: row.line)
    predicted = [(r.predicted_cache_read_tokens, r.predicted_cache_write_tokens) for r in rows]
    observed = [(r.observed_cache_read_tokens, r.observed_cache_write_tokens) for r in rows]
    assert observed == [(0, 1111), (1111, 403)]
    for (read, written), (seen_read, seen_written) in zip(predicted, observed, strict=True):
        assert seen_written is not None
        assert abs(read - seen_read) + abs(written - seen_written) <= TOLERANCE_TOKENS
    assert predicted[0][1] > 0 and predicted[1][0] > 0
    (target,) = report.targets
    (calibration,) = target.calibration
    assert calibration.model == SONNET and calibration.requests_fitted == 2


def anthropic_record(system: str, user: str, count: int | None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "provider": "anthropic",
        "model": SONNET,
        "request": {"system": system, "messages": [{"role": "user", "content": user}]},
    }
    if count is not None:
        record["response"] = anthropic_usage(count, 0, 0)
    return record


def fixed_and_text(system: str, user: str) -> tuple[int, int]:
    return BLOCK_FRAMING * 2 + PRIMING, text_tokens(system) + text_tokens(user)


def test_records_without_usage_take_the_learned_ratio() -> None:
    one = ("Alpha system prompt about weather. " * 10, "Where is it raining? " * 20)
    two = ("Beta system prompt about trains. " * 12, "When is the next train? " * 15)
    three = ("Gamma system prompt about boats. " * 9, "Which boat is fastest? " * 25)
    fixed_one, text_one = fixed_and_text(*one)
    fixed_two, text_two = fixed_and_text(*two)
    counts = (fixed_one + text_one * 6 // 5, fixed_two + text_two * 13 // 10)  # ~1.2, ~1.3
    calibrator = Calibrator(None)
    records = [
        anthropic_record(*one, counts[0]),
        anthropic_record(*two, counts[1]),
        anthropic_record(*three, None),
    ]
    requests = list(read_records(records, "log", calibrator=calibrator))
    assert [r.input_tokens for r in requests[:2]] == list(counts)
    # The ratio: observed text over approximate text, over both requests with usage.
    ratio = Fraction(counts[0] - fixed_one + counts[1] - fixed_two, text_one + text_two)
    fixed_three, _ = fixed_and_text(*three)
    system_three, user_three = text_tokens(three[0]), text_tokens(three[1])
    expected = fixed_three + round(system_three * ratio) + round(user_three * ratio)
    assert requests[2].input_tokens == expected
    assert requests[2].tokenizer.endswith("calibrated by the learned ratio")
    assert all(not r.exact for r in requests)  # results stay marked approximate
    stats = calibrator.models[SONNET]
    assert (stats.fitted, stats.ratio_applied, stats.samples) == (2, 1, 2)
    assert stats.ratio == ratio
    assert stats.ratio_min == Fraction(counts[0] - fixed_one, text_one)
    assert stats.ratio_max == Fraction(counts[1] - fixed_two, text_two)


def test_early_requests_without_usage_are_sized_again_by_the_first_usage() -> None:
    """Streaming: a record read before any usage keeps the raw approximation (ratio 1); the
    first request with usage that holds its segments sizes them by its own count."""
    system = "Shared system prompt, long enough to matter. " * 30
    early = anthropic_record(system, "first question " * 5, None)
    fixed, text = fixed_and_text(system, "second question " * 5)
    count = fixed + text * 3 // 2
    later = anthropic_record(system, "second question " * 5, count)
    calibrator = Calibrator(None)
    # 300 filler records put the usage-bearing one in the reader's next batch (256 records).
    filler = [anthropic_record(f"unrelated {index}", "x", None) for index in range(300)]
    requests = list(read_records([early, *filler, later], "log", calibrator=calibrator))
    first, last = requests[0], requests[-1]
    assert first.tokenizer.endswith("uncalibrated")
    assert first.input_tokens == fixed_and_text(system, "first question " * 5)[0] + text_tokens(
        system
    ) + text_tokens("first question " * 5)
    assert last.input_tokens == count
    # The system segment was re-sized by the later request: its share of the observed text.
    system_segment = last.segments[0]
    share = (count - fixed) * text_tokens(system) // text
    assert system_segment.end - system_segment.start == BLOCK_FRAMING + share


def test_an_implausible_ratio_is_not_learned() -> None:
    """A body a recording filter rewrote: thousands of tokens counted for a few words."""
    calibrator = Calibrator(None)
    records = [
        anthropic_record("short", "hi", 18_135),
        anthropic_record("another short one", "hello there", None),
    ]
    rewritten, after = list(read_records(records, "log", calibrator=calibrator))
    assert rewritten.input_tokens == 18_135  # fitted to its own count all the same
    assert after.tokenizer.endswith("uncalibrated")  # nothing was learned from it
    assert calibrator.models[SONNET].implausible == 1
    assert calibrator.models[SONNET].samples == 0


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude"),
        ("claude-3-5-sonnet-20240620", "claude"),
        ("gemini-2.5-flash", "gemini"),
        ("models/gemini-2.5-pro", "gemini"),
        ("moonshot-v1-8k", "kimi"),
    ],
)
def test_tokenizer_families(model: str, family: str) -> None:
    assert tokenizer_family(model) == family


def test_another_family_s_count_does_not_calibrate() -> None:
    """A Gemini record tokenized as Claude (pricing a Gemini log under a Claude target):
    Gemini's prompt length says nothing about Claude's tokens."""
    record = {
        "provider": "google",
        "model": "gemini-2.5-flash",
        "request": {"contents": [{"role": "user", "parts": [{"text": "hello " * 50}]}]},
        "response": {"usageMetadata": {"promptTokenCount": 999, "candidatesTokenCount": 1}},
    }
    (request,) = read_records([record], "log", model=SONNET)
    assert request.input_tokens != 999
    assert request.tokenizer.endswith("uncalibrated")


# Two recordings of one cached system prompt, a write and, 5 s later, a read, each in a file
# of its own (as VCR-style test suites record them), with usage in Anthropic's fields
# (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching, "Tracking cache
# performance": input_tokens after the last breakpoint, cache_creation_input_tokens,
# cache_read_input_tokens). Figures set by hand: the system text counts 3/2 of its o200k
# length, A's question too, B's longer question 7/4 of its length (a different ratio, so
# that B fitted alone sizes the shared system prompt differently).
STORE_POLICY = (
    "Store policy: returns are accepted within thirty days with a receipt; power tools must"
    " be unopened; paint mixed to order cannot be returned; gift cards are final. "
) * 30
QUESTION_A = "Can I return a cordless drill if the box is opened but it was never used? " * 3
QUESTION_B = (
    "I bought a cordless drill, a box of wood screws and two litres of paint mixed in a"
    " custom shade last Tuesday, and I kept the receipt. "
) * 6
SYSTEM_BLOCK = BLOCK_FRAMING + text_tokens(STORE_POLICY) * 3 // 2  # through the breakpoint
FRESH_A = BLOCK_FRAMING + text_tokens(QUESTION_A) * 3 // 2 + PRIMING
FRESH_B = BLOCK_FRAMING + text_tokens(QUESTION_B) * 7 // 4 + PRIMING


def recorded(timestamp: int | None, question: str, read: int, written: int, fresh: int) -> str:
    record: dict[str, Any] = {
        "provider": "anthropic",
        "model": SONNET,
        "request": {
            "max_tokens": 100,
            "system": [block(STORE_POLICY, marked=True)],
            "messages": [{"role": "user", "content": question}],
        },
        "response": anthropic_usage(fresh, read, written),
    }
    if timestamp is not None:
        record["timestamp"] = timestamp
    return json.dumps(record) + "\n"


def write_pair(folder: Path, timestamps: bool = True) -> tuple[Path, Path]:
    writing, reading = folder / "cache_write.jsonl", folder / "cache_read.jsonl"
    writing.write_text(recorded(1_780_000_000, QUESTION_A, 0, SYSTEM_BLOCK, FRESH_A))
    reading.write_text(
        recorded(1_780_000_005 if timestamps else None, QUESTION_B, SYSTEM_BLOCK, 0, FRESH_B)
    )
    return writing, reading


def fitted_system(fresh: int, read: int, written: int, question: str) -> int:
    """The system segment of a request fitted to its own count alone: its text's share of
    the observed text (cumulative rounding), plus its framing."""
    fixed, text = fixed_and_text(STORE_POLICY, question)
    share = (fresh + read + written - fixed) * text_tokens(STORE_POLICY) // text
    return BLOCK_FRAMING + share


FROM_WRITE = fitted_system(FRESH_A, 0, SYSTEM_BLOCK, QUESTION_A)
FROM_READ = fitted_system(FRESH_B, SYSTEM_BLOCK, 0, QUESTION_B)


def rows_by_file(report: Any) -> dict[str, Any]:
    return {Path(row.source).name: row for row in report.requests}


def test_a_prefix_written_in_one_file_is_read_in_the_next(
    store: ContractStore, tmp_path: Path
) -> None:
    """Files with timestamps share the run's cache, so they share its calibration: the
    system prompt keeps the size the write's count gave it, and the read in the other file
    matches it. Fitted apart, the two sizes differ by dozens of tokens and nothing was read."""
    writing, reading = write_pair(tmp_path)
    assert FROM_READ - FROM_WRITE > 30  # the sizes each file's own calibration gave
    report = reconcile(ReconcileRequest(log=LogInput.of_paths([writing, reading])), store)
    rows = rows_by_file(report)
    read_row, write_row = rows[reading.name], rows[writing.name]
    assert read_row.observed_cache_read_tokens == SYSTEM_BLOCK
    assert abs(read_row.predicted_cache_read_tokens - SYSTEM_BLOCK) <= TOLERANCE_TOKENS
    assert abs(write_row.predicted_cache_write_tokens - SYSTEM_BLOCK) <= TOLERANCE_TOKENS
    assert write_row.predicted_cache_read_tokens == 0


def test_the_first_file_given_sizes_the_shared_prefix(store: ContractStore, tmp_path: Path) -> None:
    """The files' first records are read in the order the files are given: the read file
    named first sizes the system prompt by its own count, the write keeps that size, and
    the read still matches what the write cached (the size is off as B's count says)."""
    writing, reading = write_pair(tmp_path)
    report = reconcile(ReconcileRequest(log=LogInput.of_paths([reading, writing])), store)
    rows = rows_by_file(report)
    assert rows[writing.name].predicted_cache_write_tokens == FROM_READ
    assert rows[reading.name].predicted_cache_read_tokens == FROM_READ


def system_lengths(paths: list[Path]) -> dict[str, int]:
    reading = LogReading(LogInput.of_paths(paths), None)
    found = {}
    for request in reading.requests():
        (system,) = [s for s in request.segments if s.label == "system[0]"]
        found[Path(request.source).name] = system.end - system.start
    return found


def test_files_with_timestamps_size_a_shared_segment_alike(tmp_path: Path) -> None:
    writing, reading = write_pair(tmp_path)
    both = {writing.name: FROM_WRITE, reading.name: FROM_WRITE}
    assert system_lengths([writing, reading]) == both
    both = {writing.name: FROM_READ, reading.name: FROM_READ}
    assert system_lengths([reading, writing]) == both


def test_a_file_without_timestamps_keeps_its_own_calibration(
    store: ContractStore, tmp_path: Path
) -> None:
    """A file whose records carry no timestamp keeps a cache of its own in a run over
    several files, and so its own calibration: it reads as it reads alone, and reads
    nothing the other file wrote."""
    writing, reading = write_pair(tmp_path, timestamps=False)
    assert system_lengths([reading]) == {reading.name: FROM_READ}
    both = {writing.name: FROM_WRITE, reading.name: FROM_READ}
    assert system_lengths([writing, reading]) == both
    assert system_lengths([reading, writing]) == both
    report = reconcile(ReconcileRequest(log=LogInput.of_paths([writing, reading])), store)
    assert rows_by_file(report)[reading.name].predicted_cache_read_tokens == 0
