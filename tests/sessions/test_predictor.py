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
    user_turn: bool = False,
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
        user_turn=user_turn,
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


def test_a_sub_agents_five_minute_writes_leave_the_main_conversations_hour() -> None:
    # Claude Code's promptCacheTtl and subagentPromptCacheTtl: the main conversation writes
    # for 1 hour, a sub-agent between its requests for 5 minutes. 20 minutes after its last
    # request the main conversation still reads its 10,000 tokens; the sub-agent's own
    # prefix, idle 7m 30s, is gone (both lifetimes learned from each kind's writes).
    agent = {"lineage": "s/agent-x", "subagent": True}
    session = [
        (facts(1, 10_003, 0), split(0, 10_000, 3, ttl="1h")),
        (facts(2, 8_003, 10, **agent), split(0, 8_000, 3)),
        (facts(3, 8_503, 460, **agent), split(0, 8_500, 3)),
        (facts(4, 10_500, 1_200), split(10_000, 497, 3, ttl="1h")),
    ]
    predicted = run(CLAUDE_CODE, session)
    assert (predicted[2].read, predicted[2].ttl) == (0, "5m")
    assert (predicted[3].read, predicted[3].write, predicted[3].ttl) == (10_000, 497, "1h")


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


def test_a_new_sub_agent_reads_what_the_previous_new_one_read() -> None:
    # Sub-agents of one type share a system prompt and tools: once a sub-agent's first request
    # has read 11,381 tokens an earlier one cached, the next one's first request is predicted
    # to read them too (within the lifetime); one that read nothing at its start (another
    # type) leaves nothing assumed.
    def agent(line: int, name: str, total: int, at: float) -> PromptFacts:
        return facts(line, total, at, lineage=f"s/agent-{name}", subagent=True)

    session = [
        (facts(1, 20_003, 0), split(0, 20_000, 3)),
        (agent(2, "a", 12_805, 10), split(0, 12_802, 3)),
        (agent(3, "b", 11_780, 70), split(11_381, 396, 3)),
        (agent(4, "c", 13_000, 130), split(11_381, 1_616, 3)),
        (agent(5, "d", 14_003, 190), split(0, 14_000, 3)),
        (agent(6, "e", 12_000, 250), split(11_381, 616, 3)),
    ]
    predicted = run(CLAUDE_CODE, session)
    assert [each.read for each in predicted[1:]] == [0, 0, 11_381, 11_381, 0]
    assert "an earlier one cached" in predicted[3].basis


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
    assert cause == BEST_EFFORT and "missed 19,072 of the 20,096 tokens" in words
    assert "it read 1,024" in words and "last used 0m 05s before" in words
    assert "idle" not in words  # 5 s: no pause to shorten


def test_best_effort_miss_after_a_pause_names_the_documented_lifetime() -> None:
    # The same miss 7m 56s after the prefix was last used: past the 5 minutes OpenAI documents
    # as the shortest lifetime of an idle prefix (docs/clients.md), so the pause is named.
    session = [
        (facts(1, 20_000, 0), ObservedSplit(0, 0, 20_000, 100, writes_reported=False)),
        (facts(2, 21_000, 476), ObservedSplit(1_024, 0, 19_976, 50, writes_reported=False)),
    ]
    second = run(CODEX_CLI, session)[1]
    cause, words = explain(session[1][0], second, session[1][1], CODEX_CLI)
    assert cause == BEST_EFFORT
    assert "idle 7m 56s, longer than the 5m 00s to 10m 00s" in words


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


def codex(
    read: int, output: int = 0, reasoning: int = 0, total: int | None = None
) -> ObservedSplit:
    """A Codex observation: reads only (no writes reported); ``total`` the prompt length."""
    uncached = 0 if total is None else total - read
    return ObservedSplit(read, 0, uncached, output, writes_reported=False, reasoning=reasoning)


def step(tokens: int) -> int:
    """OpenAI's cacheable length within ``tokens``: 1,024, then whole 128-token increments."""
    return 0 if tokens < 1_024 else 1_024 + (tokens - 1_024) // 128 * 128


def test_codex_new_user_turn_reads_up_to_where_the_previous_turn_reasoned() -> None:
    # The first numbers of the 12-40-23 rollout. Request 1 (a user turn, 17,203 tokens)
    # reasons; request 2 may read its prompt + output 17,203 + 358 = 17,561, in steps:
    # 1,024 + 129 x 128 = 17,536 (it read that). Request 3 opens a new user turn: the
    # previous turn's reasoning is no longer sent, so the prefix ends where request 1's
    # reasoning began, at 17,203: 1,024 + 126 x 128 = 17,152 (the rollout's request 22 read
    # 17,152), not the 18,944 its own length would allow.
    session = [
        (facts(1, 17_203, 0, user_turn=True), codex(3_456, 358, 193, 17_203)),
        (facts(2, 19_000, 6), codex(17_536, 200, 0, 19_000)),
        (facts(3, 18_950, 60, user_turn=True), codex(17_152, 100, 0, 18_950)),
        # A turn with no reasoning (request 3's) drops nothing: request 4 may read request
        # 3's prompt + output 18,950 + 100 = 19,050: 1,024 + 140 x 128 = 18,944.
        (facts(4, 19_500, 90, user_turn=True), codex(18_944, 100, 0, 19_500)),
    ]
    predicted = [p.read for p in run(CODEX_CLI, session)]
    assert predicted[1:] == [step(17_561), step(17_203), step(19_050)]
    assert predicted[1:] == [17_536, 17_152, 18_944]
    assert "new user turn" in run(CODEX_CLI, session)[2].basis


