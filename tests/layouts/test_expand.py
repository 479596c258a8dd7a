"""Layout expansion (arrival pattern, history, breakpoints) and the divergence finder."""

from __future__ import annotations

import datetime as dt

import pytest

from cachecast.layouts.divergence import find_divergence, first_difference
from cachecast.layouts.expand import expand, iter_records
from cachecast.layouts.spec import LayoutError, load_layout_text, parse_layout
from tests.layouts.conftest import Invoke, agent_layout, write_yaml


def test_arrival_pattern_and_history() -> None:
    layout = parse_layout(agent_layout(sessions=2, turns=3), "a.yaml")
    requests = expand(layout)
    start = dt.datetime(2026, 3, 2, 9, tzinfo=dt.UTC).timestamp()
    # Session s turn t arrives at start + 90 s * s + 40 s * t; sorted by time:
    # s0t0 0, s0t1 40, s0t2 80, s1t0 90, s1t1 130, s1t2 170.
    assert [(r.request_id, r.timestamp - start) for r in requests] == [
        ("s0000-t000", 0),
        ("s0000-t001", 40),
        ("s0000-t002", 80),
        ("s0001-t000", 90),
        ("s0001-t001", 130),
        ("s0001-t002", 170),
    ]
    # Turn t sends: system, t earlier (user, assistant) pairs, then its own user message.
    for request in requests:
        turn = int(request.request_id[-3:])
        messages = request.body["messages"]
        assert len(messages) == 1 + 2 * turn + 1
        assert [m["role"] for m in messages[1:]] == ["user", "assistant"] * turn + ["user"]
    # The history is re-sent exactly as it was sent: turn 2 starts with all of turn 1.
    assert requests[2].body["messages"][:4] == requests[1].body["messages"]
    # Turn values cycle over the global request index: request 4 (s1 t1) takes turns[4].
    assert requests[4].body["messages"][-1]["content"] == "Question 4 about order NW-4504?"


def test_now_and_builtins_render_per_request() -> None:
    document = agent_layout(sessions=1, turns=2, system_top="{{ now }} {{ request_id }}\n")
    requests = expand(parse_layout(document, "a.yaml"))
    systems = [r.body["messages"][0]["content"].splitlines()[0] for r in requests]
    assert systems == ["2026-03-02T09:00:00Z s0000-t000", "2026-03-02T09:00:40Z s0000-t001"]


