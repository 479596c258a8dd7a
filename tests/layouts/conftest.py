"""Builders shared by the layout tests: agent layouts, token logs, a CLI runner, git repos."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from cachecast.cli import app

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_LAYOUT = REPO_ROOT / "cachecast" / "layouts" / "examples" / "support-agent.yaml"
# OpenAI gpt-4o as seeded (`cachecast contracts show openai gpt-4o`): automatic caching,
# 1,024-token minimum, 128-token increments, reads at 0.5x of $2.50/MTok input; writes cost
# plain input.
OPENAI = "openai:gpt-4o"
START = 1_767_225_600  # 2026-01-01T00:00:00Z


def _rules(count: int) -> str:
    """A long, stable system prompt: ``count`` numbered policy rules (about 30 tokens each)."""
    topics = ["refunds", "deliveries", "returns", "warranty", "privacy", "escalation"]
    return "".join(
        f"{number}. About {topics[number % len(topics)]}: follow policy section {number} to the"
        f" letter, quote its exact wording when the customer asks, and confirm the customer's"
        f" identity before sharing any order detail (rule {number}).\n"
        for number in range(1, count + 1)
    )


def agent_layout(
    *,
    system_top: str = "",
    user_suffix: str = "",
    tool_order: str = "fixed",
    rules: int = 100,
    sessions: int = 6,
    turns: int = 4,
) -> dict[str, Any]:
    """A support agent: six tools, a long rule list, multi-turn sessions."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": f"{name.replace('_', ' ')} for the customer's order",
                "parameters": {"type": "object", "properties": {"order": {"type": "string"}}},
            },
        }
        for name in ("lookup_order", "check_stock", "create_return", "refund", "escalate", "search")
    ]
    return {
        "cachecast_layout": 1,
        "provider": "openai",
        "model": "gpt-4o",
        "system": system_top + "You are the support agent of Northwind.\n" + _rules(rules),
        "tools": tools,
        "tool_order": tool_order,
        "turn": [
            {"role": "user", "content": "{{ question }}" + user_suffix},
            {"role": "assistant", "content": "{{ answer }}"},
        ],
        "arrival": {
            "sessions": sessions,
            "turns_per_session": turns,
            "turn_interval_seconds": 40,
            "session_interval_seconds": 90,
            "start": "2026-03-02T09:00:00Z",
            "output_tokens": 100,
        },
        "values": {
            "sessions": [{"customer": name} for name in ("Jana", "Pedro", "Aiko", "Sam")],
            "turns": [
                {"question": f"Question {n} about order NW-{4500 + n}?", "answer": f"Answer {n}."}
                for n in range(7)
            ],
        },
    }


def write_yaml(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def token_log(path: Path, prompts: Sequence[Sequence[int]], *, gap: int = 10) -> Path:
    """A pre-tokenized log: request i at START + i*gap seconds, no output tokens."""
    with path.open("w", encoding="utf-8") as handle:
        for index, tokens in enumerate(prompts):
            record = {
                "request_id": f"r{index}",
                "timestamp": START + index * gap,
                "request": {"tokens": list(tokens)},
                "output_tokens": 0,
            }
            handle.write(json.dumps(record) + "\n")
    return path


Invoke = Callable[..., Any]


@pytest.fixture
def invoke(migrated_db_url: str) -> Invoke:
    """Run ``cachecast ARGS`` in-process against the migrated database."""
    runner = CliRunner()

    def run(*args: str | Path) -> Any:
        return runner.invoke(
            app,
            [str(arg) for arg in args],
            env={"CACHECAST_DATABASE_URL": migrated_db_url},
            catch_exceptions=False,
        )

    return run


def run_python(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in a fresh interpreter importing this checkout's cachecast, and no
    CACHECAST_* settings of the test run."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
    )


def git(repo: Path, *args: str) -> str:
    completed = subprocess.run(
        ["git", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com",
        },
    )
    return completed.stdout


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return path
