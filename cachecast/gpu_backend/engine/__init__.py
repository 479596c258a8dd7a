"""Replays on a real vLLM engine: in-process and over HTTP.

vLLM itself is imported only when an offline backend is built, so this package imports
without it.
"""

from cachecast.gpu_backend.engine.backend import EngineBackend
from cachecast.gpu_backend.engine.replay import load_log, measure_layout
from cachecast.gpu_backend.engine.report import MeasurementReport, RequestComparison
from cachecast.gpu_backend.engine.types import (
    EngineError,
    EngineInfo,
    MetricsSnapshot,
    ReplayOptions,
    ReplayRequest,
    RequestResult,
)

__all__ = [
    "EngineBackend",
    "EngineError",
    "EngineInfo",
    "MeasurementReport",
    "MetricsSnapshot",
    "ReplayOptions",
    "ReplayRequest",
    "RequestComparison",
    "RequestResult",
    "load_log",
    "measure_layout",
]
