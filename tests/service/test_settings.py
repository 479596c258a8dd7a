"""Settings from CACHECAST_* variables and an optional TOML file (pydantic-settings)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from cachecast.core.errors import ConfigurationError
from cachecast.service.auth import key_is_valid
from cachecast.service.settings import ServiceSettings, load_settings

LONG_A = "a" * 20
LONG_B = "b" * 24


def _clear(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("CACHECAST_"):
            monkeypatch.delenv(name)


def test_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear(monkeypatch)
    monkeypatch.setenv("CACHECAST_DATABASE_URL", "sqlite:////tmp/x.db")
    monkeypatch.setenv("CACHECAST_ADMIN_KEYS", f"{LONG_A}, {LONG_B}")
    monkeypatch.setenv("CACHECAST_MAX_BODY_BYTES", "1234")
    monkeypatch.setenv("CACHECAST_WORKERS", "3")
    settings = ServiceSettings()
    assert settings.resolved_database_url == "sqlite:////tmp/x.db"
    assert [key.get_secret_value() for key in settings.admin_keys] == [LONG_A, LONG_B]
    assert (settings.max_body_bytes, settings.workers) == (1234, 3)
    assert settings.writes_enabled
    assert LONG_A not in repr(settings)  # keys never show in logs or tracebacks


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear(monkeypatch)
    settings = ServiceSettings()
    assert settings.max_body_bytes == 50_000_000  # the default limit: 50 MB
    assert not settings.writes_enabled
    assert settings.resolved_database_url.startswith("sqlite:///")


def test_settings_file_below_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _clear(monkeypatch)
    path = tmp_path / "cachecast.toml"
    path.write_text(f'admin_keys = ["{LONG_A}"]\nmax_body_bytes = 999\njob_threshold_records = 7\n')
    monkeypatch.setenv("CACHECAST_SETTINGS_FILE", str(path))
    monkeypatch.setenv("CACHECAST_MAX_BODY_BYTES", "555")
    settings = ServiceSettings()
    assert settings.max_body_bytes == 555  # the environment wins over the file
    assert settings.job_threshold_records == 7
    assert [key.get_secret_value() for key in settings.admin_keys] == [LONG_A]


def test_missing_settings_file_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _clear(monkeypatch)
    monkeypatch.setenv("CACHECAST_SETTINGS_FILE", str(tmp_path / "absent.toml"))
    with pytest.raises(ConfigurationError, match=r"absent\.toml") as raised:
        ServiceSettings()
    assert raised.value.location.field == "CACHECAST_SETTINGS_FILE"
    assert raised.value.exit_code == 2


def test_bad_settings_name_the_setting_never_the_value(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _clear(monkeypatch)
    monkeypatch.setenv("CACHECAST_ADMIN_KEYS", "short-secret-1")  # 14 characters
    monkeypatch.setenv("CACHECAST_JOB_RUNNERS", "-1")
    with pytest.raises(ConfigurationError) as raised:
        load_settings()
    error = raised.value
    assert error.location.field == "CACHECAST_ADMIN_KEYS"
    assert "at least 16 characters" in error.message
    assert "CACHECAST_JOB_RUNNERS" in error.one_line()  # the second bad setting is named too
    assert [problem.location.field for problem in error.problems] == [
        "CACHECAST_ADMIN_KEYS",
        "CACHECAST_JOB_RUNNERS",
    ]
    assert "short-secret-1" not in error.one_line() and "-1]" not in error.one_line()
    # The same setting in the file is named by its key and the file.
    _clear(monkeypatch)
    path = tmp_path / "cachecast.toml"
    path.write_text('admin_keys = ["short-secret-2"]\n')
    monkeypatch.setenv("CACHECAST_SETTINGS_FILE", str(path))
    with pytest.raises(ConfigurationError) as raised:
        load_settings()
    assert raised.value.location.field == f"admin_keys in {path}"
    assert "short-secret-2" not in raised.value.one_line()


def test_a_settings_file_that_is_not_toml_names_the_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _clear(monkeypatch)
    path = tmp_path / "cachecast.toml"
    path.write_text("admin_keys = [\n")
    monkeypatch.setenv("CACHECAST_SETTINGS_FILE", str(path))
    with pytest.raises(ConfigurationError) as raised:
        load_settings()
    assert raised.value.location.source == str(path)
    assert "not TOML" in raised.value.message


def test_a_bad_database_url_names_where_it_came_from(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _clear(monkeypatch)
    monkeypatch.setenv("CACHECAST_DATABASE_URL", "not a url:secret")
    with pytest.raises(ConfigurationError) as raised:
        _ = load_settings().resolved_database_url
    assert raised.value.location.field == "CACHECAST_DATABASE_URL"
    assert "secret" not in raised.value.one_line()
    _clear(monkeypatch)
    path = tmp_path / "cachecast.toml"
    path.write_text('database_url = "nonsense"\n')
    monkeypatch.setenv("CACHECAST_SETTINGS_FILE", str(path))
    with pytest.raises(ConfigurationError) as raised:
        _ = load_settings().resolved_database_url
    assert raised.value.location.field == f"database_url in {path}"


def test_short_keys_and_bad_limits_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear(monkeypatch)
    with pytest.raises(ValidationError, match="16 characters"):
        ServiceSettings(admin_keys=["short"])
    with pytest.raises(ValidationError, match="max_body_bytes"):
        ServiceSettings(max_body_bytes=0)


def test_key_check_matches_any_configured_key_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear(monkeypatch)
    settings = ServiceSettings(admin_keys=[LONG_A, LONG_B])
    assert key_is_valid(LONG_A, settings) and key_is_valid(LONG_B, settings)
    assert not key_is_valid(LONG_A[:-1], settings)
    assert not key_is_valid(LONG_A + "a", settings)
    assert not key_is_valid("", settings)
