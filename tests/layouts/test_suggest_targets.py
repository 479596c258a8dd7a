"""``suggest`` on the bundled faulty log under hosted targets (issue 29, points 1 and 2): an
assistant turn of tool calls (``content: null``) is valid, changes that help nothing alone are
combined, and one target's results do not depend on which others are asked for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cachecast.contracts import ContractStore
from cachecast.layouts.changes import candidate_changes
from cachecast.layouts.volatile import analyze
from cachecast.passes.prompt_sets import ChangedRecords, PromptSource, load_prompt_set
from cachecast.tokenizers import read_records
from cachecast.usecases.suggest import SuggestReport, SuggestRequest, suggest
from tests.layouts.conftest import REPO_ROOT

FAULTY = REPO_ROOT / "examples" / "faulty-agent-log.jsonl"


def _suggest(store: ContractStore | None, targets: list[str]) -> SuggestReport:
    request = SuggestRequest(
        source=PromptSource(path=FAULTY), targets=targets, include_all=True, top=20
    )
    return suggest(request, store)


def test_breakpoints_added_to_a_chat_log_keep_it_a_chat_log() -> None:
    # The log's assistant turns are tool calls with "content": null (valid Chat Completions).
    records = list(load_prompt_set(PromptSource(path=FAULTY), "input").records)
    assert any(
        m["role"] == "assistant" and m["content"] is None and m["tool_calls"]
        for m in records[1]["request"]["messages"]
    )
    changes = {c.kind: c for c in candidate_changes(analyze(records), explicit_targets=["x"])}
    changed = changes["add_breakpoints"].transform(records)
    body = changed[1]["request"]
    # OpenAI's own marker on the system prompt, none of Anthropic's anywhere.
    assert body["messages"][0]["content"][-1]["prompt_cache_breakpoint"] == {"mode": "explicit"}
    assert "cache_control" not in json.dumps(changed)
    # Still read as Chat Completions: every changed request tokenizes, tool calls included.
    assert len(list(read_records(changed, "changed", strict=True))) == len(records)


@pytest.mark.parametrize("target", ["openai:gpt-5.6", "anthropic:claude-sonnet-4-5"])
def test_suggest_reads_tool_call_turns_under_explicit_breakpoint_targets(
    migrated_db_url: str, target: str
) -> None:
    report = _suggest(ContractStore(migrated_db_url), [target])
    tried = {s.kind for s in report.suggestions} | {s.kind for s in report.other_changes}
    assert "add_breakpoints" in tried


def test_changes_that_help_nothing_alone_are_combined(migrated_db_url: str) -> None:
    # gpt-4o caches automatically from the first token: with a timestamp on top of the system
    # prompt AND the tools in a different order in every request (the log's two faults), no
    # single change leaves a shared prefix of 1,024 tokens; both together do.
    report = _suggest(ContractStore(migrated_db_url), ["openai:gpt-4o"])
    assert all(not s.helps for s in report.other_changes)
    assert all("+" in s.kind for s in report.suggestions)
    top = report.suggestions[0]
    assert "pin_tool_order" in top.components and len(top.components) == 2
    assert top.helps and top.saving_per_1k_requests > 0
    (outcome,) = top.targets
    assert outcome.hit_rate_before == 0 and outcome.hit_rate_after > 0


def test_a_targets_results_do_not_depend_on_the_other_targets(migrated_db_url: str) -> None:
    alone = _suggest(None, ["vllm:32"])
    together = _suggest(ContractStore(migrated_db_url), ["openai:gpt-4o", "vllm:32"])

    def vllm_outcomes(report: SuggestReport) -> dict[str, tuple[object, object]]:
        return {
            s.kind: next(
                (o.hit_rate_before, o.hit_rate_after) for o in s.targets if o.target == "vllm:32"
            )
            for s in [*report.suggestions, *report.other_changes]
            if "+" not in s.kind
        }

    shared = vllm_outcomes(alone).keys() & vllm_outcomes(together).keys()
    assert shared >= {"split_system", "pin_tool_order", "move_to_end_of_system"}
    assert {k: vllm_outcomes(alone)[k] for k in shared} == {
        k: vllm_outcomes(together)[k] for k in shared
    }


def test_a_changed_request_is_named_by_the_line_it_came_from(tmp_path: Path) -> None:
    side = load_prompt_set(PromptSource(path=FAULTY), "input")
    changed = ChangedRecords(side.records, lambda records: records)
    # The file has one request a line: position 1 (0-based) is line 2.
    assert changed.line_of(1) == 2
