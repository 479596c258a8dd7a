"""``cachecast check`` on agent layouts: what breaks the prefix and what does not.

The agent (conftest.agent_layout) sends six small tool schemas (about 250 tokens), a system
prompt of about 3,800 tokens, then the session's turns; 6 sessions x 4 turns.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.layouts.conftest import OPENAI, Invoke, agent_layout, git, make_repo, write_yaml

TIMESTAMP_LINE = "Current time: {{ now }}\n"


def _run(invoke: Invoke, tmp_path: Path, baseline: Path, candidate: Path, *args: str):
    out = tmp_path / "report.json"
    md = tmp_path / "report.md"
    result = invoke(
        "check",
        baseline,
        candidate,
        "--target",
        OPENAI,
        "--target",
        "vllm:16",
        "--json-file",
        out,
        "--markdown",
        md,
        *args,
    )
    return result, json.loads(out.read_text()), md.read_text()


def test_timestamp_at_top_of_system_prompt_fails(invoke: Invoke, tmp_path: Path) -> None:
    baseline = write_yaml(tmp_path / "base.yaml", agent_layout())
    candidate = write_yaml(tmp_path / "cand.yaml", agent_layout(system_top=TIMESTAMP_LINE))
    result, report, markdown = _run(invoke, tmp_path, baseline, candidate)
    assert result.exit_code == 1, result.output
    assert report["passed"] is False
    openai = report["targets"][0]
    # Every request arrives at a different second, so its prompt is unique from the timestamp
    # on; before it sit only the tool schemas (~250 tokens), under OpenAI's 1,024 minimum.
    assert openai["candidate"]["hit_rate"] == 0.0
    assert openai["baseline"]["hit_rate"] > 0.6
    assert report["targets"][1]["target"] == "vllm:16" and report["targets"][1]["passed"] is False
    divergence = report["divergence"]
    # The first request (session 0, turn 0, at the layout's start) already differs, at the
    # first token of the system prompt's text.
    assert divergence["request_id"] == "s0000-t000"
    assert divergence["segment"] == {"kind": "system", "label": "messages[0]"}
    assert divergence["candidate_text"].startswith("Current time: 2026-03-02T09:00:00Z\n")
    assert divergence["baseline_text"].startswith("You are the support agent of Northwind.")
    assert divergence["differing_requests"] == divergence["compared_requests"] == 24
    assert "regression" in markdown and "messages[0]" in markdown
    assert "REGRESSION" in result.output


def test_same_timestamp_at_end_of_last_user_message_passes(invoke: Invoke, tmp_path: Path) -> None:
    baseline = write_yaml(tmp_path / "base.yaml", agent_layout())
    candidate = write_yaml(
        tmp_path / "cand.yaml", agent_layout(user_suffix="\n\n" + TIMESTAMP_LINE.strip())
    )
    # Default thresholds (+5% cost, -2pp hit rate). The timestamp now follows all stable
    # content; each request adds ~13 uncached tokens to ~4,000 (~0.3pp), and the agent re-sends
    # earlier timestamps unchanged in its history, so they stay cached.
    result, report, _ = _run(invoke, tmp_path, baseline, candidate)
    assert result.exit_code == 0, result.output
    assert report["passed"] is True
    divergence = report["divergence"]
    # The first difference is after the tools and the whole system prompt: the user turn.
    assert divergence["segment"] == {"kind": "message", "label": "messages[1]"}
    assert divergence["candidate_text"].endswith("Current time: 2026-03-02T09:00:00Z")
    assert divergence["token_position"] > 4000


def test_shuffled_tool_order_fails(invoke: Invoke, tmp_path: Path) -> None:
    baseline = write_yaml(tmp_path / "base.yaml", agent_layout())
    candidate = write_yaml(tmp_path / "cand.yaml", agent_layout(tool_order="shuffle"))
    result, report, _ = _run(invoke, tmp_path, baseline, candidate)
    assert result.exit_code == 1
    # Tools come first in the prompt: a new order is a new prefix from the first tool on.
    # 720 orders of 6 tools: another request of the same order within the TTL is rare
    # (< 24/720 per request), so almost nothing is read.
    assert report["targets"][0]["candidate"]["hit_rate"] < 0.1
    assert report["divergence"]["segment"] == {"kind": "tool", "label": "tools[0]"}


def test_identical_layouts_pass_with_no_divergence(invoke: Invoke, tmp_path: Path) -> None:
    layout = write_yaml(tmp_path / "a.yaml", agent_layout(sessions=2, turns=2))
    result, report, _ = _run(invoke, tmp_path, layout, layout)
    assert result.exit_code == 0
    assert report["divergence"] is None
    assert report["targets"][0]["hit_rate_change_pp"] == 0.0


def test_baseline_from_a_git_revision(invoke: Invoke, tmp_path: Path, monkeypatch) -> None:
    repo = make_repo(tmp_path / "repo")
    prompts = repo / "prompts"
    prompts.mkdir()
    # values_file is read at the same revision as the layout.
    document = agent_layout(sessions=3, turns=3)
    values = document.pop("values")
    (prompts / "values.yaml").write_text(json.dumps(values))
    write_yaml(prompts / "agent.yaml", {**document, "values_file": "values.yaml"})
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    changed = agent_layout(sessions=3, turns=3, system_top=TIMESTAMP_LINE)
    del changed["values"]
    write_yaml(prompts / "agent.yaml", {**changed, "values_file": "values.yaml"})
    monkeypatch.chdir(repo)
    result = invoke("check", "prompts/agent.yaml", "--baseline-ref", "HEAD", "--target", OPENAI)
    assert result.exit_code == 1, result.output
    assert "prompts/agent.yaml@HEAD" in result.output
    result = invoke(
        "check", "prompts/agent.yaml", "--baseline-ref", "no-such-ref", "--target", OPENAI
    )
    assert result.exit_code == 2


def test_jinja_layout_with_values_file(invoke: Invoke, tmp_path: Path) -> None:
    # A whole-file Jinja2 template renders into our YAML format (here: the rule count comes
    # from the values file); per-request placeholders survive inside {% raw %}.
    template = tmp_path / "agent.yaml.j2"
    template.write_text(
        "cachecast_layout: 1\nmodel: gpt-4o\nsystem: |\n"
        "{% for n in range(rules) %}  Rule {{ n }}: be precise and polite with customers.\n"
        "{% endfor %}"
        "turn:\n  - {role: user, content: '{% raw %}{{ question }}{% endraw %}'}\n"
        "  - {role: assistant, content: ok}\n"
        "arrival: {sessions: 2, turns_per_session: 2}\n"
    )
    values = tmp_path / "values.yaml"
    values.write_text("rules: 150\nturns: [{question: hi}, {question: bye}]\n")
    result = invoke("check", template, template, "--values", values, "--target", OPENAI)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("document", "field"),
    [
        (
            {"cachecast_layout": 1, "turn": [{"role": "user", "content": "x"}], "colour": 1},
            "colour",
        ),
        ({"cachecast_layout": 1, "turn": [{"role": "assistant", "content": "x"}]}, "turn"),
        ({"cachecast_layout": 1, "turn": [{"role": "user", "content": "{{ nope }}"}]}, "turn[0]"),
        (
            {
                "cachecast_layout": 1,
                "turn": [{"role": "user", "content": "x"}],
                "arrival": {"sessions": 0},
            },
            "arrival.sessions",
        ),
    ],
)
def test_bad_layouts_exit_2_naming_the_field(
    invoke: Invoke, tmp_path: Path, document: dict, field: str
) -> None:
    good = write_yaml(tmp_path / "good.yaml", agent_layout(sessions=1, turns=1))
    bad = write_yaml(tmp_path / "bad.yaml", document)
    result = invoke("check", good, bad, "--target", OPENAI)
    assert result.exit_code == 2
    assert "bad.yaml" in result.output and field in result.output


def test_jinja_layout_at_a_git_revision(invoke: Invoke, tmp_path: Path, monkeypatch) -> None:
    # The baseline is the template as committed: read at the revision, it is still a Jinja2
    # file (its name at the revision is 'agent.yaml.j2@HEAD', which must not hide the suffix).
    repo = make_repo(tmp_path / "repo")
    template = repo / "agent.yaml.j2"
    text = (
        "cachecast_layout: 1\nmodel: gpt-4o\nsystem: |\n"
        "{% for n in range(150) %}  Rule {{ n }}: be precise and polite with customers.\n"
        "{% endfor %}"
        "turn:\n  - {role: user, content: '{% raw %}{{ question }}{% endraw %}'}\n"
        "  - {role: assistant, content: ok}\n"
        "arrival: {sessions: 2, turns_per_session: 2}\n"
        "values: {turns: [{question: hi}, {question: bye}]}\n"
    )
    template.write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    monkeypatch.chdir(repo)
    result = invoke("check", "agent.yaml.j2", "--baseline-ref", "HEAD", "--target", OPENAI)
    assert result.exit_code == 0, result.output
    assert "agent.yaml.j2@HEAD -> agent.yaml.j2" in result.output
    assert "no divergence" in result.output


def test_log_lines_split_only_at_newlines(invoke: Invoke, tmp_path: Path) -> None:
    # JSON strings may hold U+2028 (LINE SEPARATOR) unescaped; it does not end a log line.
    record = {"request_id": "r0", "timestamp": 1, "model": "gpt-4o", "prompt": "a\u2028b " * 50}
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    assert "\u2028" in log.read_text(encoding="utf-8")
    result = invoke("check", log, log, "--target", OPENAI)
    assert result.exit_code == 0, result.output


def test_each_side_is_tokenized_once_per_tokenizer(
    invoke: Invoke, tmp_path: Path, monkeypatch
) -> None:
    # A spy around the real reader (it still reads): one read of the inline records is one
    # tokenization of a side.
    import cachecast.passes.log_input as logs

    reads: list[str | None] = []
    real = logs.read_records

    def counted(*args, **kwargs):
        reads.append(kwargs.get("model"))
        return real(*args, **kwargs)

    monkeypatch.setattr(logs, "read_records", counted)
    baseline = write_yaml(tmp_path / "base.yaml", agent_layout(sessions=2, turns=2))
    candidate = write_yaml(tmp_path / "cand.yaml", agent_layout(sessions=2, turns=2, rules=90))
    # gpt-4o and gpt-4.1 share o200k_base: one read per side. vllm tokenizes as each
    # record's own model (None), whatever hosted targets are asked for (a target's results
    # never depend on the others, docs/layouts.md): one more read per side.
    args = ("check", baseline, candidate, "-t", OPENAI, "-t", "openai:gpt-4.1", "-t", "vllm")
    assert invoke(*args).exit_code in (0, 1)
    assert sorted(reads, key=str) == [None, None, "gpt-4o", "gpt-4o"]
    # A second tokenizer (cl100k_base, for --model gpt-4) is one more read per side.
    reads.clear()
    assert invoke(*args, "--model", "gpt-4").exit_code in (0, 1)
    assert sorted(reads) == ["gpt-4", "gpt-4", "gpt-4o", "gpt-4o"]
