"""A command imports what it uses: ``cachecast --help`` and ``cachecast usage`` load no
dataframe, model, GPU, cluster or plotting library, no migration tool and (usage, with its
contract answers remembered) no SQL toolkit; a command loads no other command's module, and
``usage --json`` no table library (rich), no log format reader (YAML), not click (typer
brings its own) and nothing of the tokenizers. Checked on ``sys.modules`` of a fresh
interpreter running the command, not on time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT, shared_data

HEAVY = ("pandas", "transformers", "torch", "vllm", "ray", "matplotlib", "pyarrow", "numpy")
DATABASE = ("alembic", "sqlalchemy", "sqlmodel")
_RUN = """
import json, runpy, sys
sys.argv = ["cachecast", *json.loads(sys.argv[1])]
try:
    runpy.run_module("cachecast", run_name="__main__")
except SystemExit as exit:
    code = exit.code
else:
    code = 0
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def loaded(arguments: list[str], env: dict[str, str]) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", _RUN, json.dumps(arguments)],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    report = json.loads(result.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), result.stderr
    return set(report["modules"])


def tops(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


def test_help_loads_no_heavy_module() -> None:
    modules = tops(loaded(["--help"], {}))
    assert not modules & {*HEAVY, *DATABASE}


def test_usage_loads_no_heavy_module(migrated_db_url: str, tmp_path: Path) -> None:
    session = str(shared_data("recordings/claude_code/spotter/short.jsonl"))
    env = {"CACHECAST_DATABASE_URL": migrated_db_url, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    first = tops(loaded(["usage", session, "--json"], env))
    assert not first & set(HEAVY)
    assert "alembic" in first  # the first run checks the database's migration
    # Later runs answer from the remembered contract answers: no SQL toolkit at all.
    again = loaded(["usage", session, "--json"], env)
    assert not tops(again) & {*HEAVY, *DATABASE, "rich", "yaml", "click"}
    # typer's help rendering (rich panels) is for --help only.
    assert "typer.rich_utils" not in again
    # Plugins off (cachecast.cli.skip_plugin_loader): pydantic's plugin loader is not read,
    # nor the package metadata reader it imports.
    assert not {"importlib.metadata", "email", "zipfile"} & again
    commands = {name for name in again if name.startswith("cachecast.cli.")}
    assert commands <= {
        "cachecast.cli.usage",
        "cachecast.cli.common",
        "cachecast.cli.help",
        "cachecast.cli.launch",
    }
    # Usage counts tokens from the logged usage: no tokenizer package (not even the types of
    # a tokenized request) and no reconciliation summary.
    assert not {name for name in again if name.startswith("cachecast.tokenizers")}
    assert "cachecast.simulator.reconcile" not in again
    # Nor the headless output reader: a client's own logs name its formats only.
    assert not {"cachecast.logs.headless", "cachecast.sessions.headless"} & again


def test_the_entry_module_imports_no_command_layer() -> None:
    # ``cachecast.cli.main`` sets the garbage collector up before typer and pydantic are
    # imported (docs/usage-report.md "Speed"): importing the module that holds it loads
    # neither.
    printed = probe("import sys, cachecast.cli; print(' '.join(sorted(sys.modules)))")
    assert "cachecast.cli" in printed
    assert not tops(set(printed)) & {"typer", "pydantic", "click", "rich"}


def test_the_plugin_loader_stand_in_gives_way_when_plugins_are_on() -> None:
    # Plugins off: no plugin, and the loader module is not read. Turned on again in the
    # process: pydantic's own loader (from its file) answers, as it would have.
    code = """
import os, sys
os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
from cachecast.cli import skip_plugin_loader
skip_plugin_loader()
import pydantic
class Off(pydantic.BaseModel):
    x: int
off = Off(x=1).x == 1 and "importlib.metadata" not in sys.modules
del os.environ["PYDANTIC_DISABLE_PLUGINS"]
class On(pydantic.BaseModel):
    y: int
real = getattr(sys.modules["pydantic.plugin._loader"], "__file__", None) is not None
print(off, On(y=2).y, real, "importlib.metadata" in sys.modules)
"""
    assert probe(code) == ["True", "2", "True", "True"]


def probe(code: str) -> list[str]:
    """The words ``code`` prints, run in a fresh interpreter importing this checkout."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return result.stdout.split()


def test_the_command_table_names_the_module_of_every_command() -> None:
    # ``cachecast.cli.main`` imports a command's module from COMMANDS alone: it must say what
    # the modules themselves register.
    from cachecast.cli import COMMANDS
    from cachecast.cli.root import command_modules

    assert command_modules() == COMMANDS
