"""Prefill time fitted from a vLLM backend measurement, to replace the roofline model.

The vLLM backend (``cachecast measure``) stores per-request rows: prompt tokens, the
engine's own cached-token count and the time to first token. Prefill time has the shape of
the FLOPs formula, so it is fitted by least squares as

    ttft(C, S) = fixed + per_token * S + per_pair * pairs(C, S)

with ``pairs(C, S) = ((C+S)(C+S+1) - C(C+1)) / 2`` the causal attention pairs of the new
suffix (see ``timing``). The fit describes the engine, model and device that were measured
(its ``source`` names them, from the measurement's passport); using it for another model or
accelerator would be wrong, and ``compare`` says in ``timing_source`` which was used. TTFT
includes queueing and the first decode step: replay measurements at concurrency 1 fit best.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cachecast.core.errors import BadInputError, Location, NotFoundError
from cachecast.economics.timing import attention_pairs


class MeasurementError(BadInputError):
    """A measurement that cannot be fitted (too few rows, no engine cached counts...)."""

    title = "Unusable measurement"


class UnknownMeasurementError(NotFoundError):
    """No stored measurement has the id asked for."""

    title = "Unknown measurement"


@dataclass(frozen=True, slots=True)
class FittedPrefill:
    """Satisfies ``timing.PrefillMeasurement``."""

    source: str
    fixed_s: float
    per_token_s: float
    per_pair_s: float
    rows: int

    def prefill_seconds(self, cached_tokens: int, new_tokens: int) -> float:
        pairs = attention_pairs(cached_tokens, new_tokens)
        return self.fixed_s + self.per_token_s * new_tokens + self.per_pair_s * pairs

    @classmethod
    def fit(
        cls, rows: Iterable[tuple[int, int, float]], source: str, where: Location | None = None
    ) -> FittedPrefill:
        """Least squares over (cached, new, seconds) rows; coefficients kept >= 0."""
        data = [(c, s, t) for c, s, t in rows]
        if len(data) < 3:
            raise MeasurementError(
                f"{source}: {len(data)} usable rows; at least 3 are needed", location=where
            )
        design = np.array(
            [[1.0, float(s), float(attention_pairs(c, s))] for c, s, _ in data], dtype=np.float64
        )
        seconds = np.array([t for _, _, t in data], dtype=np.float64)
        coefficients = np.linalg.lstsq(design, seconds, rcond=None)[0]
        fixed, per_token, per_pair = (max(0.0, float(value)) for value in coefficients)
        return cls(source, fixed, per_token, per_pair, len(data))


def _count(row: Mapping[str, Any], key: str, where: Location) -> int:
    value = row.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise MeasurementError(f"expected a token count, got {value!r}", location=where)
    return value


def fit_from_report(report: Mapping[str, Any], name: str = "measurement") -> FittedPrefill:
    """Fit from a stored measurement report (``EngineMeasurement.report_json`` parsed);
    ``name`` is what its errors call it."""
    passport = report.get("passport") or {}
    source = (
        f"{passport.get('engine_kind', '?')} vLLM {passport.get('engine_version', '?')},"
        f" model {passport.get('model', '?')} on {passport.get('device', '?')},"
        f" measured {passport.get('measured_at', '?')}"
    )
    rows = []
    for index, row in enumerate(report.get("per_request") or []):
        cached = row.get("measured_cached_tokens")
        if cached is None:
            continue  # only the engine's own hit counts say what was really recomputed
        field = f"per_request[{index}]"
        cached = _count(
            row, "measured_cached_tokens", Location(name, field=f"{field}.measured_cached_tokens")
        )
        prompt = _count(row, "prompt_tokens", Location(name, field=f"{field}.prompt_tokens"))
        ttft = row.get("ttft_s")
        if not isinstance(ttft, (int, float)) or isinstance(ttft, bool) or cached > prompt:
            raise MeasurementError(
                f"expected a time to first token and cached <= prompt tokens, got {row!r}",
                location=Location(name, field=field),
            )
        rows.append((cached, prompt - cached, float(ttft)))
    if not rows:
        raise MeasurementError(
            f"{source}: no request carries the engine's cached-token count",
            location=Location(name, field="per_request"),
        )
    return FittedPrefill.fit(rows, source, Location(name, field="per_request"))
