"""``suggest`` proposes only the changes that help, says why the others do not, and offers the
best combination of compatible changes, simulated like any other suggestion."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from cachecast.layouts.changes import candidate_changes
from cachecast.layouts.volatile import analyze
from cachecast.passes.prompt_sets import PromptSource, load_prompt_set
from cachecast.tokenizers import read_records
from cachecast.usecases.suggest import SuggestReport, SuggestRequest, suggest
from tests.gpu_backend.real_vocab import vllm_hit_rule
from tests.layouts.conftest import OPENAI, REPO_ROOT, Invoke, agent_layout, write_yaml

FAULTY = REPO_ROOT / "examples" / "faulty-agent-log.jsonl"
COMBINED = "split_system+pin_tool_order"


def _faulty(**options: object) -> SuggestReport:
    request = SuggestRequest(source=PromptSource(path=FAULTY), targets=["vllm:32"], **options)
    return suggest(request, None)


def _rate(records: list[dict[str, object]]) -> Decimal:
    """vLLM's documented hit rule (longest shared prefix in whole 32-token blocks, the last
    prompt token recomputed) over cachecast's tokens of ``records``, as a 6-place rate."""
    prompts = [list(r.tokens or ()) for r in read_records(records, "log", strict=True)]
    hits = vllm_hit_rule(prompts, 32)
    return (Decimal(sum(hits)) / sum(len(p) for p in prompts)).quantize(Decimal("0.000001"))


def test_the_combination_is_the_two_changes_applied_and_simulated_as_such() -> None:
    report = _faulty(top=10)
    top = report.suggestions[0]
    assert (top.kind, top.components) == (COMBINED, ["split_system", "pin_tool_order"])
    assert top.helps and top.why_not is None and not top.needs_review
    records = list(load_prompt_set(PromptSource(path=FAULTY), "input").records)
    changes = {c.kind: c for c in candidate_changes(analyze(records), explicit_targets=[])}
    fixed = changes["pin_tool_order"].transform(changes["split_system"].transform(list(records)))
    (outcome,) = top.targets
    assert outcome.hit_rate_before == _rate(records) == 0
    assert outcome.hit_rate_after == _rate(fixed)
    # What vLLM 0.32 measured for these requests (README): 15,488 of 22,016 prompt tokens.
    assert outcome.hit_rate_after == Decimal("0.703488")
    # It beats every single change, and is offered beside them, not instead.
    singles = [s for s in report.suggestions if "+" not in s.kind]
    assert {s.kind for s in singles} == {
        "split_system",
        "move_to_last_user_message",
        "move_to_end_of_system",
    }
    assert all(s.targets[0].hit_rate_after < outcome.hit_rate_after for s in singles)
    assert (
        f"{COMBINED} alone" not in top.rationale and "split_system alone +48.11pp" in top.rationale
    )
    # Both changes show in the diff of the first request: the timestamp leaves the top of the
    # system prompt, and the tool first by name comes first.
    first_tool = min(tool["function"]["name"] for tool in records[0]["request"]["tools"])
    added = [line for line in top.diff.splitlines() if line.startswith("+")]
    assert "-Current time: 2026-11-03T14:01:02Z" in top.diff.splitlines()
    assert "+Current time: 2026-11-03T14:01:02Z" in added
    assert any(
        line.startswith(f'+{{"type":"function","function":{{"name":"{first_tool}"')
        for line in added
    )


def test_a_change_that_does_not_help_is_listed_only_with_all_and_says_why() -> None:
    # The timestamp opens every prompt: no 32-token block is shared whatever the tool order.
    report = _faulty()
    assert "pin_tool_order" not in [s.kind for s in report.suggestions]
    assert (report.hidden_changes, report.other_changes) == (1, [])
    shown = _faulty(include_all=True)
    (pin,) = shown.other_changes
    assert (pin.kind, pin.helps, pin.hit_rate_gain_pp) == ("pin_tool_order", False, 0)
    assert shown.hidden_changes == 0
    assert pin.why_not == (
        "no hit-rate gain (vllm:32: hit rate 0.00% -> 0.00%); combined it helps: it is part of"
        f" {COMBINED} (+70.35pp)"
    )
    # Without combinations the best single change is first.
    assert _faulty(combine=False).suggestions[0].kind == "split_system"


