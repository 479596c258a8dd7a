"""Caching controls request bodies set, priced under the contracts that honour them.

Token positions are derived here from tiktoken's o200k_base (OpenAI's own encoding) and the
chat framing OpenAI counts (``<start> role <message> content <end>`` per message, then
``<start> assistant <message>``); the rules from OpenAI's prompt caching guide as
docs/contracts.md records them: GPT-5.6+ caches exactly at breakpoints, writes at most
four per request (the latest marks; the implicit breakpoint takes a slot), and reads
consider the latest 50 breakpoints; earlier models cache automatically from 1,024 tokens in
128-token steps, for the retention the request asks (``in_memory`` 5 minutes, ``24h``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.simulator.misses import OVER_WRITE_LIMIT, SCOPE_DIFFERS, TTL_EXPIRED
from cachecast.simulator.pricing import PerRequestRow
from cachecast.tokenizers import read_records
from cachecast.tokenizers.openai_data import load_openai_encoding
from cachecast.usecases.estimate import EstimateRequest, estimate

ENCODING = load_openai_encoding("o200k_base")
NOW = 1_785_000_000  # 2026-07-25, GPT-5.6 terms in force


def tokens(text: str) -> int:
    return len(ENCODING.encode_ordinary(text))


def framing(role: str) -> int:
    """<start> role <message>."""
    return 2 + tokens(role)


def replay(
    store: ContractStore, target: str, records: list[dict[str, Any]], at: dt.date
) -> list[PerRequestRow]:
    rows: list[PerRequestRow] = []
    request = EstimateRequest(log=LogInput(records=records), targets=[target], at=at)
    estimate(request, store, on_row=rows.append)
    return rows


def marked(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "prompt_cache_breakpoint": {"mode": "explicit"}}


SYSTEM = "You answer questions about the attached railway timetable. " * 400


def test_a_marked_system_prompt_is_cached_up_to_its_marker(store: ContractStore) -> None:
    """A marker on the system message's only part caches the whole system message (its
    closing <end> included); in explicit mode nothing else is written."""
    marker = framing("system") + tokens(SYSTEM) + 1
    assert marker > 1024
    records = [
        {
            "timestamp": NOW + index * 60,
            "model": "gpt-5.6",
            "prompt_cache_options": {"mode": "explicit"},
            "messages": [
                {"role": "system", "content": [marked(SYSTEM)]},
                {"role": "user", "content": question},
            ],
        }
        for index, question in enumerate(["When is the first train?", "And the last one?"])
    ]
    first, second = replay(store, "openai:gpt-5.6", records, dt.date(2026, 7, 25))
    assert first.usage.cache_read_tokens == 0
    assert first.usage.cache_write_tokens == {"30m": marker}
    assert second.usage.cache_read_tokens == marker
    assert second.usage.cache_write_tokens == {}
    # The same in implicit mode (the default): the implicit breakpoint at the end of the
    # newest message writes the user message too, and the next request reads the marker.
    for record in records:
        del record["prompt_cache_options"]
    first, second = replay(store, "openai:gpt-5.6", records, dt.date(2026, 7, 25))
    user_end = [marker + framing("user") + tokens(q) + 1 for q in ("When is the first train?",)]
    assert first.usage.cache_write_tokens == {"30m": user_end[0]}
    assert second.usage.cache_read_tokens == marker


def test_only_the_latest_four_marks_are_written(store: ContractStore) -> None:
    head = "Section zero of the handbook, about platforms and tickets. " * 100
    parts = [head] + [f"Section {n}: rules for carriage {n}, wagon {n}. " * 8 for n in range(1, 6)]
    starts = framing("user")
    ends = []
    for part in parts:
        starts += tokens(part)
        ends.append(starts)
    ends[-1] += 1  # a mark on the message's last part ends the whole message (<end>)
    assert ends[0] >= 1024
    body = {
        "model": "gpt-5.6",
        "prompt_cache_options": {"mode": "explicit"},
        "messages": [{"role": "user", "content": [marked(part) for part in parts]}],
    }
    (request,) = read_records([body], "log")
    assert [point.offset for point in request.breakpoints] == ends
    changed = {
        **body,
        "messages": [
            {"role": "user", "content": [marked(p) for p in parts[:2]] + [marked("Other.")]}
        ],
    }
    records = [{"timestamp": NOW, **body}, {"timestamp": NOW + 60, **changed}]
    first, second = replay(store, "openai:gpt-5.6", records, dt.date(2026, 7, 25))
    # Six marks, four writes: the latest four; their tokens are written from the start on.
    assert first.usage.cache_write_tokens == {"30m": ends[-1]}
    # The second request shares the first two parts, whose marks were not written.
    assert second.usage.cache_read_tokens == 0
    causes = {span.cause: span for span in second.misses}
    assert causes[OVER_WRITE_LIMIT].start == 0
    assert causes[OVER_WRITE_LIMIT].tokens >= ends[1]


def test_prompt_cache_key_separates_caches(store: ContractStore) -> None:
    prompt = "Explain the timetable notation used below. " * 150
    records = [
        {
            "timestamp": NOW + index,
            "model": "gpt-4o-mini",
            "prompt_cache_key": key,
            "messages": [{"role": "user", "content": prompt}],
        }
        for index, key in enumerate(["team-a", "team-b", "team-a"])
    ]
    first, other, same = replay(store, "openai:gpt-4o-mini", records, dt.date(2026, 3, 1))
    length = first.usage.input_tokens
    assert length == framing("user") + tokens(prompt) + 1 + framing("assistant")
    expected = 1024 + (length - 1024) // 128 * 128
    assert other.usage.cache_read_tokens == 0
    assert {span.cause for span in other.misses} == {SCOPE_DIFFERS}
    assert same.usage.cache_read_tokens == expected


def test_retention_asked_by_the_request_sets_the_lifetime(store: ContractStore) -> None:
    prompt = "Summarise the following maintenance log entries. " * 150

    def records(retention: str | None) -> list[dict[str, Any]]:
        found = []
        for index in range(2):
            record: dict[str, Any] = {
                "timestamp": 1_772_400_000 + index * 3600,  # an hour apart, March 2026
                "model": "gpt-5.2",
                "messages": [{"role": "user", "content": prompt}],
            }
            if retention is not None:
                record["prompt_cache_retention"] = retention
            found.append(record)
        return found

    day = dt.date(2026, 3, 1)  # gpt-5.2's default retention then: in_memory (5 minutes)
    _, later = replay(store, "openai:gpt-5.2", records(None), day)
    assert later.usage.cache_read_tokens == 0
    assert {span.cause for span in later.misses} >= {TTL_EXPIRED}
    first, later = replay(store, "openai:gpt-5.2", records("24h"), day)
    length = first.usage.input_tokens
    assert first.usage.cache_write_tokens == {"24h": length // 128 * 128}
    assert later.usage.cache_read_tokens == 1024 + (length - 1024) // 128 * 128
