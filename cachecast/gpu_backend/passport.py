"""Storing and listing measurement reports (the engines' inference passports)."""

from __future__ import annotations

from sqlalchemy.engine import make_url
from sqlmodel import Session, col, select

from cachecast.core.db import get_engine, is_current
from cachecast.core.errors import NotMigratedError
from cachecast.gpu_backend.report import MeasurementReport
from cachecast.gpu_backend.tables import EngineMeasurement


def _require_current(url: str) -> None:
    if not is_current(url):
        shown = make_url(url).render_as_string(hide_password=True)
        raise NotMigratedError(
            f"database {shown} is not migrated to the newest revision: run `cachecast db upgrade`"
        )


def store_report(report: MeasurementReport, url: str, document: str) -> int:
    """Insert one passport row for ``report`` with ``document`` (the report's JSON, as the
    measure use case writes it); returns the row's id (also set on the report)."""
    _require_current(url)
    cold = report.ttft(warm=False)
    warm = report.ttft(warm=True)
    engine = report.engine
    row = EngineMeasurement(
        measured_at=report.measured_at,
        engine_kind=engine.kind,
        engine_version=engine.engine_version,
        model=engine.model,
        device=engine.device,
        block_size=engine.block_size,
        num_blocks=engine.num_blocks,
        dtype=engine.dtype,
        kv_cache_dtype=engine.kv_cache_dtype,
        endpoint=engine.endpoint,
        source=report.source,
        requests=len(report.requests),
        prompt_tokens=report.prompt_tokens,
        output_tokens=report.output_tokens,
        measured_cached_tokens=report.measured_cached_tokens,
        predicted_cached_tokens=report.predicted_cached_tokens,
        exact_match_share=report.exact_match_share,
        hit_rate=report.hit_rate,
        ttft_cold_p50_s=_float(cold["p50_s"]),
        ttft_cold_p90_s=_float(cold["p90_s"]),
        ttft_cold_p99_s=_float(cold["p99_s"]),
        ttft_warm_p50_s=_float(warm["p50_s"]),
        ttft_warm_p90_s=_float(warm["p90_s"]),
        ttft_warm_p99_s=_float(warm["p99_s"]),
        input_tokens_per_s=report.input_tokens_per_s,
        output_tokens_per_s=report.output_tokens_per_s,
        report_json=document,
    )
    with Session(get_engine(url)) as session:
        session.add(row)
        session.commit()
        session.refresh(row)
        assert row.id is not None
        report.stored_id = row.id
        return row.id


def list_measurements(url: str, limit: int = 20) -> list[EngineMeasurement]:
    """The newest passports first."""
    _require_current(url)
    with Session(get_engine(url)) as session:
        statement = (
            select(EngineMeasurement)
            .order_by(col(EngineMeasurement.measured_at).desc())
            .limit(limit)
        )
        return list(session.exec(statement))


def _float(value: float | int | None) -> float | None:
    return None if value is None else float(value)
