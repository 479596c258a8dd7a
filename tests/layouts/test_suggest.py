"""Volatile spans and suggestions on a realistic agent log (tools, long system prompt,
multi-turn sessions; see conftest.agent_layout)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest

from cachecast.contracts import ContractStore
from cachecast.layouts.expand import expand, iter_records
from cachecast.layouts.spec import parse_layout
from cachecast.layouts.volatile import analyze, value_kind
from cachecast.passes.prompt_sets import PromptSource, load_prompt_set
from cachecast.usecases.evaluation import evaluate, parse_layout_targets
from cachecast.usecases.suggest import SuggestReport, SuggestRequest, suggest
from tests.layouts.conftest import OPENAI, Invoke, agent_layout, write_yaml

DAY = dt.date(2026, 12, 1)


def _log(tmp_path: Path, name: str, **options) -> Path:
    """The layout's requests as a JSONL log, as a user would have logged them."""
    layout = parse_layout(agent_layout(**options), name)
    records = iter_records(expand(layout), provider="openai")
    path = tmp_path / name
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _suggest(store: ContractStore, log: Path, targets: list[str]) -> SuggestReport:
    """Every suggestion (not only the first five), best first."""
    request = SuggestRequest(source=PromptSource(path=log), targets=targets, at=DAY, top=100)
    return suggest(request, store)


def test_top_suggestion_recovers_the_hit_rate_a_timestamp_prefix_destroyed(
    migrated_db_url: str, tmp_path: Path
) -> None:
    store = ContractStore(migrated_db_url)
    targets = [OPENAI, "vllm:16"]
    clean = _log(tmp_path, "clean.jsonl")
    volatile = _log(tmp_path, "volatile.jsonl", system_top="Current time: {{ now }}\n")
    clean_rate = (
        evaluate(
            load_prompt_set(PromptSource(path=clean), "input"),
            parse_layout_targets(targets),
            day=DAY,
            store=store,
            token_model="gpt-4o",
        )
        .metrics[0]
        .hit_rate
    )

    # The log as a user would have it (JSONL), not the layout that generated it.
    suggestions = _suggest(store, volatile, targets).suggestions
    top = suggestions[0]
    before, after = top.targets[0].hit_rate_before, top.targets[0].hit_rate_after
    # The timestamp leaves only the tool schemas (~250 tokens) in common, under OpenAI's
    # 1,024-token minimum: nothing is read.
    assert before == 0
    # Moved to the end of the user's message, the timestamp follows every stable token, and
    # the agent's history re-sends earlier timestamps unchanged: the prompts equal the clean
    # ones plus ~13 tokens a turn. We require 90% of the lost hit rate back (measured: 0.932
    # of 0.941, 99%); what stays lost is those tokens and the 128-token rounding they shift.
    assert top.kind == "move_to_last_user_message"
    assert top.needs_review is False  # 'Current time: <value>' only labels a value
    assert after - before >= Decimal("0.9") * (clean_rate - before)
    assert top.saving_per_1k_requests > 0
    # Ranked by savings, best first.
    savings = [suggestion.saving_per_1k_requests for suggestion in suggestions]
    assert savings == sorted(savings, reverse=True)
    # The safe same-role moves are offered too.
    assert {"move_to_end_of_system", "split_system"} <= {s.kind for s in suggestions}
    assert "-Current time: 2026-03-02T09:00:00Z" in top.diff


def test_instruction_moved_after_the_user_turn_needs_review(
    migrated_db_url: str, tmp_path: Path
) -> None:
    store = ContractStore(migrated_db_url)
    log = _log(
        tmp_path,
        "named.jsonl",
        system_top="Address the customer as {{ customer }} and never use their surname.\n",
        sessions=4,
        turns=2,
    )
    by_kind = {s.kind: s for s in _suggest(store, log, [OPENAI]).suggestions}
    # An instruction after the user's message may change how it is followed.
    assert by_kind["move_to_last_user_message"].needs_review is True
    assert by_kind["split_system"].needs_review is False


