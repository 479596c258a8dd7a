"""A prompt set replayed on a real vLLM server: measured hit rate and TTFT beside the simulator.

``suggest --validate-on-engine URL`` and ``check --target vllm-engine:URL`` both replay here.
One replay (docs/layouts.md, "On a real engine"):

- every request is sent as it was logged (messages and tools) to ``/v1/chat/completions``, so
  the server applies its own chat template; the prompt ids it reports must equal cachecast's
  tokenization of the request as the served model (or ``model``), else the replay stops: a
  hit measured on other ids says nothing about the prediction;
- one warm-up request under a private cache salt, then the prefix cache is reset (or, where
  the server cannot reset, every request is salted anew), then the requests in order, one at
  a time, generating one token each;
- the engine's cached tokens per request (``usage.prompt_tokens_details.cached_tokens``), its
  time to first token, and the simulator's vLLM policy run with the engine's own block size
  and block count over the same ids.

At one request at a time after a reset, vLLM's prefix cache is a deterministic function of
the token ids and its block pool, which the simulator reproduces (the engine tests check this
request by request), so measured and simulated cached tokens are expected to be equal.

Errors: an engine that cannot be reached or used is :class:`~cachecast.core.errors.UnavailableError`
naming its URL; one whose template or vocabulary gives other ids is
:class:`~cachecast.core.errors.BadInputError` naming the URL, the request and the first differing
token; a prompt too long for it is bad input naming the request.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, SecretStr

from cachecast.core.errors import BadInputError, Location, UnavailableError, UnknownModelError
from cachecast.usecases.measure import MeasureReport, Passport
from cachecast.usecases.reports import DecimalNumber, Report, hit_rate_of
from cachecast.usecases.requests import Request

if TYPE_CHECKING:
    from cachecast.gpu_backend.report import MeasurementReport

WARMUP_REQUESTS = 1  # the first prompt shape once, so the replay's first request is not a JIT


class EngineEndpoint(Request):
    """A vLLM OpenAI-compatible server to replay prompt sets on."""

    url: str = Field(examples=["http://127.0.0.1:8000"])
    api_key: SecretStr | None = Field(default=None, description="sent as a bearer token")
    served_model: str | None = Field(
        default=None, description="the served model to send to (default: the first listed)"
    )


class TtftBrief(Report):
    """Time to first token over some requests: count, median and p95 (nearest-rank,
    seconds)."""

    count: int
    p50_s: float | None
    p95_s: float | None

    @classmethod
    def of(cls, values: Sequence[float]) -> TtftBrief:
        from cachecast.gpu_backend.report import percentile

        return cls(
            count=len(values), p50_s=percentile(values, 0.50), p95_s=percentile(values, 0.95)
        )


class EngineRequestRow(Report):
    request_id: str
    line: int
    prompt_tokens: int
    measured_cached_tokens: int | None = Field(description="None: the server does not report it")
    simulated_cached_tokens: int
    ttft_s: float


class EngineRun(Report):
    """One prompt set replayed on the engine, measured beside the simulator's prediction."""

    label: str
    passport: Passport
    tokenized_as: str = Field(description="the model cachecast tokenized the requests as")
    cache_isolation: Literal["reset", "salt"]
    requests: int
    prompt_tokens: int
    measured_cached_tokens: int
    cached_tokens_source: Literal["per_request", "engine_counters"] = Field(
        description="per_request: the server's usage of each request; engine_counters: its"
        " prefix-cache hit counter (a server without --enable-prompt-tokens-details)"
    )
    simulated_cached_tokens: int = Field(
        description="the simulator's vllm policy with the engine's block size and block count"
    )
    simulator_policy: str
    measured_hit_rate: DecimalNumber
    simulated_hit_rate: DecimalNumber
    mismatched_requests: int | None = Field(
        description="requests whose measured cached tokens differ from the simulated ones"
    )
    ttft: TtftBrief
    ttft_cold: TtftBrief = Field(description="requests that read nothing from the cache")
    ttft_warm: TtftBrief = Field(description="requests that read from the cache")
    counters_agree: bool = Field(
        description="the engine's counters moved by exactly the per-request figures"
    )
    measurement_id: int | None = Field(
        default=None, description="the stored measurement (cachecast compare --measurement-id)"
    )
    per_request: list[EngineRequestRow]

    @classmethod
    def of(
        cls,
        report: MeasurementReport,
        label: str,
        tokenized_as: str,
        measurement_id: int | None,
    ) -> EngineRun:
        simulated = sum(row.predicted_cached_tokens or 0 for row in report.requests)
        per_request = report.measured_cached_tokens
        measured = (
            per_request if per_request is not None else report.metrics_delta.prefix_cache_hits
        )
        mismatches = None if per_request is None else len(report.mismatches)
        isolation: Literal["reset", "salt"] = (
            "reset" if report.cache_isolation == "reset" else "salt"
        )
        return cls(
            label=label,
            passport=Passport.of(report.engine, report.measured_at),
            tokenized_as=tokenized_as,
            cache_isolation=isolation,
            requests=len(report.requests),
            prompt_tokens=report.prompt_tokens,
            measured_cached_tokens=measured,
            cached_tokens_source="per_request" if per_request is not None else "engine_counters",
            simulated_cached_tokens=simulated,
            simulator_policy=report.simulator_policy or "",
            measured_hit_rate=hit_rate_of(measured, report.prompt_tokens),
            simulated_hit_rate=hit_rate_of(simulated, report.prompt_tokens),
            mismatched_requests=mismatches,
            ttft=TtftBrief.of([row.ttft_s for row in report.requests]),
            ttft_cold=TtftBrief.of([r.ttft_s for r in report.requests if r.warm is False]),
            ttft_warm=TtftBrief.of([r.ttft_s for r in report.requests if r.warm is True]),
            counters_agree=report.counters_agree,
            measurement_id=measurement_id,
            per_request=[
                EngineRequestRow.read(row, simulated_cached_tokens=row.predicted_cached_tokens or 0)
                for row in report.requests
            ],
        )


