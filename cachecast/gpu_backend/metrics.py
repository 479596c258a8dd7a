"""Reading vLLM's Prometheus metrics, from a server's /metrics text or an in-process engine.

Only the names vLLM documents are read: the prefix-cache query and hit counters, the
time-to-first-token histogram and the ``cache_config_info`` gauge whose labels carry the
cache geometry. Values are summed over label sets, so a data-parallel server's engines add up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from cachecast.gpu_backend.types import EngineError, MetricsSnapshot

QUERIES = "vllm:prefix_cache_queries"
HITS = "vllm:prefix_cache_hits"
TTFT = "vllm:time_to_first_token_seconds"
CACHE_CONFIG_INFO = "vllm:cache_config_info"


@dataclass(frozen=True, slots=True)
class MetricSample:
    """One Prometheus sample, name without the ``_total`` suffix of counters."""

    name: str
    labels: Mapping[str, str]
    value: float


def parse_prometheus_text(text: str) -> list[MetricSample]:
    """Every sample of an exposition text; counters keep their family name (no ``_total``)."""
    samples: list[MetricSample] = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = sample.name
            if family.type == "counter" and name == f"{family.name}_total":
                name = family.name
            samples.append(MetricSample(name, dict(sample.labels), float(sample.value)))
    return samples


def _sum(samples: Iterable[MetricSample], name: str) -> float | None:
    values = [sample.value for sample in samples if sample.name == name]
    return sum(values) if values else None


def snapshot_from_samples(samples: list[MetricSample], source: str) -> MetricsSnapshot:
    """The counters a measurement needs; a missing one is an error naming it and ``source``."""
    queries = _sum(samples, QUERIES)
    hits = _sum(samples, HITS)
    ttft_count = _sum(samples, f"{TTFT}_count")
    ttft_sum = _sum(samples, f"{TTFT}_sum")
    missing = [
        name
        for name, value in (
            (QUERIES, queries),
            (HITS, hits),
            (f"{TTFT}_count", ttft_count),
            (f"{TTFT}_sum", ttft_sum),
        )
        if value is None
    ]
    if missing:
        raise EngineError(
            f"{source}: metrics {', '.join(missing)} not found"
            " (is the engine started with stats logging on, i.e. without --disable-log-stats?)"
        )
    buckets: dict[float, int] = {}
    for sample in samples:
        if sample.name == f"{TTFT}_bucket":
            bound = float(sample.labels["le"])
            buckets[bound] = buckets.get(bound, 0) + round(sample.value)
    assert queries is not None and hits is not None
    assert ttft_count is not None and ttft_sum is not None
    return MetricsSnapshot(
        prefix_cache_queries=round(queries),
        prefix_cache_hits=round(hits),
        ttft_count=round(ttft_count),
        ttft_sum_s=ttft_sum,
        ttft_buckets=tuple(sorted(buckets.items())),
    )


def cache_geometry(samples: list[MetricSample], source: str) -> tuple[int, int]:
    """(block_size, num_gpu_blocks) from the labels of ``vllm:cache_config_info``."""
    for sample in samples:
        if sample.name == CACHE_CONFIG_INFO:
            labels = sample.labels
            try:
                return int(labels["block_size"]), int(labels["num_gpu_blocks"])
            except (KeyError, ValueError) as error:
                raise EngineError(
                    f"{source}: {CACHE_CONFIG_INFO} has no usable block_size/num_gpu_blocks"
                    f" labels ({error!r}): {dict(labels)}"
                ) from error
    raise EngineError(f"{source}: metric {CACHE_CONFIG_INFO} not found")


def cache_label(samples: list[MetricSample], name: str) -> str | None:
    """One label of ``vllm:cache_config_info`` (e.g. ``cache_dtype``), None where absent."""
    for sample in samples:
        if sample.name == CACHE_CONFIG_INFO and name in sample.labels:
            return sample.labels[name]
    return None


def samples_from_engine_metrics(metrics: Iterable[object]) -> list[MetricSample]:
    """Samples from ``vllm.LLM.get_metrics()`` objects (Counter, Gauge, Histogram, Vector).

    The in-process objects mirror the server's exposition: a histogram gives ``_count``,
    ``_sum`` and cumulative ``_bucket`` samples, so both modes share one reader.
    """
    samples: list[MetricSample] = []
    for metric in metrics:
        name: str = getattr(metric, "name", "")
        labels: dict[str, str] = dict(getattr(metric, "labels", {}) or {})
        kind = type(metric).__name__
        if kind == "Histogram":
            samples.append(
                MetricSample(f"{name}_count", labels, float(getattr(metric, "count", 0)))
            )
            samples.append(MetricSample(f"{name}_sum", labels, float(getattr(metric, "sum", 0.0))))
            # vLLM copies Prometheus' cumulative bucket samples, keyed by the upper bound.
            cumulative: Mapping[str, int] = getattr(metric, "buckets", {}) or {}
            for bound, count in cumulative.items():
                samples.append(
                    MetricSample(f"{name}_bucket", {**labels, "le": bound}, float(count))
                )
        elif kind in ("Counter", "Gauge"):
            samples.append(MetricSample(name, labels, float(getattr(metric, "value", 0))))
    return samples