def test_volatile_span_analysis() -> None:
    records = list(
        iter_records(
            expand(
                parse_layout(
                    agent_layout(
                        system_top="Now: {{ now }}\n", tool_order="shuffle", sessions=3, turns=2
                    ),
                    "a",
                )
            ),
            provider="openai",
        )
    )
    for index, record in enumerate(records):
        record["scope"] = f"user-{index % 2}"
    analysis = analyze(records)
    assert len(analysis.sizes) == 1  # same model and tool set: one template
    span = analysis.spans[0]
    # 6 requests at distinct seconds: 6 distinct values, in the first line of the system prompt.
    assert (span.label, span.kind, span.first_line, span.line_count) == (
        "messages[0]",
        "timestamp",
        0,
        1,
    )
    assert span.distinct_values == 6 and span.movable and span.data_only
    assert span.lines_after == 101  # the greeting line and the 100 rules after it stay stable
    user_spans = [s for s in analysis.spans if s.role == "user"]
    assert user_spans and not any(s.movable for s in user_spans)
    assert analysis.tool_order and analysis.tool_order[0].canonical_order == tuple(
        sorted(["lookup_order", "check_stock", "create_return", "refund", "escalate", "search"])
    )
    assert analysis.scope_splits[0].scopes == 2


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("Current time: 2026-03-02T09:00:00Z", "timestamp"),
        ("Request id: 3f2a9c1e-77aa-4b1c-9e0f-123456789abc", "identifier"),
        ("Customer: Jana Novak", "name"),
        ("doc line\n" * 5, "document"),
    ],
)
def test_value_kind(value: str, kind: str) -> None:
    assert value_kind(value) == kind


def test_suggest_command_json(invoke: Invoke, tmp_path: Path) -> None:
    layout = write_yaml(
        tmp_path / "agent.yaml",
        agent_layout(
            system_top="Current time: {{ now }}\n", tool_order="shuffle", sessions=3, turns=2
        ),
    )
    result = invoke("suggest", layout, "--target", OPENAI, "--all", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    listed = document["suggestions"] + document["other_changes"]
    kinds = [suggestion["kind"] for suggestion in listed]
    assert "pin_tool_order" in kinds and "move_to_last_user_message" in kinds
    first = document["suggestions"][0]
    assert set(first["targets"][0]) >= {
        "hit_rate_before",
        "hit_rate_after",
        "saving_per_1k_requests",
    }
    # A priced target: suggested means a positive saving; every other change says why not.
    assert all(Decimal(s["saving_per_1k_requests"]) > 0 for s in document["suggestions"])
    for other in document["other_changes"]:
        assert Decimal(other["saving_per_1k_requests"]) <= 0 and other["helps"] is False
        assert other["why_not"].startswith(("saves nothing", "costs $"))
    assert document["hidden_changes"] == 0  # --all hides nothing
    pin = next(s for s in listed if s["kind"] == "pin_tool_order")
    # On a layout the diff is of the layout file itself.
    assert "-tool_order: shuffle" in pin["diff"] and "+tool_order: fixed" in pin["diff"]


def test_two_volatile_lines_in_one_system_prompt_are_two_spans() -> None:
    # A name (per session) on line 1 and a time (per request) on line 4 of a 5-line prompt:
    # the stable rules between them are not volatile and are never moved.
    document = agent_layout(sessions=3, turns=2, rules=2)
    document["system"] = (
        "Customer: {{ customer }}\nRule A: be polite.\nRule B: be precise.\n"
        "Current time: {{ now }}\nRule C: quote the policy.\n"
    )
    records = list(iter_records(expand(parse_layout(document, "a")), provider=None))
    spans = [span for span in analyze(records).spans if span.label == "messages[0]"]
    assert sorted((s.first_line, s.line_count, s.kind) for s in spans) == [
        (0, 1, "name"),
        (3, 1, "timestamp"),
    ]
    # 3 sessions take customers Jana, Pedro, Aiko; 6 requests arrive at 6 distinct seconds.
    assert {s.kind: s.distinct_values for s in spans} == {"name": 3, "timestamp": 6}
    assert all(s.part_lines == 5 and s.data_only for s in spans)
