"""The one sanitizer at the reader boundary (``cachecast.logs.sanitize``, docs/limits.md): a
timestamp out of range, an integer of thousands of digits, a value nested hundreds of levels,
too much text in one record and a line too long are each refused naming file, line and field,
in every format, with small hostile files built here."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from cachecast.core.errors import LimitExceededError, LogRecordError, RecordFieldError
from cachecast.core.limits import DEFAULT_LIMITS, limits_in_force
from cachecast.logs import sanitize
from cachecast.logs.sanitize import iso_moment
from cachecast.tokenizers import read_records
from tests.logs.helpers import read, write_jsonl
from tests.logs.test_otel import attr, document, span

CHAT = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
RECORD = {"provider": "openai", "model": "gpt-4o", "request": CHAT}
DIGITS_5000 = "9" * 5000  # past Python's 4,300-digit conversion bound
RANGE = "is outside 1970-01-01 to 9999-12-31 (UTC)"


def errors_of(path: Path) -> list[tuple[int, str, str]]:
    result = read(path)
    assert result.requests == []
    return [(error.line, error.field, error.reason) for error in result.errors]


def nested_json(depth: int, leaf: str = '"x"') -> str:
    """``depth`` levels of objects ``{"a": ...}`` around ``leaf``, as JSON text (json.dumps
    itself cannot write this deep)."""
    return '{"a":' * depth + leaf + "}" * depth


# ------------------------------------------------------------------- timestamps


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (1e18, "1e+18"),  # epoch milliseconds of the year 31 million
        (1e300, "1e+300"),
        (10**39, "1e+39"),  # 40 digits: JSON numbers past 64 bits are read as floats
        ("9999-12-31T23:59:59-01:00", "'9999-12-31T23:59:59-01:00'"),  # past 9999 in UTC
        (253_402_300_800_000, "253402300800000"),  # ms: one second after 9999-12-31 23:59:59
    ],
)
def test_a_timestamp_out_of_range_is_a_bad_line(tmp_path: Path, raw: Any, shown: str) -> None:
    path = write_jsonl(tmp_path / "log.jsonl", [{**RECORD, "timestamp": raw}])
    assert errors_of(path) == [(1, "timestamp", f"a timestamp of {shown} {RANGE}")]


def test_the_edges_of_the_range_are_read() -> None:
    # 9999-12-31T23:59:59Z is 253,402,300,799 s after the epoch (datetime's last second);
    # as milliseconds (above 1e11) the same moment is 253,402,300,799,000.
    assert sanitize.epoch_seconds("9999-12-31T23:59:59Z", "t") == 253_402_300_799
    assert sanitize.epoch_seconds(253_402_300_799_000, "t") == 253_402_300_799
    assert sanitize.epoch_seconds("1970-01-01T00:00:00Z", "t") == 0
    assert sanitize.epoch_seconds(0, "t") == 0
    with pytest.raises(RecordFieldError, match="non-negative"):
        sanitize.epoch_seconds(-1, "t")
    with pytest.raises(RecordFieldError, match="not ISO 8601"):
        sanitize.epoch_seconds("1" * 5000, "t")


def test_a_40_digit_otel_start_time_names_the_span(tmp_path: Path) -> None:
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
    bad = span("chat", 10**39, {**chat, "gen_ai.usage.input_tokens": 10})
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document(bad)))
    (error,) = read(path).errors
    assert error.field == "resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano"
    assert error.reason.endswith(RANGE)
    assert str(path) in str(error)


def test_a_langsmith_start_time_of_1e300_names_the_run(tmp_path: Path) -> None:
    run = {
        "id": "r1",
        "run_type": "llm",
        "start_time": 1e300,
        "inputs": {"messages": [{"role": "user", "content": "hi"}]},
        "extra": {"invocation_params": {"model": "gpt-4o"}},
        "outputs": {"llm_output": {"token_usage": {"prompt_tokens": 5, "completion_tokens": 1}}},
    }
    path = write_jsonl(tmp_path / "runs.jsonl", [run])
    (error,) = read(path).errors
    assert (error.line, error.field) == (1, "start_time")
    assert error.reason == f"a timestamp of 1e+300 {RANGE}"


# ------------------------------------------------------------------- integers


def test_an_integer_of_5000_digits_anywhere_is_a_bad_line_not_a_crash(tmp_path: Path) -> None:
    usage_text = {**RECORD, "usage": {"prompt_tokens": DIGITS_5000}}
    path = write_jsonl(tmp_path / "log.jsonl", [usage_text])
    ((line, field, reason),) = errors_of(path)
    assert (line, field) == (1, "usage.prompt_tokens")
    assert reason.endswith("(5,002 characters)")  # the value is not repeated whole
    assert len(reason) < 120


def test_otel_int_value_and_prompt_index_of_5000_digits(tmp_path: Path) -> None:
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
    counted = span("a", 2_000_000_000, chat)
    counted["attributes"].append(
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": DIGITS_5000}}
    )
    indexed = span("b", 3_000_000_000, {**chat, "gen_ai.usage.input_tokens": 10})
    indexed["attributes"].append(attr(f"gen_ai.prompt.{DIGITS_5000}.content", "hi"))
    negative = span("c", 4_000_000_000, chat)
    negative["attributes"].append({"key": "gen_ai.usage.input_tokens", "value": {"intValue": "-3"}})
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document(counted, indexed, negative)))
    result = read(path)
    assert result.requests == []
    prefix = "resourceSpans[0].scopeSpans[0].spans"
    found = sorted((error.field, error.reason) for error in result.errors)
    digits = "an integer of 5,000 digits (at most 20)"
    expected = [
        (f"{prefix}[0].attributes[gen_ai.usage.input_tokens]", digits),
        (f"{prefix}[1].attributes.gen_ai.prompt.999", digits),  # the key cut at 60 characters
        (
            f"{prefix}[2].attributes.gen_ai.usage.input_tokens",
            "expected a non-negative integer, got -3",
        ),
    ]
    assert len(found) == len(expected)
    for (field, reason), (start, expected_reason) in zip(found, expected, strict=True):
        assert field.startswith(start) and len(field) < 150
        assert reason == expected_reason


def test_int_text() -> None:
    assert sanitize.int_text(" 12 ", "f") == 12
    assert sanitize.int_text("9" * 20, "f") == 10**20 - 1
    for bad in ("9" * 21, "1e3", "", "١٢"):  # the last: Arabic-Indic digits, not ASCII
        with pytest.raises(RecordFieldError) as caught:
            sanitize.int_text(bad, "headers.content-length")
        assert caught.value.field == "headers.content-length"


def test_an_integer_beyond_64_bits_inside_a_body_names_its_path() -> None:
    # orjson reads such a number as a float; a YAML or in-memory record keeps the int.
    # The range is what JSON encoders take: -2**63 .. 2**64 - 1.
    for value in (2**64, -(2**63) - 1):
        with pytest.raises(RecordFieldError) as caught:
            sanitize.check_record({**RECORD, "request": {**CHAT, "seed": value}})
        assert caught.value.field == "request.seed"
    for value in (2**64 - 1, -(2**63)):
        sanitize.check_record({**RECORD, "request": {**CHAT, "seed": value}})


# ------------------------------------------------------------------- depth


def test_input_nested_255_levels_is_a_bad_line_naming_the_field(tmp_path: Path) -> None:
    # record 1, request 2, messages 3, the message 4: content's 255 lists reach level 259.
    content = "[" * 255 + '"hi"' + "]" * 255
    line = json.dumps(RECORD).replace('"content": "hi"', f'"content": {content}')
    path = tmp_path / "deep.jsonl"
    path.write_text(line + "\n" + json.dumps({**RECORD, "request_id": "ok"}) + "\n")
    result = read(path)
    assert [request.request_id for request in result.requests] == ["ok"]  # the next line is read
    (error,) = result.errors
    assert error.line == 1
    assert error.field.startswith("request.messages[0].content[0][0]")
    assert error.field.endswith("... (254 levels)")  # a deep path is shortened
    assert error.reason == f"nested more than {sanitize.MAX_RECORD_DEPTH} levels deep"


def test_a_tool_schema_nested_1000_levels(tmp_path: Path) -> None:
    tool = '{"type":"function","function":{"name":"f","parameters":' + nested_json(1000) + "}}"
    line = json.dumps({**RECORD, "request": {**CHAT, "tools": ["TOOL"]}}).replace('"TOOL"', tool)
    path = tmp_path / "tool.jsonl"
    path.write_text(line + "\n")
    ((number, field, reason),) = errors_of(path)
    assert number == 1
    assert field.startswith("request.tools[0].function.parameters.a.a")
    assert "nested more than 254 levels" in reason


def test_depth_up_to_the_bound_is_read() -> None:
    # nested_json(n) is n objects, the record itself the first: 254 levels are allowed
    # (what orjson's encoder takes), the 255th is refused.
    sanitize.check_record(json.loads(nested_json(254)))
    with pytest.raises(RecordFieldError) as caught:
        sanitize.check_record(json.loads(nested_json(255)))
    assert caught.value.reason == "nested more than 254 levels deep"


def test_inline_records_pass_the_same_sanitizer() -> None:
    errors: list[LogRecordError] = []
    records = [{**RECORD, "timestamp": 1e300}, json.loads(nested_json(300))]
    assert list(read_records(records, "request", errors=errors)) == []
    assert [(error.line, error.field) for error in errors] == [
        (1, "timestamp"),
        (2, "a.a.a.a.a.a.a.a... (254 levels)"),  # the path to the 255th object
    ]


# ------------------------------------------------------------------- text and lines


def test_a_record_of_more_text_than_max_record_chars_stops_the_read(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "log.jsonl",
        [
            RECORD,
            {**RECORD, "request": {**CHAT, "messages": [{"role": "user", "content": "x" * 600}]}},
        ],
    )
    # "openai" + "gpt-4o" + "gpt-4o" + "user" + 600 x = 622 characters in the second record.
    tight = dataclasses.replace(DEFAULT_LIMITS, max_record_chars=621)
    with limits_in_force(tight), pytest.raises(LimitExceededError) as caught:
        read(path)
    location = caught.value.location
    assert (location.source, location.line) == (str(path), 2)
    assert location.field == "request.messages[0].content"
    assert "max_record_chars" in caught.value.message
    with limits_in_force(dataclasses.replace(tight, max_record_chars=622)):
        assert len(read(path).requests) == 2


def test_a_line_longer_than_max_line_bytes_is_refused_before_it_is_read(tmp_path: Path) -> None:
    first = json.dumps(RECORD)
    long = json.dumps(
        {**RECORD, "request": {**CHAT, "messages": [{"role": "user", "content": "y" * 5000}]}}
    )
    path = tmp_path / "log.jsonl"
    path.write_text(first + "\n" + long + "\n")
    tight = dataclasses.replace(DEFAULT_LIMITS, max_line_bytes=len(long) - 1)
    with limits_in_force(tight), pytest.raises(LimitExceededError) as caught:
        read(path)
    assert str(caught.value.location) == f"{path}:2: <line>"
    assert "max_line_bytes" in caught.value.message
    # The newline is not part of the line: exactly the limit is read.
    with limits_in_force(dataclasses.replace(tight, max_line_bytes=len(long))):
        assert len(read(path).requests) == 2


def lists(depth: int) -> str:
    return "[" * depth + '"hi"' + "]" * depth


def langfuse_export(path: Path, content: str) -> Path:
    """A Langfuse export of one generation whose input is the JSON text ``content``."""
    observation = {"id": "g1", "traceId": "t1", "type": "GENERATION", "model": "gpt-4o"}
    observation |= {"startTime": "2026-01-05T10:00:00Z", "input": "INPUT"}
    observation["usageDetails"] = {"input": 10, "output": 2}
    text = json.dumps({"trace": {"id": "t1"}, "observations": [observation]})
    path.write_text(text.replace('"INPUT"', content))
    return path


@pytest.mark.parametrize("depth", [300, 1000])
def test_langfuse_and_langsmith_inputs_nested_deep_name_the_field(
    tmp_path: Path, depth: int
) -> None:
    """Before: an encoder's "Recursion limit reached" inside the adapter (a 500, exit 3). The
    document is checked before any adapter reads it."""
    content = '[{"role":"user","content":' + lists(depth) + "}]"
    export = langfuse_export(tmp_path / "export.json", content)
    ((line, field, reason),) = errors_of(export)
    assert line == 1 and field.startswith("observations[0].input[0].content[0][0]")
    assert reason == "nested more than 254 levels deep"

    run = {"id": "r1", "run_type": "llm", "start_time": "2026-01-05T10:00:00Z"}
    run |= {"inputs": "INPUT", "extra": {"invocation_params": {"model": "gpt-4o"}}}
    run["outputs"] = {"llm_output": {"token_usage": {"prompt_tokens": 5, "completion_tokens": 1}}}
    runs = tmp_path / "runs.jsonl"
    inputs = '{"messages":[{"role":"user","content":' + lists(depth) + "}]}"
    runs.write_text(json.dumps(run).replace('"INPUT"', inputs) + "\n")
    ((line, field, reason),) = errors_of(runs)
    assert line == 1 and field.startswith("inputs.messages[0].content[0][0]")
    assert reason == "nested more than 254 levels deep"


def test_inputs_nested_just_within_the_bound_are_read(tmp_path: Path) -> None:
    # 240 lists inside observations[0].input[0].content: level 245 of the document.
    content = '[{"role":"user","content":' + lists(240) + "}]"
    result = read(langfuse_export(tmp_path / "export.json", content))
    assert len(result.requests) == 1 and result.errors == []


# 2026-01-01T00:00:00 UTC by hand: 56 years from 1970 with 14 leap days (1972..2024),
# (56 x 365 + 14) days x 86,400 s.
NEW_YEAR_2026 = (56 * 365 + 14) * 86_400


@pytest.mark.parametrize(
    "value",
    ["2026-01-01T00:00:00", "2026-01-01T00:00:00Z", "2026-01-01T01:00:00+01:00"],
)
def test_an_optional_iso_time_reads_naive_as_utc(value: str) -> None:
    assert iso_moment(value) == NEW_YEAR_2026


@pytest.mark.parametrize("value", [None, 1767225600, "yesterday", "2026-13-01T00:00:00", "9" * 65])
def test_an_optional_time_that_is_no_iso_string_is_none(value: object) -> None:
    assert iso_moment(value) is None
