"""Long conversations built from references (issue 28, item 7): OpenAI Responses requests
chained by ``previous_response_id`` in a HAR file, and a VCR cassette whose interactions
alias one request and one response.

Before: a chain of 3,000 requests (a 3 MB HAR) took a minute and 2.5 GB to inspect, every
request's history walked again in Python (its cache marks, its comparison with the request
before) and held 256 prompts at a time. The token counts here are derived in the test from
OpenAI's documented chat format (each message is ``<start>`` role ``<message>`` content
``<end>``: 3 tokens and its role's and content's; the reply primed with ``<start>assistant
<message>``: 3 more), so request k's prompt is the previous request's prompt, plus the
previous response's output message, plus the new input message, counted with o200k_base."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from bench.chains import (
    chain_exchange,
    turn_input,
    turn_output,
    write_aliased_cassette,
    write_chain_har,
)
from bench.peak import run_measured
from cachecast.core.errors import LimitExceededError
from cachecast.core.limits import DEFAULT_LIMITS, SERVICE_LIMITS, limits_in_force
from cachecast.logs import open_log
from cachecast.logs.errors import LogRecordError
from cachecast.tokenizers import log_reader
from cachecast.tokenizers.openai_data import load_openai_encoding
from cachecast.tokenizers.records import read_log

REPO = Path(__file__).resolve().parents[2]
PEAK_KIB = 500 * 1024  # the bound for any one file: the process stays under 500 MB
ENCODING = load_openai_encoding("o200k_base")
PRIMING = 3  # <start>assistant<message>: "assistant" is one o200k token


def message_tokens(role: str, text: str) -> int:
    """One chat message in OpenAI's format: <start> role <message> content <end>."""
    return 3 + len(ENCODING.encode_ordinary(role)) + len(ENCODING.encode_ordinary(text))


def chain_prompts(requests: int) -> list[int]:
    """Prompt tokens of each request of ``bench.chains``' chain: request k's prompt is the
    previous one's, plus the previous output and the new input (the priming counted once)."""
    prompts = []
    total = PRIMING
    for index in range(requests):
        if index:
            total += message_tokens("assistant", turn_output(index - 1))
        total += message_tokens("user", turn_input(index))
        prompts.append(total)
    return prompts


def env(database_url: str | None = None) -> dict[str, str]:
    extra = {"CACHECAST_DATABASE_URL": database_url} if database_url else {}
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


def write_har(path: Path, entries: list[dict[str, Any]]) -> Path:
    """Indented, as browsers save HAR files: records are then numbered by entry."""
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}, indent=2))
    return path


def naming(index: int, previous: int | None) -> dict[str, Any]:
    """Entry ``index`` of the chain, its request naming response ``previous`` instead."""
    entry = chain_exchange(index)
    body = json.loads(entry["request"]["postData"]["text"])
    body.pop("previous_response_id", None)
    if previous is not None:
        body["previous_response_id"] = f"resp_{previous:06d}"
    entry["request"]["postData"]["text"] = json.dumps(body)
    return entry


def test_each_chained_request_counts_every_earlier_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """300 requests, read in batches cut every few thousand characters (so that a request's
    earlier turns were encoded in an earlier batch), then branches: request 300 names
    response 10 (older than the histories kept built: its turns are walked), 301 continues
    that branch, 302 goes back to the main line's newest response, 299."""
    monkeypatch.setattr(log_reader, "BATCH_CHARACTERS", 5_000)
    entries = [naming(index, index - 1 if index else None) for index in range(300)]
    entries += [naming(300, 10), naming(301, 300), naming(302, 299)]
    log = write_har(tmp_path / "chain.har", entries)
    prompts = chain_prompts(300)

    def after(earlier_prompt: int, earlier: int, index: int) -> int:
        return (
            earlier_prompt
            + message_tokens("assistant", turn_output(earlier))
            + message_tokens("user", turn_input(index))
        )

    prompts.append(after(prompts[10], 10, 300))
    prompts.append(after(prompts[300], 300, 301))
    prompts.append(after(prompts[299], 299, 302))
    requests = list(read_log(log, strict=True))
    assert [r.input_tokens for r in requests] == prompts
    assert all(r.exact and r.prompt_complete for r in requests)
    assert prompts[:3] == [25, 59, 93]  # by hand: see the module docstring's format


