"""The seam through which ``suggest --validate-on-engine`` reaches a real engine.

The engine side (``cachecast.gpu_backend``) builds on the simulator, so the simulator must not
import it. Instead the engine side provides a measurer, and the application that assembles
both (``cachecast.cli``) installs it here; without one, validation is refused plainly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class EngineValidationUnavailable(RuntimeError):
    """No engine measurer is installed, or the engine could not be used."""


@dataclass(frozen=True, slots=True)
class EngineTarget:
    """Where and how to replay: an OpenAI-compatible vLLM server and its served model."""

    url: str
    model: str
    api_key: str | None = None


# records (OpenAI-chat wrapper records), label -> {"hit_rate", "measured_cached_tokens",
# "predicted_cached_tokens", "prompt_tokens"}
LayoutMeasurer = Callable[[EngineTarget, list[dict[str, Any]], str], dict[str, Any]]

_measurer: LayoutMeasurer | None = None


def install_engine_measurer(measurer: LayoutMeasurer) -> None:
    global _measurer
    _measurer = measurer


def measure_on_engine(
    target: EngineTarget, records: list[dict[str, Any]], label: str
) -> dict[str, Any]:
    if _measurer is None:
        raise EngineValidationUnavailable(
            "no engine backend is installed in this process (cachecast.gpu_backend provides it)"
        )
    return _measurer(target, records, label)
