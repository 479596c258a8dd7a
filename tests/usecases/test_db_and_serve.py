"""``cachecast db`` and ``cachecast serve``: every way they end. Bad settings name the
setting and never echo its value; nothing foreseeable prints a traceback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.core import db
from tests.conftest import REPO_ROOT
from tests.service.server import Server

SECRET_KEY = "short-k3y"  # 9 characters: under the 16 an admin key needs


def cachecast(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m cachecast ARGS`` in a subprocess, CACHECAST_* variables only as given."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith("CACHECAST_")}
    clean["PYTHONPATH"] = str(REPO_ROOT)
    return subprocess.run(
        [sys.executable, "-m", "cachecast", *args],
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


# ------------------------------------------------------------------------------------- db


def test_db_upgrade_current_downgrade_exit_0(sqlite_url: str) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["db", "current", "--database-url", sqlite_url])
    assert result.exit_code == 0 and result.stdout.startswith("empty behind")
    assert not Path(sqlite_url.removeprefix("sqlite:///")).exists()  # a read creates nothing
    result = runner.invoke(app, ["db", "upgrade", "--database-url", sqlite_url])
    assert result.exit_code == 0, result.output
    head = db.head_revision()
    assert f"database at revision {head}" in result.stderr
    result = runner.invoke(app, ["db", "current", "--database-url", sqlite_url])
    assert result.stdout == f"{head} current\n"
    result = runner.invoke(app, ["db", "downgrade", "base", "--database-url", sqlite_url])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["db", "current", "--database-url", sqlite_url])
    assert result.stdout == f"empty behind (head is {head})\n"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["upgrade", "no-such-revision"], "revision: Can't locate revision"),
        (["downgrade", "no-such-revision"], "revision: "),
        (["upgrade", "--database-url", "not a url:pw"], "--database-url: not a SQLAlchemy"),
        (["current", "--database-url", "nonsense://u:pw@h/db"], "unknown database kind"),
        (["upgrade", "--database-url", "sqlite:////proc/no/such/x.db"], "cannot create"),
    ],
)
def test_db_bad_input_exits_2_with_one_line(args: list[str], needle: str, sqlite_url: str) -> None:
    if "--database-url" not in args:
        args = [*args, "--database-url", sqlite_url]
    result = CliRunner().invoke(app, ["db", *args])
    assert result.exit_code == 2, result.output
    line = one_line(result.stderr)
    assert needle in line and ":pw" not in line


def test_db_unreachable_server_exits_2_with_the_password_masked() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql+psycopg://user:hunter22@127.0.0.1:{port}/cachecast"
    result = CliRunner().invoke(app, ["db", "upgrade", "--database-url", url])
    assert result.exit_code == 2
    line = one_line(result.stderr)
    assert "cannot reach the database" in line and "hunter22" not in line and "***" in line


def test_the_environment_variable_is_named_as_the_origin() -> None:
    result = cachecast("db", "current", env={"CACHECAST_DATABASE_URL": "not a url:secret"})
    assert result.returncode == 2
    line = one_line(result.stderr)
    assert line.startswith("error: CACHECAST_DATABASE_URL: not a SQLAlchemy database URL")
    assert "secret" not in line


# ---------------------------------------------------------------------------------- serve


def test_a_short_admin_key_exits_2_with_one_line_that_does_not_contain_it() -> None:
    result = cachecast("serve", env={"CACHECAST_ADMIN_KEYS": SECRET_KEY})
    assert result.returncode == 2
    line = one_line(result.stderr)
    assert line == "error: CACHECAST_ADMIN_KEYS: every admin key must have at least 16 characters"
    assert SECRET_KEY not in result.stderr + result.stdout


def test_a_short_key_in_the_settings_file_is_named_by_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "cachecast.toml"
    path.write_text(f'admin_keys = ["{SECRET_KEY}"]\n')
    result = cachecast("serve", env={"CACHECAST_SETTINGS_FILE": str(path)})
    assert result.returncode == 2
    line = one_line(result.stderr)
    assert f"admin_keys in {path}" in line and SECRET_KEY not in result.stderr


@pytest.mark.parametrize(
    ("args", "env", "needle"),
    [
        (["--workers", "0"], {}, "error: --workers: must be at least 1"),
        (
            [],
            {"CACHECAST_WORKERS": "0"},
            "error: CACHECAST_WORKERS: Input should be greater than 0",
        ),
        ([], {"CACHECAST_MAX_BODY_BYTES": "lots"}, "error: CACHECAST_MAX_BODY_BYTES: "),
        ([], {"CACHECAST_DATABASE_URL": "::nope:pw"}, "error: CACHECAST_DATABASE_URL: not a"),
        (["--database-url", "::nope:pw"], {}, "error: --database-url: not a SQLAlchemy"),
        ([], {"CACHECAST_SETTINGS_FILE": "/no/such.toml"}, "CACHECAST_SETTINGS_FILE: names"),
        (["--host", "no-such-host.invalid"], {}, "error: --host: cannot resolve"),
    ],
)
def test_serve_bad_settings_exit_2_with_one_line(
    args: list[str], env: dict[str, str], needle: str, tmp_path: Path
) -> None:
    env = {"CACHECAST_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}", **env}
    result = cachecast("serve", *args, env=env)
    assert result.returncode == 2, result.stderr
    line = one_line(result.stderr)
    assert line.startswith(needle) or needle in line
    assert ":pw" not in line


def test_serve_on_a_port_in_use_exits_2(migrated_db_url: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = cachecast("serve", "--port", port, env={"CACHECAST_DATABASE_URL": migrated_db_url})
    assert result.returncode == 2
    assert f"--port: cannot listen on 127.0.0.1:{port}" in one_line(result.stderr)


def test_serve_runs_until_stopped_by_a_signal(migrated_db_url: str, tmp_path: Path) -> None:
    server = Server(migrated_db_url, tmp_path / "server.log")
    try:
        server.wait_ready()
    finally:
        server.stop()
    log = (tmp_path / "server.log").read_text(errors="replace")
    # uvicorn shuts down cleanly, then re-raises the signal it was stopped by, so the
    # process ends as terminated by SIGTERM (what a supervisor expects), not with an error.
    assert server.process.returncode == -signal.SIGTERM, log
    assert "Traceback" not in log