def test_anthropic_breakpoints() -> None:
    document = agent_layout(sessions=1, turns=2) | {
        "provider": "anthropic",
        "cache_breakpoints": ["tools", "system:1h", "last_message"],
    }
    second = expand(parse_layout(document, "a.yaml"))[1].body
    assert second["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert second["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    # The marker sits on the newest message only; turn 0's message goes back as plain text.
    assert second["messages"][0]["content"] == "Question 0 about order NW-4500?"
    assert second["messages"][-1]["content"][0]["cache_control"] == {"type": "ephemeral"}
    with pytest.raises(LayoutError, match=r"cache_breakpoints\[0\]"):
        parse_layout(agent_layout() | {"cache_breakpoints": ["middle"]}, "a.yaml")


def test_layout_errors_name_file_and_field() -> None:
    with pytest.raises(LayoutError) as error:
        load_layout_text("cachecast_layout: 1\nturn: [{role: user}]\n", "p.yaml")
    assert (error.value.file, error.value.field) == ("p.yaml", "turn[0].content")
    with pytest.raises(LayoutError, match="not valid YAML"):
        load_layout_text("cachecast_layout: [\n", "p.yaml")


def test_first_difference() -> None:
    assert first_difference([1, 2, 3], [1, 2, 3]) is None
    assert first_difference([1, 2, 3], [1, 9, 3]) == 1
    assert first_difference([1, 2], [1, 2, 3]) == 2  # a prefix: differs where it ends


def test_divergence_in_text_without_tokens() -> None:
    base = list(
        iter_records(expand(parse_layout(agent_layout(sessions=1, turns=2), "a")), provider=None)
    )
    cand = list(
        iter_records(
            expand(parse_layout(agent_layout(sessions=1, turns=2, system_top="Hi\n"), "b")),
            provider=None,
        )
    )
    divergence = find_divergence(base, cand)
    assert divergence is not None
    assert divergence.token_position is None  # no token ids given
    assert (divergence.segment.kind, divergence.segment.label) == ("system", "messages[0]")
    assert divergence.candidate_text.startswith("Hi\nYou are the support agent")
    assert find_divergence(base, base) is None


def test_explicit_target_needs_breakpoints(invoke: Invoke, tmp_path) -> None:
    """Under an explicit-breakpoint contract (claude-sonnet-4-5: 1,024-token minimum, 5-minute
    writes at 1.25x, reads at 0.1x) a layout without breakpoints reads nothing; with a
    breakpoint on the system prompt and the last message, a timestamp on top still breaks
    every prefix, so the check fails; suggest proposes the breakpoints."""
    document = agent_layout(sessions=3, turns=3) | {
        "provider": "anthropic",
        "cache_breakpoints": ["system", "last_message"],
    }
    base = write_yaml(tmp_path / "base.yaml", document)
    moved = write_yaml(
        tmp_path / "cand.yaml",
        agent_layout(sessions=3, turns=3, system_top="Current time: {{ now }}\n")
        | {"provider": "anthropic", "cache_breakpoints": ["system", "last_message"]},
    )
    claude = "anthropic:claude-sonnet-4-5"
    assert invoke("check", base, moved, "--target", claude).exit_code == 1
    plain = write_yaml(
        tmp_path / "plain.yaml", agent_layout(sessions=3, turns=3) | {"provider": "anthropic"}
    )
    result = invoke("suggest", plain, "--target", claude, "--json")
    assert result.exit_code == 0, result.output
    import json

    suggestions = json.loads(result.output)["suggestions"]
    top = suggestions[0]
    assert top["kind"] == "add_breakpoints" and top["needs_review"] is False
    assert top["targets"][0]["hit_rate_before"] == 0.0 and top["targets"][0]["hit_rate_after"] > 0.5
    assert "+cache_breakpoints:" in top["diff"]


def test_check_inline_documents(migrated_db_url: str) -> None:
    """Sides given inline (as the service gives them): layout text on one side, log records
    on the other; errors name the side's document and the field, never a file."""
    import yaml

    from cachecast.contracts import ContractStore
    from cachecast.passes.prompt_sets import PromptSource
    from cachecast.usecases.check import CheckRequest, check

    document = agent_layout(sessions=2, turns=2)
    text = yaml.safe_dump(document, sort_keys=False)  # key order is prompt text too
    records = list(iter_records(expand(parse_layout(document, "x")), provider="openai"))
    store = ContractStore(migrated_db_url)
    # The same requests as a layout and as records: nothing differs, the check passes.
    report = check(
        CheckRequest(
            baseline=PromptSource(layout=text),
            candidate=PromptSource(records=records),
            targets=["openai:gpt-4o"],
        ),
        store,
    )
    assert report.passed and report.divergence is None
    assert report.model_dump(mode="json")["baseline"] == "baseline"
    with pytest.raises(LayoutError) as error:
        check(
            CheckRequest(
                baseline=PromptSource(layout=text),
                candidate=PromptSource(layout="cachecast_layout: 1\nturn: []\n"),
                targets=["openai:gpt-4o"],
            ),
            store,
        )
    assert error.value.file == "candidate.layout" and error.value.field == "turn"


def test_block_key_trace_divergence(invoke: Invoke, tmp_path, mooncake_trace) -> None:
    """Mooncake records carry one hash id per 512-token block and no text: changing block 3
    of the 7th request moves the divergence to token 3 x 512 = 1,536 of that request."""
    import json

    lines = mooncake_trace.read_text().splitlines()
    changed_line = next(
        n for n, line in enumerate(lines) if n >= 6 and len(json.loads(line)["hash_ids"]) > 4
    )
    record = json.loads(lines[changed_line])
    record["hash_ids"][3] = 10**9
    lines[changed_line] = json.dumps(record)
    candidate = tmp_path / "changed.jsonl"
    candidate.write_text("\n".join(lines) + "\n")
    out = tmp_path / "r.json"
    result = invoke(
        "check",
        mooncake_trace,
        candidate,
        "--target",
        "vllm:512",
        "--max-hit-rate-drop",
        "100pp",
        "--json-file",
        out,
    )
    assert result.exit_code == 0, result.output
    divergence = json.loads(out.read_text())["divergence"]
    assert divergence["request_id"] == f"#{changed_line + 1}"
    assert divergence["token_position"] == 1536
    assert divergence["differing_requests"] == 1
