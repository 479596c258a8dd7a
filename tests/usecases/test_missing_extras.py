"""A missing optional extra names the extra to install, on one line, exit 2.

The packages are really made unavailable in a ``cachecast`` subprocess: a ``sitecustomize``
ahead of site-packages refuses to import them and hides their distributions, exactly what
an install without the extra looks like to our code (nothing of ours is replaced)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "agent-log.jsonl"

SITECUSTOMIZE = """
import importlib.abc
import importlib.metadata
import os
import sys

BLOCKED = set(os.environ["CACHECAST_TEST_BLOCKED"].split(","))


class _Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Absent())
_distribution, _version = importlib.metadata.distribution, importlib.metadata.version


def _hidden(real):
    def lookup(name):
        if name.replace("-", "_") in BLOCKED:
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)
    return lookup


importlib.metadata.distribution = _hidden(_distribution)
importlib.metadata.version = _hidden(_version)
"""


def run_without(tmp_path: Path, blocked: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    folder = tmp_path / "site"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {key: value for key, value in os.environ.items() if not key.startswith("CACHECAST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(folder), str(REPO_ROOT)])
    env["CACHECAST_TEST_BLOCKED"] = ",".join(blocked)
    return subprocess.run(
        [sys.executable, "-m", "cachecast", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_the_blocker_really_hides_a_package(tmp_path: Path) -> None:
    # The check of the check: the same interpreter imports ray unless it is blocked.
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = dict(os.environ, PYTHONPATH=str(folder), CACHECAST_TEST_BLOCKED="")
    if subprocess.run([sys.executable, "-c", "import ray"], env=env, timeout=120).returncode:
        pytest.skip("ray is not installed here: nothing to hide")
    env["CACHECAST_TEST_BLOCKED"] = "ray"
    blocked = subprocess.run(
        [sys.executable, "-c", "import ray"], env=env, capture_output=True, text=True, timeout=120
    )
    assert blocked.returncode != 0 and "No module named 'ray'" in blocked.stderr


def test_estimate_ray_without_ray_names_the_distributed_extra(
    tmp_path: Path, migrated_db_url: str
) -> None:
    result = run_without(
        tmp_path,
        ["ray"],
        *("estimate", str(EXAMPLE), "--target", "openai:gpt-4o", "--ray"),
        *("--database-url", migrated_db_url),
    )
    assert result.returncode == 2
    line = one_line(result)
    assert "--ray" in line and "pip install 'cachecast[distributed]'" in line


def test_audit_without_genai_prices_names_the_audit_extra(
    tmp_path: Path, migrated_db_url: str
) -> None:
    # A LiteLLM-format file needs no package; genai-prices' reader does.
    prices = tmp_path / "map.json"
    prices.write_text(json.dumps({}))
    result = run_without(
        tmp_path,
        ["genai_prices"],
        *("contracts", "audit", "--litellm", str(prices), "--database-url", migrated_db_url),
    )
    assert result.returncode == 2
    line = one_line(result)
    assert "'genai-prices'" in line and "pip install 'cachecast[audit]'" in line


def test_audit_without_litellm_names_the_extra_or_a_file(
    tmp_path: Path, migrated_db_url: str
) -> None:
    result = run_without(
        tmp_path, ["litellm"], "contracts", "audit", "--database-url", migrated_db_url
    )
    assert result.returncode == 2
    line = one_line(result)
    assert "--litellm FILE" in line and "pip install 'cachecast[audit]'" in line
