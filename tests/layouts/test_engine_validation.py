"""`suggest --validate-on-engine`: the use case reaches the engine itself, from any front end.

No engine listens in these tests (a real vLLM server is exercised in tests/gpu_backend); what
is checked is that the library, with no CLI imported, and the CLI both reach the engine
client and fail the one way an unreachable engine fails.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.layouts.conftest import (
    OPENAI,
    REPO_ROOT,
    Invoke,
    agent_layout,
    run_python,
    write_yaml,
)


def _closed_port() -> int:
    # Bind then release: nothing listens on this port afterwards.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _layout(tmp_path: Path) -> Path:
    return write_yaml(
        tmp_path / "agent.yaml",
        agent_layout(system_top="Current time: {{ now }}\n", sessions=2, turns=1, rules=40),
    )


def test_unreachable_engine_exits_2_naming_the_url(invoke: Invoke, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    result = invoke(
        "suggest", _layout(tmp_path), "--target", OPENAI, "--validate-on-engine", url,
        "--model", "gpt-4o",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert url in result.output
    assert "Traceback" not in result.output


def test_validation_without_a_model_asks_the_engine_for_its_model(
    invoke: Invoke, tmp_path: Path
) -> None:
    # Without --model the requests are tokenized as the model the engine serves, which only
    # the engine can say: an unreachable one is named, one line, exit 2.
    url = f"http://127.0.0.1:{_closed_port()}"
    result = invoke("suggest", _layout(tmp_path), "--target", OPENAI, "--validate-on-engine", url)
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert f"{url}: GET {url}/v1/models failed" in line
    assert "Traceback" not in result.output


def test_the_library_reaches_the_engine_without_the_cli(tmp_path: Path) -> None:
    # A fresh interpreter that never imports cachecast.cli: no hook can have been installed,
    # yet the engine is tried (and found unreachable, naming its address).
    url = f"http://127.0.0.1:{_closed_port()}"
    script = f"""
import json, sys
from pathlib import Path
from cachecast.passes.prompt_sets import PromptSource
from cachecast.usecases.suggest import EngineValidation, SuggestRequest, suggest
from cachecast.core.errors import UnavailableError
request = SuggestRequest(
    source=PromptSource(path=Path({str(_layout(tmp_path))!r})),
    targets=["vllm:16"],
    model="gpt-4o",
    validate_on_engine=EngineValidation(url={url!r}),
)
try:
    suggest(request, None)
except UnavailableError as error:
    print(json.dumps({{"error": error.one_line(), "exit": error.exit_code,
                       "cli": "cachecast.cli" in sys.modules}}))
"""
    completed = run_python("-c", script, cwd=REPO_ROOT)
    assert completed.returncode == 0, completed.stderr
    outcome = json.loads(completed.stdout)
    assert url in outcome["error"]
    assert outcome["exit"] == 2
    assert outcome["cli"] is False