def test_a_response_output_is_checked_in_the_request_that_takes_it_over(
    tmp_path: Path,
) -> None:
    """The items a request shares with the one before were checked with that one; a
    response's output was in no record yet: nested 300 levels, the next request holding it
    is refused, naming the item (and so is the one after, which holds it too)."""
    entries = [chain_exchange(index) for index in range(4)]
    response = json.loads(entries[1]["response"]["content"]["text"])
    deep: Any = 1
    for _ in range(300):
        deep = {"a": deep}
    response["output"][0]["content"][0]["annotations"] = [deep]
    entries[1]["response"]["content"]["text"] = json.dumps(response)
    log = write_har(tmp_path / "deep.har", entries)
    errors: list[LogRecordError] = []
    requests = list(read_log(log, errors=errors))
    assert [r.line for r in requests] == [1, 2]
    assert [e.line for e in errors] == [3, 4]
    # request 2's input: [input 0, output 0, input 1, output 1 (the deep one), input 2]
    assert errors[0].field.startswith("request.input[3].content[0].annotations[0].a")
    assert "nested more than 254 levels deep" in str(errors[0])


def test_a_chain_past_the_record_text_limit_stops_at_the_first_request_over_it(
    tmp_path: Path,
) -> None:
    """Each request adds 10,000 characters of input; under a limit of 95,000 characters a
    record, request 9 (0-based: ten inputs, 100,000 characters) is the first over it,
    though it is checked as the request before plus its new items."""
    entries = []
    for index in range(12):
        entry = naming(index, index - 1 if index else None)
        body = json.loads(entry["request"]["postData"]["text"])
        body["input"] = "x" * 10_000
        entry["request"]["postData"]["text"] = json.dumps(body)
        entries.append(entry)
    log = write_har(tmp_path / "long.har", entries)
    limits = dataclasses.replace(DEFAULT_LIMITS, max_record_chars=95_000)
    with limits_in_force(limits), pytest.raises(LimitExceededError) as caught:
        list(read_log(log))
    assert caught.value.location.line == 10
    assert "max_record_chars" in str(caught.value)


def test_inspect_and_estimate_of_3000_chained_requests_stay_under_500_mb(
    migrated_db_url: str, tmp_path: Path
) -> None:
    """The issue's file: 3,000 chained Responses requests. Each command in a child process
    whose own peak memory is measured (``bench.peak``); the estimate's prompt tokens are the
    sum of the chain's prompts derived above."""
    log = write_chain_har(tmp_path / "chain.har", 3000)
    inspected = run_measured("cachecast", ["inspect", str(log), "--json"], env=env(), cwd=REPO)
    assert inspected.returncode == 0, inspected.stderr
    assert json.loads(inspected.stdout)["files"][0]["requests"] == 3000
    assert inspected.peak_kib < PEAK_KIB, inspected
    estimated = run_measured(
        "cachecast",
        ["estimate", str(log), "--target", "openai:gpt-4o", "--at", "2026-11-01", "--json"],
        env=env(migrated_db_url),
        cwd=REPO,
    )
    assert estimated.returncode == 0, estimated.stderr
    (target,) = json.loads(estimated.stdout)["targets"]
    assert target["requests"] == 3000
    assert target["input_tokens"] == sum(chain_prompts(3000))
    assert estimated.peak_kib < PEAK_KIB, estimated


def test_20000_interactions_aliasing_one_exchange_are_read_in_one_pass(tmp_path: Path) -> None:
    """Each alias is counted as the subtree it names and the document built with the one
    object each names: 20,000 interactions (a 680 KB cassette) are 20,000 requests, read by
    the command line in a child process under 500 MB. Their usage is the recorded
    response's, 9 prompt tokens each."""
    cassette = write_aliased_cassette(tmp_path / "aliases.yaml", 20_000)
    ran = run_measured("cachecast", ["inspect", str(cassette), "--json"], env=env(), cwd=REPO)
    assert ran.returncode == 0, ran.stderr
    (report,) = json.loads(ran.stdout)["files"]
    assert report["requests"] == 20_000
    assert report["observed"]["input_tokens"] == 9 * 20_000
    assert ran.peak_kib < PEAK_KIB, ran


def test_the_service_refuses_aliases_that_expand_past_its_node_budget(tmp_path: Path) -> None:
    """Under the service's budget (1,000,000 nodes, aliases expanded) 20,000 aliased
    interactions pass and 70,000 do not. One interaction expanded is 33 nodes: its mapping,
    two keys, the request (13: mapping; body, method, uri as key and value; headers, its
    mapping, Content-Type, its list and value) and the response (17: mapping; body key, its
    mapping, string key and value; the same 5 of headers; status key, its mapping, code and
    message as key and value). 20,000 x 33 = 660,000; 70,000 x 33 = 2,310,000."""
    with limits_in_force(SERVICE_LIMITS):
        accepted = open_log(write_aliased_cassette(tmp_path / "ok.yaml", 20_000))
        assert sum(1 for _ in accepted) == 20_000
        refused = write_aliased_cassette(tmp_path / "many.yaml", 70_000)
        with pytest.raises(LimitExceededError) as caught:
            list(open_log(refused))
    message = str(caught.value)
    assert str(refused) in message and "max_yaml_nodes" in message
