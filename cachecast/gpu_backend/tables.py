"""Tables of ``cachecast.gpu_backend`` (created only by migrations: 0004_engine_measurements,
0007_engine_measurement_dtype)."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Field, SQLModel


class EngineMeasurement(SQLModel, table=True):
    """One replay measured on a real engine: the engine's "inference passport" and figures.

    Timings and rates are floats (measurements, not money); token counts are exact integers.
    ``report_json`` keeps the whole report, per-request rows included.
    """

    __tablename__ = "engine_measurements"

    id: int | None = Field(default=None, primary_key=True)
    measured_at: datetime = Field(sa_type=sa.DateTime(timezone=True), index=True)
    engine_kind: str = Field(max_length=16)
    engine_version: str = Field(max_length=64)
    model: str = Field(max_length=500)
    device: str = Field(max_length=200)
    block_size: int
    num_blocks: int
    dtype: str | None = Field(default=None, max_length=32)  # None: the engine did not say
    kv_cache_dtype: str | None = Field(default=None, max_length=32)
    endpoint: str | None = Field(default=None, max_length=500)
    source: str = Field(max_length=1000)
    requests: int
    prompt_tokens: int
    output_tokens: int
    measured_cached_tokens: int | None = None
    predicted_cached_tokens: int | None = None
    exact_match_share: float | None = None
    hit_rate: float
    ttft_cold_p50_s: float | None = None
    ttft_cold_p90_s: float | None = None
    ttft_cold_p99_s: float | None = None
    ttft_warm_p50_s: float | None = None
    ttft_warm_p90_s: float | None = None
    ttft_warm_p99_s: float | None = None
    input_tokens_per_s: float
    output_tokens_per_s: float
    report_json: str = Field(sa_type=sa.Text())
