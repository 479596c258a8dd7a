"""Every fenced command of the README runs as written (issue 29, point 12).

Each ``bash`` block is run line by line in a scratch folder laid out as a checkout (the
repository's ``examples`` and ``cachecast`` folders, and ``../shared`` beside it), with
``.venv/bin/cachecast`` and ``.venv/bin/python`` standing for this interpreter; ``export``
lines carry over to the lines after them, ``A && B`` runs each part. Expected exit codes: 0,
except the ``check`` example, which shows a regression (1, as the README says).

Not run, and why:
- ``python3 -m venv .venv`` and ``pip install``: they build a new environment from PyPI (the
  test runs in the one already built); the rest of that line runs.
- ``bash scripts/check.sh``: the whole check, this test included.
- the lines that need a running vLLM server: ``scripts/serve_tiny_qwen.py`` (builds a model
  and serves it on a GPU or vLLM's CPU build), the ``curl`` that waits for it,
  ``--validate-on-engine URL`` and ``--target vllm-engine:URL``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, shared_data

NOT_RUN = (
    ("python3 -m venv", "builds a new environment from PyPI"),
    ("pip install", "builds a new environment from PyPI"),
    ("scripts/check.sh", "the whole check, this test included"),
    ("serve_tiny_qwen.py", "serves a model on vLLM"),
    ("curl ", "waits for the vLLM server"),
    ("--validate-on-engine", "needs a running vLLM server"),
    ("vllm-engine:", "needs a running vLLM server"),
)
EXPECTED_EXIT = {"cachecast check cachecast/layouts/examples/support-agent.yaml": 1}


def readme_commands() -> list[str]:
    """Every command of the README's bash blocks, ``A && B`` split into its parts."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    commands: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL):
        for line in block.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                commands.extend(part.strip() for part in line.split(" && "))
    return commands


def _why_not(command: str) -> str | None:
    return next((why for marker, why in NOT_RUN if marker in command), None)


def test_every_readme_command_runs(tmp_path: Path) -> None:
    shared = shared_data("recordings")  # the inspect example reads a shared recording
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (tmp_path / "shared").symlink_to(shared.parent.parent)
    for name in ("examples", "cachecast"):
        (checkout / name).symlink_to(REPO_ROOT / name)
    bin_dir = checkout / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    shim = bin_dir / "cachecast"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m cachecast "$@"\n')
    shim.chmod(0o755)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CACHECAST_", "XDG_", "CLAUDE_CONFIG_DIR", "CODEX_HOME"))
    }
    # A home of its own, as on a fresh machine: the README's `db upgrade` migrates the
    # embedded default database in the user's data folder, and the user's own (another
    # checkout's, at another revision) is neither touched nor read.
    home = tmp_path / "home"
    home.mkdir()
    env["HOME"] = str(home)
    env["PYTHONPATH"] = str(REPO_ROOT)
    exports: list[str] = []
    ran, not_run = 0, []
    for command in readme_commands():
        why = _why_not(command)
        if why is not None:
            not_run.append(command)
            continue
        if command.startswith("export "):
            exports.append(command)
            continue
        script = "; ".join([*exports, command])
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        expected = next((code for key, code in EXPECTED_EXIT.items() if key in command), 0)
        assert done.returncode == expected, f"{command}\n{done.stdout[-2000:]}{done.stderr}"
        assert "Traceback" not in done.stderr, command
        ran += 1
    # The README's quick start and examples: at least these many run for real.
    assert ran >= 10, ran
    assert all(_why_not(command) for command in not_run)


def test_the_commands_not_run_are_only_those_named() -> None:
    commands = readme_commands()
    skipped = [command for command in commands if _why_not(command)]
    # python3 -m venv, pip install, check.sh, the server, curl, validate-on-engine, engine check
    assert len(skipped) == 7, skipped
    with pytest.raises(StopIteration):
        next(c for c in commands if "candidate.yaml" in c)  # the unshipped file is gone
