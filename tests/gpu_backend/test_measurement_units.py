"""Pieces of the engine measurement that need no engine: the Prometheus reader, the token
log reader, block-key synthesis, percentiles and the report's arithmetic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cachecast.gpu_backend.chat_replay import chat_payload
from cachecast.gpu_backend.http_backend import check_same_prompt
from cachecast.gpu_backend.metrics import (
    cache_geometry,
    parse_prometheus_text,
    snapshot_from_samples,
)
from cachecast.gpu_backend.replay import (
    LogFormatError,
    LogSurvey,
    ReplayBuilder,
    Rereadable,
    can_reread,
    load_log,
    log_requests,
    mapped,
    survey_log,
    synthesize_tokens,
    to_replay_requests,
    with_token_ids,
)
from cachecast.gpu_backend.report import MeasurementReport, RequestComparison, percentile
from cachecast.gpu_backend.types import (
    EngineError,
    EngineInfo,
    MetricsSnapshot,
    ReplayOptions,
    ReplayRequest,
)
from cachecast.tokenizers.types import TokenizedRequest
from cachecast.usecases.measure import MeasureReport

# Two engines (data parallel) in vLLM's exposition format; values chosen by hand.
EXPOSITION = """\
# HELP vllm:prefix_cache_queries_total Prefix cache queries.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 300.0
vllm:prefix_cache_queries_total{engine="1",model_name="m"} 48.0
# HELP vllm:prefix_cache_hits_total Prefix cache hits.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 160.0
vllm:prefix_cache_hits_total{engine="1",model_name="m"} 32.0
# HELP vllm:time_to_first_token_seconds TTFT.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.01",model_name="m"} 1.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 3.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 4.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 0.5
vllm:time_to_first_token_seconds_bucket{engine="1",le="0.01",model_name="m"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="1",le="0.1",model_name="m"} 1.0
vllm:time_to_first_token_seconds_bucket{engine="1",le="+Inf",model_name="m"} 1.0
vllm:time_to_first_token_seconds_count{engine="1",model_name="m"} 1.0
vllm:time_to_first_token_seconds_sum{engine="1",model_name="m"} 0.25
# HELP vllm:cache_config_info Cache config.
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="32",engine="0",num_gpu_blocks="512"} 1.0
"""


def test_metrics_are_summed_over_engines() -> None:
    samples = parse_prometheus_text(EXPOSITION)
    snapshot = snapshot_from_samples(samples, "test")
    assert snapshot.prefix_cache_queries == 348  # 300 + 48
    assert snapshot.prefix_cache_hits == 192  # 160 + 32
    assert snapshot.ttft_count == 5  # 4 + 1
    assert snapshot.ttft_sum_s == pytest.approx(0.75)
    assert snapshot.ttft_buckets == ((0.01, 1), (0.1, 4), (float("inf"), 5))
    assert cache_geometry(samples, "test") == (32, 512)


def test_metrics_delta_subtracts_every_counter() -> None:
    before = MetricsSnapshot(100, 40, 2, 0.5, ((0.1, 1), (float("inf"), 2)))
    after = MetricsSnapshot(348, 192, 5, 0.75, ((0.1, 4), (float("inf"), 5)))
    delta = after.minus(before)
    assert (delta.prefix_cache_queries, delta.prefix_cache_hits, delta.ttft_count) == (248, 152, 3)
    assert delta.ttft_sum_s == pytest.approx(0.25)
    assert delta.ttft_buckets == ((0.1, 3), (float("inf"), 3))


def test_missing_metrics_are_named() -> None:
    text = EXPOSITION.replace("prefix_cache_hits", "something_else")
    with pytest.raises(EngineError, match="vllm:prefix_cache_hits"):
        snapshot_from_samples(parse_prometheus_text(text), "http://x/metrics")
    with pytest.raises(EngineError, match="cache_config_info not found"):
        cache_geometry(parse_prometheus_text(EXPOSITION.split("# HELP vllm:cache")[0]), "x")


def test_token_log_is_read(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    records = [
        {"tokens": [5, 6, 7], "id": "a", "timestamp": 10.0, "scope": "org-1"},
        {"tokens": [5, 6, 8], "timestamp": 12.5, "scope": "org-2", "output_tokens": 4},
    ]
    log.write_text("\n".join(json.dumps(record) for record in records) + "\n\n")
    requests = load_log(log)
    assert [r.request_id for r in requests] == ["a", "line-2"]
    assert [r.input_tokens for r in requests] == [3, 3]
    assert requests[1].output_tokens == 4
    replay = to_replay_requests(requests)
    assert [r.arrival_s for r in replay] == [0.0, 2.5]
    # Two scopes: each gets its own cache salt, so they cannot share blocks.
    assert replay[0].cache_salt != replay[1].cache_salt


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"tokens": []}', "tokens"),
        ('{"tokens": [1, "x"]}', "tokens[1]"),
        ('{"tokens": [1, -2]}', "tokens[1]"),
        ('{"tokens": [1], "timestamp": "noon"}', "timestamp"),
        ('{"tokens": [1], "scope": 3}', "scope"),
        ("{not json", "(line)"),
    ],
)
def test_bad_token_records_name_file_line_and_field(tmp_path: Path, line: str, field: str) -> None:
    log = tmp_path / "bad.jsonl"
    log.write_text('{"tokens": [1, 2]}\n' + line + "\n")
    with pytest.raises(LogFormatError) as raised:
        load_log(log)
    assert raised.value.line == 2
    assert raised.value.field == field
    assert str(log) in str(raised.value)


def test_the_log_is_streamed_and_limit_stops_the_reading(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"tokens": [1, 2]}\n{"tokens": [3]}\n{"tokens": "bad"}\n')
    stream = log_requests(log, limit=2)
    assert not can_reread(stream)  # one pass, read as it is iterated
    # The bad third line is never reached: the first two are all that is read.
    assert [r.tokens for r in stream] == [(1, 2), (3,)]
    with pytest.raises(LogFormatError) as raised:
        list(log_requests(log))
    assert (raised.value.line, raised.value.field) == (3, "tokens")
    again = Rereadable(lambda: log_requests(log, limit=2))
    assert can_reread(again) and can_reread(mapped(again, lambda r: r.line))
    assert list(mapped(again, lambda r: r.line)) == [1, 2] == list(mapped(again, lambda r: r.line))
    survey = survey_log(again)
    assert (survey.requests, survey.longest_prompt, survey.largest_token_id) == (2, 2, 3)


def test_a_survey_says_whether_every_prompt_fits_the_engine() -> None:
    survey = LogSurvey(requests=3, longest_prompt=100, smallest_token_id=0, largest_token_id=99)
    fits = EngineInfo("offline", "0", "m", "cpu", 32, 10, max_model_len=101, vocab_size=100)
    assert survey.fits(fits)
    # 100 tokens leave no room for a generated one under max_model_len 100; id 99 is
    # outside a vocabulary of 99 ids.
    assert not survey.fits(EngineInfo("offline", "0", "m", "cpu", 32, 10, max_model_len=100))
    assert not survey.fits(EngineInfo("offline", "0", "m", "cpu", 32, 10, vocab_size=99))
    assert survey.fits(EngineInfo("http", "0", "m", "cpu", 32, 10))  # nothing to check


def test_namespaces_after_the_first_are_salted_as_they_come() -> None:
    def scoped(scope: str, line: int) -> TokenizedRequest:
        return TokenizedRequest(
            source="s", line=line, request_id=f"r{line}", timestamp=10.0 + line, scope=scope,
            provider=None, model="m", input_tokens=2, output_tokens=1, tokens=(5, 6),
        )  # fmt: skip

    builder = ReplayBuilder()
    built = [builder.build(scoped(scope, line)) for line, scope in enumerate("aba", start=1)]
    salts = [request.cache_salt for request in built]
    # The first namespace unsalted, the second under its own salt, the first again unsalted.
    assert salts == [None, "m\x1fb", None]
    assert [request.arrival_s for request in built] == [0.0, 1.0, 2.0]


def _trace_request(keys: list[int], length: int, line: int) -> TokenizedRequest:
    return TokenizedRequest(
        source="trace",
        line=line,
        request_id=f"t{line}",
        timestamp=float(line),
        scope="",
        provider=None,
        model=None,
        input_tokens=length,
        output_tokens=1,
        block_keys=tuple(keys),
        block_size=4,
    )


def test_block_key_traces_become_token_ids_with_the_same_sharing() -> None:
    first = synthesize_tokens(_trace_request([7, 8, 9], 10, 1))
    second = synthesize_tokens(_trace_request([7, 8, 5], 12, 2))
    assert len(first) == 10 and len(second) == 12
    assert first[:8] == second[:8]  # keys 7, 8 shared: two equal 4-token blocks
    assert first[8:10] != second[8:10]  # keys 9 and 5 differ
    ready = with_token_ids([_trace_request([7, 8, 9], 10, 1)])
    assert ready[0].tokens == first and ready[0].block_keys is None
    with pytest.raises(EngineError, match="cover fewer"):
        synthesize_tokens(_trace_request([7], 5, 3))


def test_nearest_rank_percentiles() -> None:
    values = [0.4, 0.1, 0.3, 0.2]
    # sorted 0.1 0.2 0.3 0.4: rank ceil(0.5*4)=2 -> 0.2; ceil(0.9*4)=4 -> 0.4
    assert percentile(values, 0.5) == 0.2
    assert percentile(values, 0.9) == 0.4
    assert percentile(values, 0.99) == 0.4
    assert percentile([], 0.5) is None


def test_report_arithmetic() -> None:
    info = EngineInfo("offline", "0.0.0", "m", "cpu", 32, 10)
    rows = [
        RequestComparison("a", 1, 100, 0, 0, 1, 0.30, 0.31),
        RequestComparison("b", 2, 100, 96, 96, 1, 0.05, 0.06),
        RequestComparison("c", 3, 50, 32, 0, 1, 0.04, 0.05),
    ]
    report = MeasurementReport(
        engine=info,
        source="s",
        options=ReplayOptions(),
        cache_isolation="reset",
        requests=rows,
        metrics_delta=MetricsSnapshot(250, 128, 3, 0.39),
        wall_s=0.5,
    )
    assert report.measured_cached_tokens == 128
    assert report.predicted_cached_tokens == 96
    assert report.exact_match_share == pytest.approx(2 / 3)  # c mismatches
    assert report.hit_rate == pytest.approx(128 / 250)
    assert report.ttft(warm=True)["count"] == 2  # b and c hit (measured)
    assert report.ttft(warm=False)["p50_s"] == 0.30
    # all three TTFTs sorted 0.04 0.05 0.30: p50 rank ceil(1.5)=2 -> 0.05, p95 rank 3 -> 0.30
    assert (report.ttft()["p50_s"], report.ttft()["p95_s"]) == (0.05, 0.30)
    assert report.input_tokens_per_s == pytest.approx(500.0)  # 250 tokens in 0.5 s
    assert report.counters_agree
    assert [r.request_id for r in report.mismatches] == ["c"]
    document = MeasureReport.of(report).model_dump(mode="json")
    assert document["ttft"]["count"] == 3 and document["ttft_warm"]["p95_s"] == 0.05
    assert document["passport"]["block_size"] == 32
    assert document["per_request"][2]["predicted_cached_tokens"] == 0


def test_engine_measurements_migration_goes_down_and_up(migrated_db_url: str) -> None:
    from sqlalchemy import inspect

    from cachecast.core import db

    def tables() -> set[str]:
        engine = db.get_engine(migrated_db_url)
        engine.dispose()  # fresh connections see the migrated schema
        return set(inspect(engine).get_table_names())

    assert "engine_measurements" in tables()
    db.downgrade(migrated_db_url, "0003_service_jobs")
    assert "engine_measurements" not in tables()
    assert "service_jobs" in tables()  # the revision below is untouched
    db.upgrade(migrated_db_url)
    assert "engine_measurements" in tables()
    assert db.current_revision(migrated_db_url) == db.head_revision()


def test_chat_mode_refuses_a_server_prompt_that_differs() -> None:
    request = ReplayRequest("r-7", 7, (5, 6, 7, 8), chat={"messages": []})
    check_same_prompt(request, [5, 6, 7, 8])  # equal: accepted
    with pytest.raises(EngineError, match=r"4 against 4 tokens.*at token 2 \(server 9, ca"):
        check_same_prompt(request, [5, 6, 9, 8])
    with pytest.raises(EngineError, match=r"3 against 4 tokens.*at token 3 \(server \(end\)"):
        check_same_prompt(request, [5, 6, 7])
    with pytest.raises(EngineError, match="did not report"):
        check_same_prompt(request, None)


def test_chat_payload_keeps_messages_and_tools_and_refuses_template_fields() -> None:
    record = {
        "model": "m",
        "request": {
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "f"}}],
            "temperature": 1,
        },
    }
    assert chat_payload(record, "log.jsonl", 3) == {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "f"}}],
    }
    with pytest.raises(LogFormatError) as raised:
        chat_payload({"messages": [], "chat_template_kwargs": {}}, "log.jsonl", 4)
    assert (raised.value.line, raised.value.field) == (4, "chat_template_kwargs")
    with pytest.raises(LogFormatError) as raised:
        chat_payload({"prompt": "x"}, "log.jsonl", 5)
    assert (raised.value.line, raised.value.field) == (5, "messages")