def test_codex_lag_is_kept_through_compaction() -> None:
    # Requests 2 and 3 read 1,188 and 1,164 short of the previous prompt + output (40,100
    # and 41,100): two in a row, a lag of min(1,188, 1,164) = 1,164. Compaction keeps the
    # user messages the lag comes with (docs/clients.md), so the request after it may read
    # 20,100 - 1,164 = 18,936: 1,024 + 139 x 128 = 18,816 (20,096 without the lag).
    session = [
        (facts(1, 40_000, 0), codex(0, 100)),
        (facts(2, 41_000, 10), codex(38_912, 100)),
        (facts(3, 42_000, 20), codex(39_936, 100)),
        (facts(4, 20_000, 30, event="compacted"), codex(5_000, 100)),
        (facts(5, 21_000, 40), codex(18_816, 100)),
    ]
    assert run(CODEX_CLI, session)[4].read == step(20_100 - 1_164) == 18_816


def test_codex_two_partial_misses_apart_are_not_a_lag() -> None:
    # Requests 2 and 4 read 1,044 and 996 short, request 3 missed 13,564: no two shortfalls
    # in a row, so request 5 is predicted without a lag: 33,100 -> 1,024 + 250 x 128 = 33,024
    # (a lag of min(1,044, 996) would have made it 32,000).
    session = [
        (facts(1, 30_000, 0), codex(0, 100)),
        (facts(2, 31_000, 5), codex(29_056, 100)),
        (facts(3, 32_000, 10), codex(17_536, 100)),
        (facts(4, 33_000, 15), codex(31_104, 100)),
        (facts(5, 34_000, 20), codex(33_024, 100)),
    ]
    assert run(CODEX_CLI, session)[4].read == step(33_100) == 33_024


def test_codex_prompt_shorter_than_the_previous_one() -> None:
    # A lag of 2,800 (requests 2 and 3). Request 4 opens a turn and reasons; its count
    # (110,000) holds a hosted web search's results, which request 5's prompt (107,000) does
    # not carry. Request 5 may read no further than its own prompt less the lag: 104,200 ->
    # 1,024 + 806 x 128 = 104,192. Request 4's reasoning sits at most 107,000 - its output
    # 600 = 106,400 into request 5's prompt, so the next user turn (request 6) may read
    # 106,400 - 2,800 = 103,600 -> 1,024 + 801 x 128 = 103,552 (104,576 otherwise).
    session = [
        (facts(1, 100_000, 0), codex(96_000, 500)),
        (facts(2, 101_000, 5), codex(97_700, 500)),
        (facts(3, 102_000, 10), codex(98_700, 500)),
        (facts(4, 110_000, 60, user_turn=True), codex(99_700, 600, 300)),
        (facts(5, 107_000, 70), codex(103_800, 400)),
        (facts(6, 108_000, 120, user_turn=True), codex(103_552, 400)),
    ]
    predicted = run(CODEX_CLI, session)
    assert predicted[4].read == step(107_000 - 2_800) == 104_192
    assert predicted[5].read == step(106_400 - 2_800) == 103_552


def test_codex_read_after_a_pause_past_the_assumed_lifetime() -> None:
    # 12-54-34's request 5: 23m 03s (1,383 s) after the request before, in the same turn,
    # past the 10 minutes assumed at a new turn, it read the whole 19,603 + 167 = 19,770 ->
    # 1,024 + 146 x 128 = 19,712. Within a turn the prefix is kept up to the hour OpenAI
    # documents (Codex pins a turn's requests to one machine): predicted 19,712.
    session = [
        (facts(1, 19_603, 0), codex(3_456, 167, 0, 19_603)),
        (facts(2, 20_902, 1_383), codex(19_712, 432, 185, 20_902)),
    ]
    second = run(CODEX_CLI, session)[1]
    assert second.read == step(19_770) == 19_712
    assert second.gap_seconds == 1_383 and second.ttl_seconds == 3_600
    # The same pause before a new user turn: the 10-minute lifetime, so only the 3,456 the
    # session's first request read (the instructions and tools common to sessions); the read
    # is explained as best effort within the documented hour.
    session[1] = (facts(2, 20_902, 1_383, user_turn=True), session[1][1])
    second = run(CODEX_CLI, session)[1]
    assert second.read == 3_456 and second.ttl_seconds == 600
    cause, words = explain(session[1][0], second, session[1][1], CODEX_CLI)
    assert cause == BEST_EFFORT
    assert "idle gap of 23m 03s, beyond the 10m 00s lifetime assumed" in words
    assert "19,712 tokens" in words and "documents up to 1h 00m" in words


