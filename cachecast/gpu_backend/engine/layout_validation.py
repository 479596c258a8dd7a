"""Measure prompt layouts on a vLLM server, for ``suggest``'s validation on an engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cachecast.errors import Location, UnavailableError
from cachecast.gpu_backend.engine.http_backend import HttpBackend
from cachecast.gpu_backend.engine.replay import measure_layout
from cachecast.gpu_backend.engine.types import EngineError
from cachecast.tokenizers import read_records


@dataclass(frozen=True, slots=True)
class LayoutMeasurement:
    """One replay of a layout's requests: measured against predicted cached tokens."""

    hit_rate: float
    measured_cached_tokens: int | None
    predicted_cached_tokens: int | None
    prompt_tokens: int


def measure_records_on_engine(
    url: str,
    model: str,
    api_key: str | None,
    records: list[dict[str, Any]],
    label: str,
) -> LayoutMeasurement:
    """Replay ``records`` (OpenAI-chat wrapper records, tokenized as ``model``, the served
    model) on the OpenAI-compatible vLLM server at ``url``. An engine that cannot be reached
    or used is :class:`~cachecast.errors.UnavailableError` naming ``url``."""
    backend = HttpBackend(url, model=model, api_key=api_key)
    requests = list(read_records(records, label, model=model, strict=True))
    try:
        report = measure_layout(requests, backend, source=label)
    except EngineError as error:
        raise UnavailableError(
            f"{url}: {error}", location=Location(field="validate_on_engine")
        ) from None
    return LayoutMeasurement(
        hit_rate=report.hit_rate,
        measured_cached_tokens=report.measured_cached_tokens,
        predicted_cached_tokens=report.predicted_cached_tokens,
        prompt_tokens=report.prompt_tokens,
    )
