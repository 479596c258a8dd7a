"""One report per use case: the library function and the CLI's ``--json`` give the same JSON.

(The API's layout checks are compared with the library in tests/service/test_layout_checks.)
The inputs mix what the front ends must treat alike: a layout against a pre-tokenized log,
hosted and self-hosted targets with the same tokenizer, thresholds from the command line.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from cachecast.contracts import ContractStore
from cachecast.passes.prompt_sets import PromptSource
from cachecast.usecases.check import CheckEachRequest, CheckRequest, check, check_each
from cachecast.usecases.suggest import SuggestRequest, suggest
from cachecast.usecases.thresholds import Thresholds
from tests.layouts.conftest import OPENAI, Invoke, agent_layout, git, make_repo, write_yaml

DAY = "2026-11-01"
TARGETS = [OPENAI, "vllm:16"]


def test_check_library_equals_cli_json(
    invoke: Invoke, migrated_db_url: str, tmp_path: Path
) -> None:
    baseline = write_yaml(tmp_path / "base.yaml", agent_layout(sessions=3, turns=3))
    candidate = write_yaml(
        tmp_path / "cand.yaml",
        agent_layout(sessions=3, turns=3, system_top="Current time: {{ now }}\n"),
    )
    out = tmp_path / "report.json"
    result = invoke(
        "check", baseline, candidate, "-t", TARGETS[0], "-t", TARGETS[1], "--at", DAY,
        "--max-hit-rate-drop", "3pp", "--json-file", out,
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    report = check(
        CheckRequest(
            baseline=PromptSource(path=baseline),
            candidate=PromptSource(path=candidate),
            targets=TARGETS,
            at=dt.date.fromisoformat(DAY),
            thresholds=Thresholds(max_hit_rate_drop="0.03"),
        ),
        ContractStore(migrated_db_url),
    )
    assert json.loads(out.read_text()) == report.model_dump(mode="json")
    assert report.passed is False


def test_check_each_library_equals_cli_json(
    invoke: Invoke, migrated_db_url: str, tmp_path: Path, monkeypatch
) -> None:
    # Two layouts against HEAD (what the pre-commit hook passes): the run's report, with both
    # checks under "checks".
    repo = make_repo(tmp_path / "repo")
    for name in ("a.yaml", "b.yaml"):
        write_yaml(repo / name, agent_layout(sessions=2, turns=2))
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    write_yaml(repo / "b.yaml", agent_layout(sessions=2, turns=2, system_top="Now: {{ now }}\n"))
    monkeypatch.chdir(repo)
    out = tmp_path / "run.json"
    result = invoke(
        "check", "a.yaml", "b.yaml", "--baseline-ref", "HEAD", "-t", OPENAI, "--at", DAY,
        "--json-file", out,
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    run = check_each(
        CheckEachRequest(
            paths=[Path("a.yaml"), Path("b.yaml")],
            baseline_ref="HEAD",
            targets=[OPENAI],
            at=dt.date.fromisoformat(DAY),
        ),
        ContractStore(migrated_db_url),
    )
    assert json.loads(out.read_text()) == run.model_dump(mode="json")
    assert [check.passed for check in run.checks] == [True, False]


def test_suggest_library_equals_cli_json(
    invoke: Invoke, migrated_db_url: str, tmp_path: Path
) -> None:
    layout = write_yaml(
        tmp_path / "agent.yaml",
        agent_layout(
            system_top="Current time: {{ now }}\n", tool_order="shuffle", sessions=3, turns=2
        ),
    )
    result = invoke(
        "suggest", layout, "-t", TARGETS[0], "-t", TARGETS[1], "--at", DAY, "--top", "1",
        "--all", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = suggest(
        SuggestRequest(
            source=PromptSource(path=layout),
            targets=TARGETS,
            at=dt.date.fromisoformat(DAY),
            top=1,
            include_all=True,
        ),
        ContractStore(migrated_db_url),
    )
    assert json.loads(result.stdout) == report.model_dump(mode="json")
    assert len(report.suggestions) == 1 and report.other_changes
