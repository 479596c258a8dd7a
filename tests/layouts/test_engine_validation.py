"""`suggest --validate-on-engine` reaches the engine only through the installed seam."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from cachecast.layouts import engine_hook
from tests.layouts.conftest import OPENAI, Invoke, agent_layout, write_yaml


def _closed_port() -> int:
    # Bind then release: nothing listens on this port afterwards.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_without_an_installed_measurer_validation_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(engine_hook, "_measurer", None)
    target = engine_hook.EngineTarget(url="http://127.0.0.1:9", model="m")
    with pytest.raises(engine_hook.EngineValidationUnavailable, match="no engine backend"):
        engine_hook.measure_on_engine(target, [], "original")


def test_the_cli_installs_the_gpu_backend_measurer() -> None:
    import cachecast.cli  # noqa: F401  (importing the app installs the measurer)
    from cachecast.gpu_backend.engine.layout_validation import measure_records_on_engine

    assert engine_hook._measurer is measure_records_on_engine


def test_unreachable_engine_exits_2_naming_the_url(invoke: Invoke, tmp_path: Path) -> None:
    layout = write_yaml(
        tmp_path / "agent.yaml",
        agent_layout(system_top="Current time: {{ now }}\n", sessions=2, turns=1, rules=40),
    )
    url = f"http://127.0.0.1:{_closed_port()}"
    result = invoke(
        "suggest", layout, "--target", OPENAI, "--validate-on-engine", url, "--model", "gpt-4o"
    )
    assert result.exit_code == 2, result.output
    assert url in result.output
