"""Measure prompt layouts on a vLLM server for ``cachecast suggest --validate-on-engine``."""

from __future__ import annotations

from typing import Any

from cachecast.gpu_backend.engine.http_backend import HttpBackend
from cachecast.gpu_backend.engine.replay import measure_layout
from cachecast.gpu_backend.engine.types import EngineError
from cachecast.layouts.engine_hook import EngineTarget, EngineValidationUnavailable
from cachecast.tokenizers import read_records


def measure_records_on_engine(
    target: EngineTarget, records: list[dict[str, Any]], label: str
) -> dict[str, Any]:
    """Replay ``records`` on the server and report measured against predicted cached tokens."""
    backend = HttpBackend(target.url, model=target.model, api_key=target.api_key)
    requests = list(read_records(records, label, model=target.model, strict=True))
    try:
        report = measure_layout(requests, backend, source=label)
    except EngineError as error:
        raise EngineValidationUnavailable(str(error)) from error
    return {
        "hit_rate": report.hit_rate,
        "measured_cached_tokens": report.measured_cached_tokens,
        "predicted_cached_tokens": report.predicted_cached_tokens,
        "prompt_tokens": report.prompt_tokens,
    }
