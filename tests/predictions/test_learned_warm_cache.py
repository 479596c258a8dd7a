"""What the log says a provider held feeds the later predictions (docs/predictions.md, "Warm
caches the log shows"), and equal content keeps its length when a count is implausible.

Token counts of texts are tiktoken's o200k_base, taken here independently of the reader:
the approximation frames every block as ``<start> role <message> text <end>`` (4 tokens,
the role one token) and primes the reply with ``<start> assistant <message>`` (3 tokens).
Observed counts are chosen equal to that approximation (ratio 1), so every boundary sits
where the arithmetic in the comments puts it."""

from __future__ import annotations

import base64
import json
from typing import Any

import yaml

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.tokenizers import read_records
from cachecast.tokenizers.calibration import Calibrator
from cachecast.usecases.reconcile import WARM_CACHE, ReconcileRequest, reconcile
from tests.conftest import shared_data
from tests.predictions.test_calibration import (
    BLOCK_FRAMING,
    MANUAL,
    PRIMING,
    SONNET,
    anthropic_usage,
    block,
    text_tokens,
)
from tests.predictions.test_served_recordings import rows, run

SYSTEM = MANUAL * 2  # well over Claude Sonnet 4.5's 1,024-token minimum
FIRST_QUESTION = "Which torque for an M6 bolt when the thread is oiled? " * 4
SECOND_QUESTION = "And which washers go under a stainless M12 nut? " * 4


def record(question: str, at: int, read: int, written: int) -> dict[str, Any]:
    """One Anthropic request: the system prompt as a plain block, the question marked with
    ``cache_control``; its usage (the 3 priming tokens are the uncached tail)."""
    return {
        "timestamp": at,
        "provider": "anthropic",
        "model": SONNET,
        "request": {
            "system": [block(SYSTEM)],
            "messages": [{"role": "user", "content": [block(question, marked=True)]}],
        },
        "response": anthropic_usage(PRIMING, read, written),
    }


def test_a_prefix_read_before_the_log_is_read_by_the_next_request(store: ContractStore) -> None:
    system = BLOCK_FRAMING + text_tokens(SYSTEM)  # the system block ends here
    first = BLOCK_FRAMING + text_tokens(FIRST_QUESTION)
    second = BLOCK_FRAMING + text_tokens(SECOND_QUESTION)
    assert system > 1024
    # Request 1 found the system prompt cached by a run before the log (read `system`) and
    # wrote its question; request 2, a minute later, asks another question: Anthropic read
    # the system prompt again and wrote the new question.
    records = [
        record(FIRST_QUESTION, 1_780_000_000, read=system, written=first),
        record(SECOND_QUESTION, 1_780_000_060, read=system, written=second),
    ]
    report = reconcile(ReconcileRequest(log=LogInput(records=records)), store)
    predicted = [(row[1], row[3]) for row in rows(report)]
    # Request 1: nothing in the log cached the system prompt; its breakpoint (system +
    # first) is written whole, and its read stays the warm start it is.
    # Request 2: the provider held request 1's first `system` tokens (its observed read):
    # read `system`, write its own question, `second`.
    assert predicted == [(0, system + first), (system, second)]
    classes = [row.classification for row in sorted(report.requests, key=lambda r: r.line)]
    assert classes == [WARM_CACHE, None]
    # Request 2's own observation is never used for its prediction: another split observed
    # for it leaves its prediction as it was.
    records[1] = record(SECOND_QUESTION, 1_780_000_060, read=0, written=system + second)
    changed = reconcile(ReconcileRequest(log=LogInput(records=records)), store)
    assert [(row[1], row[3]) for row in rows(changed)] == predicted


def test_an_implausible_count_still_fixes_the_length_of_equal_content() -> None:
    """xAI-style: a hidden prompt makes the first count far more than the text (a ratio
    outside 1/2..2, not learned from); the next request repeats that content and adds a
    message. The repeated blocks keep the length the first request's count gave them."""
    first_text = BLOCK_FRAMING * 2 + text_tokens("short") + text_tokens("hi") + PRIMING
    records: list[dict[str, Any]] = [
        {
            "provider": "anthropic",
            "model": SONNET,
            "request": {
                "system": "short",
                "messages": [{"role": "user", "content": "hi"}],
            },
            "response": anthropic_usage(first_text * 10, 0, 0),  # ratio about 10
        },
        {
            "provider": "anthropic",
            "model": SONNET,
            "request": {
                "system": "short",
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "hello, how can I help?"},
                    {"role": "user", "content": "tell me about bolts"},
                ],
            },
            "response": anthropic_usage(first_text * 10 + 40, 0, 0),
        },
    ]
    earlier, later = list(read_records(records, "log", calibrator=Calibrator(None)))
    assert earlier.input_tokens == first_text * 10 and later.input_tokens == first_text * 10 + 40
    # The system block and the first user message are the same content in both: same
    # lengths, so request 2 opens with request 1's prompt less its reply priming.
    assert earlier.segments[0] == later.segments[0]
    assert earlier.segments[1] == later.segments[1]
    shared = earlier.segments[1].end
    assert earlier.tokens is not None and later.tokens is not None
    assert list(earlier.tokens[:shared]) == list(later.tokens[:shared])


def test_deepseek_second_request_reads_what_the_first_cached(store: ContractStore) -> None:
    # RubyLLM's DeepSeek cassette: two requests of one conversation; the second read
    # `prompt_cache_hit_tokens` of what the first sent. Before equal content kept its
    # length under a first count, the two prompts shared almost nothing and the second
    # read counted as a warm cache.
    path = shared_data(
        "recordings/vcr_cassettes/ruby-vcr/chat_function_calling_deepseek_deepseek-chat"
        "_can_use_parallel_tool_calls.yml"
    )
    document = yaml.load(path.read_text(), Loader=_RubyLoader)
    hits = [usage["prompt_cache_hit_tokens"] for usage in _usages(document["http_interactions"])]
    report = run(path, store)
    assert [row[1] for row in rows(report)] == hits  # predicted reads are the observed ones
    assert hits[1] > 0


class _RubyLoader(yaml.SafeLoader):
    """YAML's safe loader, reading Ruby's ``!binary`` strings (base64) as text."""


_RubyLoader.add_constructor(
    "!binary",
    lambda loader, node: base64.b64decode(loader.construct_scalar(node)).decode("utf-8"),
)


def _usages(interactions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last `usage` of each response body (a stream's final chunk carries it)."""
    found = []
    for interaction in interactions:
        text = interaction["response"]["body"]["string"]
        usage = None
        for line in text.splitlines():
            payload = line.removeprefix("data: ").strip()
            if payload.startswith("{"):
                usage = json.loads(payload).get("usage") or usage
        if usage is None and text.strip().startswith("{"):
            usage = json.loads(text).get("usage")
        if usage is not None:
            found.append(usage)
    return found