def test_codex_within_a_turn_a_pause_past_the_hour_loses_the_prefix() -> None:
    # 61 minutes (3,660 s) idle within a turn: past the hour OpenAI documents as the longest
    # an idle prefix is kept, so only the 3,456 common to sessions is predicted.
    session = [
        (facts(1, 19_603, 0), codex(3_456, 167, 0, 19_603)),
        (facts(2, 20_902, 3_660), codex(3_456, 432, 185, 20_902)),
    ]
    assert run(CODEX_CLI, session)[1].read == 3_456


# --- what a best-effort miss read, and the documented overflow rate (docs/clients.md) ----------


def _explained(session: list[tuple[PromptFacts, ObservedSplit]]) -> tuple[str, str]:
    """The last request's cause and words, with what it read named as replay names it."""
    predictor = SessionPredictor(CODEX_CLI)
    for each, observed in session[:-1]:
        predictor.learn(each, predictor.predict(each), observed)
    last, observed = session[-1]
    predicted = predictor.predict(last)
    held = predictor.held_prefix(last, observed.read)
    return explain(last, predicted, observed, CODEX_CLI, held)


def _codex(read: int, total: int, output: int = 0) -> ObservedSplit:
    return ObservedSplit(read, 0, total - read, output, writes_reported=False)


def test_a_miss_that_read_where_an_earlier_request_ended_names_it() -> None:
    # Request 1: 20,000 + 100 output; request 2 (21,000 + 50) read 1,024 + 149 x 128 = 20,096,
    # request 1's prompt plus output in steps; request 3 (22,000) may read the steps of
    # 21,050: 1,024 + 156 x 128 = 20,992, and read 20,096 again: exactly where request 1 (at
    # line 1, 10 s before) ended, as a machine that served request 1 and not 2 holds it.
    # Two requests in the minute before: under OpenAI's about 15 a minute.
    session = [
        (facts(1, 20_000, 0), _codex(0, 20_000, 100)),
        (facts(2, 21_000, 5), _codex(20_096, 21_000, 50)),
        (facts(3, 22_000, 10), _codex(20_096, 22_000)),
    ]
    cause, words = _explained(session)
    assert cause == BEST_EFFORT and "missed 896 of the 20,992 tokens" in words
    held = "it read exactly the prompt plus output of the request at line 1 (0m 10s before)"
    assert held in words
    assert "; 2 requests of this conversation in the minute before, under the about 15" in words


def test_a_miss_over_the_documented_overflow_rate_says_so() -> None:
    # 16 requests 3 s apart (0 to 45 s), each reading its predecessor's prompt in steps; the
    # 17th, at 48 s, has all 16 in the minute before: over OpenAI's about 15 a minute, past
    # which requests for one prefix and cache key overflow to other machines. It read 1,024.
    session = [(facts(1, 20_000, 0), _codex(0, 20_000))]
    for i in range(1, 16):
        prompt = 20_000 + 500 * i
        session.append((facts(i + 1, prompt, 3 * i), _codex(step_of(prompt - 500), prompt)))
    session.append((facts(17, 30_000, 48), _codex(1_024, 30_000)))
    cause, words = _explained(session)
    assert cause == BEST_EFFORT
    assert "; 16 requests of this conversation in the minute before: over the about 15" in words
    assert "overflow to other machines, which do not hold it" in words


def test_a_new_session_that_missed_to_the_common_prefix_says_so() -> None:
    # Session a's first request read 3,456 (the prefix common to sessions, learned); session
    # b's second request may read its first's 30,000 in steps (1,024 + 226 x 128 = 29,952) and
    # read 3,456: a machine that never saw the conversation.
    session = [
        (facts(1, 17_000, 0, lineage="a"), _codex(3_456, 17_000)),
        (facts(2, 30_000, 100, lineage="b"), _codex(3_456, 30_000)),
        (facts(3, 31_000, 110, lineage="b"), _codex(3_456, 31_000)),
    ]
    cause, words = _explained(session)
    assert cause == BEST_EFFORT and "missed 26,496 of the 29,952 tokens" in words
    assert "it read only the 3,456-token prefix common to this client's sessions" in words


def test_a_read_off_the_documented_steps_is_pointed_out() -> None:
    # ccusage's hand-written fixture: 250 cached of a 1,000-token prompt, under OpenAI's
    # 1,024-token minimum: no prediction in OpenAI's steps (0, or 1,024 + n x 128) can match.
    session = [(facts(1, 1_000, 0), _codex(250, 1_000))]
    cause, words = _explained(session)
    assert cause == WARM_CACHE
    assert "250 cached tokens is off the steps the profile's cache reads in" in words


def step_of(tokens: int) -> int:
    """OpenAI's cacheable length: 1,024, then whole 128-token increments (docs/clients.md)."""
    return 0 if tokens < 1_024 else 1_024 + (tokens - 1_024) // 128 * 128
