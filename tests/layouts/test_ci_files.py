"""The shipped GitHub workflow and pre-commit hook: their command lines, run for real.

The YAML files are parsed and their own command lines run with bash in a throw-away git
repository (real git, real Alembic migration through ``cachecast db upgrade``, the installed
``cachecast`` entry point). Not run: the workflow's ``uses:`` actions and its
``pip install .`` step (cachecast is already installed in this environment and installing
needs the network); pre-commit itself is not installed here, so the hook's ``entry`` is run
the way pre-commit runs it: entry, then args, then the staged file names.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.layouts.conftest import EXAMPLE_LAYOUT, OPENAI, git, make_repo

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = REPO_ROOT / ".github" / "workflows" / "cachecast-check.yml"
HOOKS = REPO_ROOT / ".pre-commit-hooks.yaml"
BIN = Path(sys.executable).parent


def _environment(extra: dict[str, str]) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("CACHECAST_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def _expand_expressions(text: str, values: dict[str, str]) -> str:
    """Replace GitHub's ${{ name }} expressions; an unknown one fails the test."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1).strip()
        assert name in values, f"workflow uses ${{{{ {name} }}}}, unknown to this test"
        return values[name]

    return re.sub(r"\$\{\{(.*?)\}\}", replace, text)


def test_workflow_fails_a_pull_request_that_moves_a_timestamp_to_the_top(tmp_path: Path) -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    assert workflow[True]["pull_request"]  # PyYAML reads the key `on` as True
    job = workflow["jobs"]["prompt-layout"]
    expressions = {"runner.temp": str(tmp_path), "github.base_ref": "main"}
    env = {k: _expand_expressions(str(v), expressions) for k, v in job["env"].items()}
    layout = env["LAYOUT"]

    repo = make_repo(tmp_path / "repo")
    target = repo / layout
    target.parent.mkdir(parents=True)
    shutil.copy(EXAMPLE_LAYOUT, target)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")  # as checkout fetch-depth 0
    git(repo, "checkout", "-q", "-b", "pr")
    text = target.read_text()
    assert "  You are Nova" in text
    target.write_text(
        text.replace("  You are Nova", "  Current time: {{ now }}\n  You are Nova", 1)
    )
    git(repo, "commit", "-q", "-am", "put the time first")

    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step output\n")
    run_env = _environment({**env, "GITHUB_STEP_SUMMARY": str(summary)})
    steps = [step for step in job["steps"] if "run" in step]
    names = [step["name"] for step in steps]
    assert names == [
        "Install cachecast",
        "Create the contract database",
        "Check the prompt layout against the base branch",
    ]
    results = []
    for step in steps[1:]:  # skip `pip install .` (see the module docstring)
        command = _expand_expressions(step["run"], expressions)
        results.append(
            subprocess.run(
                ["bash", "-e", "-c", command],
                cwd=repo,
                env=run_env,
                capture_output=True,
                text=True,
                check=False,
            )
        )
    migrate, check = results
    assert migrate.returncode == 0, migrate.stderr
    assert check.returncode == 1, check.stdout + check.stderr
    assert "REGRESSION" in check.stdout
    report = (repo / "cachecast-check.json").read_text()
    assert '"passed": false' in report
    written = summary.read_text()
    assert written.startswith("earlier step output\n")  # appended, never replaced
    assert "cachecast check: ❌ regression" in written
    assert "Current time: 2026-03-02T09:00:00Z" in written


def test_pre_commit_hook_passes_a_harmless_change_and_skips_other_yaml(
    tmp_path: Path, migrated_db_url: str
) -> None:
    hooks = yaml.safe_load(HOOKS.read_text())
    (hook,) = [hook for hook in hooks if hook["id"] == "cachecast-check"]
    assert hook["pass_filenames"] is True
    repo = make_repo(tmp_path / "repo")
    layout = repo / "agent.yaml"
    shutil.copy(EXAMPLE_LAYOUT, layout)
    (repo / "other.yaml").write_text("just: some config\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    # Staged: the time goes to the end of the user's message (after all stable content), a
    # YAML file that is not a layout changes, and a layout file is new.
    text = layout.read_text()
    layout.write_text(
        text.replace('content: "{{ question }}"', 'content: "{{ question }}\\n\\nTime: {{ now }}"')
    )
    (repo / "other.yaml").write_text("just: other config\n")
    shutil.copy(EXAMPLE_LAYOUT, repo / "new.yaml")
    git(repo, "add", ".")
    staged = sorted(
        name
        for name in git(repo, "diff", "--cached", "--name-only").split()
        if re.search(hook["files"], name)
    )
    assert staged == ["agent.yaml", "new.yaml", "other.yaml"]

    # The hook's documented prerequisite (`cachecast db upgrade`) is the fixture's migration.
    env = _environment({"CACHECAST_DATABASE_URL": migrated_db_url})
    command = f"{hook['entry']} --target {OPENAI} --target vllm:16 " + " ".join(staged)
    completed = subprocess.run(
        ["bash", "-c", command], cwd=repo, env=env, capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "other.yaml: not a layout, skipped" in completed.stdout
    assert "new.yaml does not exist at HEAD" in completed.stdout
    assert "PASS" in completed.stdout
