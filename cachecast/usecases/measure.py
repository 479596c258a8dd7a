"""``measure``: a log replayed on a real vLLM engine, hits and TTFT measured.

The engine is either ``vllm.LLM`` in this process (``offline``: the model is loaded here) or
a running vLLM server (``http``). The replay itself (warm-up, cache reset, counters, the
simulator's prediction with the engine's own geometry) is ``gpu_backend.replay``'s
``measure_layout``; this use case builds the engine, reads the log, and turns the
measurement into a report, stored as the engine's passport row where asked.

The log is a token-id log (``{"tokens": [...]}`` per line) or any log cachecast reads,
tokenized as ``model``. It is read as a stream, twice: once to check it before any engine
starts, once as the replay sends it; of each request only its figures are kept.
"""

from __future__ import annotations

import datetime as dt
import json
import os

from pydantic import AliasChoices, Field, SecretStr

from cachecast.core import db
from cachecast.core.errors import BadInputError, Location, NotMigratedError
from cachecast.gpu_backend.backend import EngineBackend
from cachecast.gpu_backend.report import MeasurementReport
from cachecast.gpu_backend.types import EngineInfo, ReplayOptions
from cachecast.gpu_backend.types import EngineKind as EngineKind  # its home before
from cachecast.passes.progress import NoProgress, Progress
from cachecast.usecases.reports import Report
from cachecast.usecases.requests import LogRequest


class MeasureRequest(LogRequest):
    """Replay ``log`` on an engine (offline needs ``model``, http needs ``url``)."""

    engine: EngineKind = EngineKind.offline
    model: str | None = Field(
        default=None,
        description="offline: model path or name (required); http: the served model"
        " (default: the first); the log is tokenized as this model",
    )
    url: str | None = Field(default=None, description="http: the server's base URL")
    api_key: SecretStr | None = Field(default=None, description="http: a bearer token")
    device: str | None = Field(default=None, description="http: the server's device")
    block_size: int | None = Field(default=None, gt=0, description="offline: KV block size")
    kv_cache_bytes: int | None = Field(default=None, gt=0, description="offline: KV memory")
    num_blocks: int | None = Field(default=None, gt=1, description="offline: KV blocks")
    max_model_len: int | None = Field(default=None, gt=0, description="offline: longest sequence")
    dtype: str = Field(default="auto", description="offline: weight dtype")
    enforce_eager: bool = Field(default=False, description="offline: no graph capture")
    concurrency: int = Field(default=1, ge=1, description="requests in flight (1: exact)")
    arrival_scale: float | None = Field(
        default=None, ge=0, description="follow the log's inter-arrival times times this"
    )
    warmup: int = Field(default=2, ge=0, description="warm-up requests before the run")
    max_tokens: int = Field(default=1, ge=1, description="tokens generated per request")
    limit: int | None = Field(default=None, ge=1, description="replay the first N requests")
    compare_simulator: bool = Field(
        default=False, description="also run the simulator's vllm policy, engine geometry"
    )


class Passport(Report):
    """What produced the figures: the engine, its model, device and cache geometry."""

    engine_kind: str = Field(validation_alias=AliasChoices("engine_kind", "kind"))
    engine_version: str
    model: str
    device: str
    block_size: int
    num_blocks: int
    dtype: str | None = Field(description="the weights' dtype (None: the engine does not say)")
    kv_cache_dtype: str | None = Field(description="'auto': the weights' dtype")
    endpoint: str | None
    measured_at: dt.datetime

    @classmethod
    def of(cls, info: EngineInfo, measured_at: dt.datetime) -> Passport:
        return cls.read(info, measured_at=measured_at)


class ReplaySettings(Report):
    concurrency: int
    arrival_scale: float | None
    warmup_requests: int
    max_tokens: int
    cache_isolation: str = Field(description="reset, salt or none (EngineBackend)")


class TtftSummary(Report):
    """Nearest-rank percentiles of time to first token, in seconds (None: no request)."""

    count: int
    p50_s: float | None
    p90_s: float | None
    p95_s: float | None
    p99_s: float | None


class CountersDelta(Report):
    """How far the engine's own counters moved during the measured run."""

    prefix_cache_queries: int
    prefix_cache_hits: int
    ttft_count: int
    ttft_sum_s: float
    ttft_buckets: list[tuple[str, int]] = Field(description="(upper bound, cumulative count)")
    agree_with_requests: bool = Field(description="the counters equal the per-request sums")


class RequestMeasurement(Report):
    request_id: str
    line: int
    prompt_tokens: int
    measured_cached_tokens: int | None = Field(description="None: the engine did not say")
    predicted_cached_tokens: int | None = Field(description="None: no simulator run")
    output_tokens: int
    ttft_s: float
    latency_s: float


