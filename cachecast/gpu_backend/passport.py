"""Storing and listing measurement reports (the engines' inference passports)."""

from __future__ import annotations

from typing import Any

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
    engine = report.engine
    ttft = {
        f"ttft_{side}_{name}": _float(value)
        for side, warm in (("cold", False), ("warm", True))
        for name, value in report.ttft(warm=warm).items()
        if f"ttft_{side}_{name}" in EngineMeasurement.model_fields
    }
    # The row's columns are the engine's and the report's attributes of the same names.
    row = EngineMeasurement(
        **{
            **_columns_of(engine),
            **_columns_of(report),
            **ttft,
            "engine_kind": engine.kind,
            "requests": len(report.requests),
            "report_json": document,
        }
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


def _columns_of(source: object) -> dict[str, Any]:
    """``source``'s attributes that are columns of the passport table, by name."""
    return {
        name: getattr(source, name)
        for name in EngineMeasurement.model_fields
        if hasattr(source, name)
    }


def _float(value: float | int | None) -> float | None:
    return None if value is None else float(value)