def test_a_change_that_costs_more_on_a_priced_target_is_not_suggested(
    invoke: Invoke, migrated_db_url: str, tmp_path: Path
) -> None:
    layout = write_yaml(
        tmp_path / "agent.yaml",
        agent_layout(
            system_top="Current time: {{ now }}\n", tool_order="shuffle", sessions=3, turns=2
        ),
    )
    result = invoke(
        "suggest", layout, "-t", OPENAI, "--at", "2026-11-01", "--all", "--json",
        "--database-url", migrated_db_url,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert all(Decimal(s["saving_per_1k_requests"]) > 0 for s in document["suggestions"])
    split = next(s for s in document["other_changes"] if s["kind"] == "split_system")
    (outcome,) = split["targets"]
    # Nothing is read on either side (the shuffled tools come first and leave a shared
    # prefix under gpt-4o's 1,024-token minimum), so the bill differs only by the added
    # input tokens at $2.50 per million, here per 1,000 of the layout's 3 x 2 requests.
    assert outcome["hit_rate_before"] == outcome["hit_rate_after"] == 0
    added = outcome["input_tokens_after"] - outcome["input_tokens_before"]
    assert added > 0
    expected = Decimal(added) * Decimal("2.50") / 10**6 * 1000 / 6
    assert -Decimal(split["saving_per_1k_requests"]) == expected
    assert split["why_not"].startswith(f"costs ${expected:.4f} more per 1,000 requests")
    assert f"{added:+,} input tokens" in split["why_not"]
    # The text output says the same, and hides nothing with --all.
    text = invoke("suggest", layout, "-t", OPENAI, "--at", "2026-11-01",
                  "--database-url", migrated_db_url)  # fmt: skip
    assert "do not help (--all lists them" in text.stdout
    assert "saves $-" not in text.stdout


def test_write_requests_gives_each_suggestion_as_a_log_other_commands_read(
    invoke: Invoke, migrated_db_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "suggested"
    out.mkdir()
    result = invoke("suggest", FAULTY, "-t", "vllm:32", "--json", "--write-requests", out)
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    top = document["suggestions"][0]
    assert top["kind"] == COMBINED
    written = Path(top["requests_file"])
    assert written == out / f"01-{COMBINED}.jsonl"
    assert sorted(p.name for p in out.iterdir()) == [
        f"{rank:02d}-{s['kind']}.jsonl" for rank, s in enumerate(document["suggestions"], 1)
    ]
    lines = [json.loads(line) for line in written.read_text().splitlines()]
    faulty = [json.loads(line) for line in FAULTY.read_text().splitlines()]
    assert len(lines) == len(faulty) == 14
    for after, before in zip(lines, faulty, strict=True):
        # The change as the suggestion describes it, read off the file: the tools sorted by
        # name, the system prompt without its first line, which follows as a system message.
        names = [tool["function"]["name"] for tool in after["request"]["tools"]]
        assert names == sorted(names)
        old_system = before["request"]["messages"][0]["content"]
        stamp, _, stable = old_system.partition("\n")
        assert stamp.startswith("Current time: ")
        messages = after["request"]["messages"]
        assert messages[0]["content"].strip() == stable.strip()
        assert messages[1] == {"role": "system", "content": stamp}
    # The written file is a log like any other: check on it sees the simulated hit rate,
    # and vLLM's documented rule on its tokens gives the same.
    report = tmp_path / "check.json"
    checked = invoke("check", FAULTY, written, "-t", "vllm:32", "--json-file", report)
    assert checked.exit_code == 0, checked.output
    (target,) = json.loads(report.read_text())["targets"]
    simulated = Decimal(str(top["targets"][0]["hit_rate_after"]))
    assert Decimal(str(target["candidate"]["hit_rate"])) == simulated == _rate(lines)
    # 15,488 of the 22,016 prompt tokens (the figures vLLM measured for this change).
    assert target["candidate"]["cache_read_tokens"] == 15_488


def test_write_requests_into_a_missing_folder_is_refused_before_any_work(
    invoke: Invoke, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere"
    result = invoke("suggest", FAULTY, "-t", "vllm:32", "--write-requests", missing)
    assert result.exit_code == 2
    assert f"{missing}: write_requests_to (--write-requests): is not an existing folder" in (
        result.stderr
    )
    assert not missing.exists()