class MeasureReport(Report):
    """Measured against predicted cached tokens, TTFT percentiles and throughput."""

    passport: Passport
    source: str
    options: ReplaySettings
    simulator_policy: str | None
    requests: int
    prompt_tokens: int
    output_tokens: int
    measured_cached_tokens: int | None
    predicted_cached_tokens: int | None
    exact_match_share: float | None
    hit_rate: float = Field(
        description="cached / prompt tokens (the engine's counters if it"
        " reports no per-request figure)"
    )
    ttft: TtftSummary
    ttft_cold: TtftSummary
    ttft_warm: TtftSummary
    wall_s: float
    input_tokens_per_s: float
    output_tokens_per_s: float
    engine_counters_delta: CountersDelta
    per_request: list[RequestMeasurement]
    stored_id: int | None = Field(
        default=None, description="the passport row's id where it was stored"
    )

    @classmethod
    def of(cls, measurement: MeasurementReport, stored_id: int | None = None) -> MeasureReport:
        delta = measurement.metrics_delta
        return cls.read(
            measurement,  # source, simulator_policy, the token counts and rates, wall_s
            passport=Passport.of(measurement.engine, measurement.measured_at),
            options=ReplaySettings.read(
                measurement.options, cache_isolation=measurement.cache_isolation
            ),
            requests=len(measurement.requests),
            ttft=measurement.ttft(),
            ttft_cold=measurement.ttft(warm=False),
            ttft_warm=measurement.ttft(warm=True),
            engine_counters_delta=CountersDelta.read(
                delta,
                ttft_buckets=[(str(bound), count) for bound, count in delta.ttft_buckets],
                agree_with_requests=measurement.counters_agree,
            ),
            per_request=measurement.requests,
            stored_id=stored_id,
        )

    @property
    def mismatches(self) -> list[RequestMeasurement]:
        """Requests whose measured cached tokens differ from the prediction."""
        return [
            row
            for row in self.per_request
            if None not in (row.measured_cached_tokens, row.predicted_cached_tokens)
            and row.measured_cached_tokens != row.predicted_cached_tokens
        ]

    def document(self) -> str:
        """The JSON stored with the passport row (keys sorted, as readers of it expect)."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True)


def check_engine(request: MeasureRequest) -> None:
    """What each kind of engine needs, before anything is started."""
    if request.engine is EngineKind.http and request.url is None:
        raise BadInputError("an http engine needs the server's URL", location=Location(field="url"))
    if request.engine is EngineKind.offline and request.model is None:
        raise BadInputError(
            "an offline engine needs the model (a path or a name vLLM can load)",
            location=Location(field="model"),
        )


def build_backend(request: MeasureRequest) -> EngineBackend:
    """The engine the request names: a client of a running server, or vLLM in-process."""
    check_engine(request)
    if request.engine is EngineKind.http:
        from cachecast.gpu_backend.http_backend import REMOTE_DEVICE, HttpBackend

        assert request.url is not None
        key = request.api_key.get_secret_value() if request.api_key is not None else None
        return HttpBackend(
            request.url, model=request.model, api_key=key, device=request.device or REMOTE_DEVICE
        )
    assert request.model is not None
    # One process is enough to drive the engine step by step and starts much faster; a
    # user who exported the variable keeps their choice.
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    # vLLM logs to stdout by default, which would corrupt a JSON report printed there.
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
    from cachecast.gpu_backend.offline import OfflineBackend

    return OfflineBackend.create(
        request.model,
        block_size=request.block_size,
        kv_cache_bytes=request.kv_cache_bytes,
        num_blocks=request.num_blocks,
        max_model_len=request.max_model_len,
        dtype=request.dtype,
        enforce_eager=request.enforce_eager,
    )


def measure(
    request: MeasureRequest,
    *,
    store_url: str | None = None,
    progress: Progress | None = None,
    backend: EngineBackend | None = None,
) -> MeasureReport:
    """Replay the log on the engine and report; with ``store_url``, store the passport.

    Checked before any engine starts: the engine's options, the log (one file; every line
    read, the first bad one raised), the passport database (migrated). ``backend`` is an
    engine already built (else :func:`build_backend`). The log is streamed (read twice, held
    never): memory follows the requests in flight and the report's per-request figures."""
    from cachecast.gpu_backend.passport import store_report
    from cachecast.gpu_backend.replay import (
        Rereadable,
        log_requests,
        measure_layout,
        survey_log,
    )

    if backend is None:
        check_engine(request)
    log = request.log
    log.check_sources()
    if len(log.files) != 1:
        raise BadInputError("measure replays one log file", location=Location(field="log"))
    file = log.files[0]
    if store_url is not None and not (db.exists(store_url) and db.is_current(store_url)):
        raise NotMigratedError(
            f"the database at {db.display_url(store_url)} is not migrated, so the passport"
            " cannot be stored: run `cachecast db upgrade` (or --no-store)",
            location=Location(field="database_url"),
        )
    # The log is read as a stream, never held: once here, before any engine starts (every
    # record checked, the requests counted, the longest prompt and the largest token id
    # noted), then again by the replay as it sends the requests.
    requests = Rereadable(lambda: log_requests(file.path, model=request.model, limit=request.limit))
    survey = survey_log(requests)
    engine = backend if backend is not None else build_backend(request)
    progress = progress or NoProgress()
    progress.start("replaying", survey.requests)
    measurement = measure_layout(
        requests,
        engine,
        options=ReplayOptions(
            concurrency=request.concurrency,
            arrival_scale=request.arrival_scale,
            warmup_requests=request.warmup,
            max_tokens=request.max_tokens,
        ),
        compare_simulator=request.compare_simulator,
        source=file.display_name,
        progress=progress.advance,
        survey=survey,
    )
    if store_url is None:
        return MeasureReport.of(measurement)
    stored_id = store_report(measurement, store_url, MeasureReport.of(measurement).document())
    return MeasureReport.of(measurement, stored_id)