def replay_on_engine(
    endpoint: EngineEndpoint,
    records: Iterable[dict[str, Any]],
    label: str,
    *,
    model: str | None,
    store_url: str | None = None,
    field: str = "validate_on_engine",
) -> EngineRun:
    """Replay ``records`` (chat requests, in order) on the engine at ``endpoint``; see the
    module docstring. The records are read as they are sent, never held together: records
    that can be read again (a list, or an iterable that reads its log anew each time) are
    first read once to check every request against the engine before any is sent; an
    iterator is read once, each request checked before it is sent. ``model``: tokenize as
    this model (default: the served model's name). ``store_url``: store the measurement
    and its passport in this database. ``field`` names the option or field that gave the
    engine, in errors."""
    from cachecast.gpu_backend.chat_replay import measure_chat_records
    from cachecast.gpu_backend.http_backend import HttpBackend
    from cachecast.gpu_backend.passport import store_report
    from cachecast.gpu_backend.replay import mapped
    from cachecast.gpu_backend.types import EngineError, PromptMismatchError, ReplayOptions

    url = endpoint.url.rstrip("/")
    api_key = endpoint.api_key.get_secret_value() if endpoint.api_key is not None else None
    backend = HttpBackend(url, model=endpoint.served_model, api_key=api_key, prompt_mode="chat")
    try:
        served = backend.served_model()
        tokenize_as = model or served
        _check_tokenizer(tokenize_as, url, served, given=model is not None)
        report = measure_chat_records(
            # Copies, one record at a time: nothing the replay does may reach the caller's.
            mapped(records, copy.deepcopy),
            backend,
            model=tokenize_as,
            options=ReplayOptions(warmup_requests=WARMUP_REQUESTS),
            source=label,
        )
    except PromptMismatchError as error:
        engine = "(end of prompt)" if error.engine_token is None else str(error.engine_token)
        ours = "(end of prompt)" if error.our_token is None else str(error.our_token)
        raise BadInputError(
            f"the engine at {url} tokenizes this request differently from cachecast's"
            f" tokenization as {tokenize_as!r}: the first differing token is at"
            f" position {error.position} (engine {engine}, cachecast {ours}); measured hits"
            " would not be comparable with the simulator's. Give the model the engine serves"
            " (--model) or serve one with the same tokenizer and chat template",
            location=Location(source=label, record=error.line - 1, field="messages"),
        ) from None
    except EngineError as error:
        raise UnavailableError(f"{url}: {error}", location=Location(field=field)) from None
    measurement_id = (
        store_report(report, store_url, MeasureReport.of(report).document())
        if store_url is not None
        else None
    )
    return EngineRun.of(report, label, tokenize_as, measurement_id)


def _check_tokenizer(model: str, url: str, served: str, *, given: bool) -> None:
    from cachecast.tokenizers import get_tokenizer

    try:
        get_tokenizer(model)
    except UnknownModelError:
        if given:
            raise  # the registry's own error, at the field "model"
        raise UnknownModelError(
            f"the engine at {url} serves {served!r}, a name cachecast knows no tokenizer for:"
            " give the model to tokenize as (--model; e.g. qwen2.5-7b-instruct for a Qwen2.5)",
            location=Location(field="model"),
        ) from None
