"""The session predictor: the rule that a prediction never sees its own request's split, and
one hand-built mini session per cause (expected values worked out by hand in comments)."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest

from cachecast.sessions.causes import (
    BEST_EFFORT,
    COMPACTION,
    MODEL_CHANGED,
    PREFIX_CHANGED,
    SUBAGENT,
    UNCACHED_TAIL,
    WARM_CACHE,
    explain,
    within,
)
from cachecast.sessions.predictor import ObservedSplit, Prediction, PromptFacts, SessionPredictor
from cachecast.sessions.profiles import CLAUDE_CODE, CODEX_CLI, ClientProfile
from cachecast.sessions.reading import SessionRequest, session_requests
from tests.conftest import shared_data

T0 = 1_770_000_000.0  # any epoch: only differences matter


def facts(
    line: int,
    total: int,
    at: float,
    *,
    lineage: str = "s",
    model: str = "m",
    event: str | None = None,
    subagent: bool = False,
) -> PromptFacts:
    return PromptFacts(
        source="mini",
        line=line,
        request_id=f"r{line}",
        lineage=lineage,
        model=model,
        timestamp=T0 + at,
        prompt_tokens=total,
        event=event,
        subagent=subagent,
    )


def split(
    read: int, write: int, uncached: int, *, ttl: str = "5m", output: int = 0
) -> ObservedSplit:
    return ObservedSplit(read, write, uncached, output, {ttl: write} if write else {})


def run(
    profile: ClientProfile, session: list[tuple[PromptFacts, ObservedSplit]]
) -> list[Prediction]:
    predictor = SessionPredictor(profile)
    out = []
    for each, observed in session:
        predicted = predictor.predict(each)
        out.append(predicted)
        predictor.learn(each, predicted, observed)
    return out


# --- the rule -------------------------------------------------------------------------------


def test_prompt_facts_cannot_carry_the_split() -> None:
    names = {field.name for field in dataclasses.fields(PromptFacts)}
    for forbidden in ("read", "write", "uncached", "cache", "observed", "usage"):
        assert not any(forbidden in name for name in names), names
    parameters = list(inspect.signature(SessionPredictor.predict).parameters)
    assert parameters == ["self", "facts"]


def _claude_session() -> list[SessionRequest]:
    path = shared_data("recordings/claude_code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl")
    found = [
        each
        for each in session_requests(Path(path), "5c0375b4")
        if isinstance(each, SessionRequest)
    ]
    assert len(found) == 20  # PROVENANCE.md: 20 unique messages
    return found


@pytest.mark.parametrize("k", [0, 1, 6, 12, 19])
def test_changing_request_k_split_changes_no_prediction_up_to_k(k: int) -> None:
    session = [(each.facts, each.observed) for each in _claude_session()]
    before = run(CLAUDE_CODE, session)
    own = session[k][1]
    # The same prompt length, split the other way round: everything written, nothing read.
    flipped = ObservedSplit(0, own.read + own.write + own.uncached, 0, own.output, {"5m": 1})
    changed = [*session[:k], (session[k][0], flipped), *session[k + 1 :]]
    after = run(CLAUDE_CODE, changed)
    assert after[: k + 1] == before[: k + 1]
    if k < len(session) - 1 and own.read + own.write:
        # The split does inform the requests after k (what k cached).
        assert after[k + 1 :] != before[k + 1 :]


# --- one mini session per cause ---------------------------------------------------------------


def test_continuing_request_reads_what_the_previous_one_cached() -> None:
    # Request 1: 10,003 tokens, 10,000 written, 3 after the breakpoint. Request 2, 60 s later,
    # 10,500 tokens: reads 10,000, writes 10,500 - 10,000 - 3 (the tail seen) = 497.
    session = [
        (facts(1, 10_003, 0), split(0, 10_000, 3)),
        (facts(2, 10_500, 60), split(10_000, 497, 3)),
    ]
    second = run(CLAUDE_CODE, session)[1]
    assert (second.read, second.write, second.uncached) == (10_000, 497, 3)
    assert within(session[1][0], second, session[1][1])


def test_idle_gap_outlived_the_ttl_both_figures() -> None:
    # 5m TTL (the writes say 5m); the next request comes 7m 30s later: nothing to read.
    session = [
        (facts(1, 10_003, 0), split(0, 10_000, 3)),
        (facts(2, 10_500, 450), split(0, 10_497, 3)),
    ]
    second = run(CLAUDE_CODE, session)[1]
    assert (second.read, second.write) == (0, 10_497)
    assert "idle gap of 7m 30s outlived the cache's 5m 00s lifetime" in second.basis


def test_one_hour_writes_keep_the_prefix_past_five_minutes() -> None:
    # The writes say 1h: 7m 30s later the 10,000 tokens are still there.
    session = [
        (facts(1, 10_003, 0), split(0, 10_000, 3, ttl="1h")),
        (facts(2, 10_500, 450), split(10_000, 497, 3, ttl="1h")),
    ]
    second = run(CLAUDE_CODE, session)[1]
    assert (second.read, second.write, second.ttl) == (10_000, 497, "1h")


def test_compaction_rewrote_the_history() -> None:
    # After a compaction the provider read 18,000 (system prompt and tools); we predict 0.
    session = [
        (facts(1, 40_003, 0), split(0, 40_000, 3)),
        (facts(2, 22_003, 30, event="compacted"), split(18_000, 4_000, 3)),
    ]
    second = run(CLAUDE_CODE, session)[1]
    assert second.read == 0
    cause, words = explain(session[1][0], second, session[1][1], CLAUDE_CODE)
    assert cause == COMPACTION and "18,000" in words


def test_model_changed_starts_a_cache_of_its_own() -> None:
    session = [
        (facts(1, 10_003, 0, model="opus"), split(0, 10_000, 3)),
        (facts(2, 10_500, 30, model="haiku"), split(0, 10_497, 3)),
    ]
    second = run(CLAUDE_CODE, session)[1]
    assert second.read == 0 and "model changed from opus to haiku" in second.basis
    # A read short of what was predicted, with the model changed: named as such.
    predicted = Prediction(5_000, 0, 5_500, None, "", previous_model="opus", new_lineage=False)
    cause, words = explain(session[1][0], predicted, ObservedSplit(0, 0, 10_500), CODEX_CLI)
    assert cause == MODEL_CHANGED and "5,000 tokens not read" in words


def test_subagent_started_with_a_prompt_of_its_own() -> None:
    session = [
        (facts(1, 20_003, 0), split(0, 20_000, 3)),
        (facts(2, 11_780, 10, lineage="s/agent-x", subagent=True), split(11_381, 396, 3)),
    ]
    second = run(CLAUDE_CODE, session)[1]
    assert second.read == 0
    cause, words = explain(session[1][0], second, session[1][1], CLAUDE_CODE)
    assert cause == SUBAGENT and "11,381" in words


def test_tools_or_system_prompt_changed() -> None:
    # 20,000 cached; the next request reads only 15,000 of them and writes 5,497.
    session = [
        (facts(1, 20_003, 0), split(0, 20_000, 3)),
        (facts(2, 20_500, 20), split(15_000, 5_497, 3)),
    ]
    second = run(CLAUDE_CODE, session)[1]
    assert second.read == 20_000
    assert not within(session[1][0], second, session[1][1])
    cause, words = explain(session[1][0], second, session[1][1], CLAUDE_CODE)
    assert cause == PREFIX_CHANGED and "read only 15,000 of the 20,000" in words


def test_provider_best_effort_miss() -> None:
    # Codex: request 1 prompt 20,000 + output 100 = 20,100 cached; request 2 (21,000) may read
    # 1,024 + floor((20,100 - 1,024) / 128) x 128 = 1,024 + 149 x 128 = 20,096; it read 1,024.
    session = [
        (facts(1, 20_000, 0), ObservedSplit(0, 0, 20_000, 100, writes_reported=False)),
        (facts(2, 21_000, 5), ObservedSplit(1_024, 0, 19_976, 50, writes_reported=False)),
    ]
    second = run(CODEX_CLI, session)[1]
    assert second.read == 20_096
    cause, words = explain(session[1][0], second, session[1][1], CODEX_CLI)
    assert cause == BEST_EFFORT and "missed 19,072 tokens" in words


def test_warm_cache_before_the_log_began() -> None:
    session = [(facts(1, 25_897, 0), split(17_842, 8_052, 3))]
    first = run(CLAUDE_CODE, session)[0]
    assert first.read == 0
    cause, words = explain(session[0][0], first, session[0][1], CLAUDE_CODE)
    assert cause == WARM_CACHE and "17,842" in words


def test_tokens_after_the_last_breakpoint() -> None:
    # Reads right (28,297) but 2,280 tokens were neither read nor written (1 expected).
    session = [
        (facts(1, 28_298, 0), split(0, 28_297, 1)),
        (facts(2, 32_915, 5), split(28_297, 2_338, 2_280)),
    ]
    second = run(CLAUDE_CODE, session)[1]
    assert (second.read, second.write) == (28_297, 32_915 - 28_297 - 1)
    cause, words = explain(session[1][0], second, session[1][1], CLAUDE_CODE)
    assert cause == UNCACHED_TAIL and "2,280 tokens" in words


def test_codex_session_start_prefix_is_learned_from_earlier_sessions() -> None:
    # Session a's first request read 3,456 (the instructions and tools); session b's first
    # request is predicted to read the same.
    session = [
        (facts(1, 17_203, 0, lineage="a"), ObservedSplit(3_456, 0, 13_747, writes_reported=False)),
        (facts(1, 17_102, 60, lineage="b"), ObservedSplit(3_456, 0, 13_646, writes_reported=False)),
    ]
    assert [p.read for p in run(CODEX_CLI, session)] == [0, 3_456]
