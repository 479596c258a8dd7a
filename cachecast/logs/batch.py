"""Batch files: OpenAI Batch input + output, Anthropic Message Batches requests + results.

Both pair a requests file with a results file by ``custom_id``:

* OpenAI Batch: input lines ``{"custom_id", "method", "url", "body"}``; output lines
  ``{"id", "custom_id", "response": {"status_code", "body": {...usage}} | null, "error"}``.
* Anthropic Message Batches: requests ``{"custom_id", "params": {...Messages body}}`` (as
  JSON lines, or the ``{"requests": [...]}`` document sent to the API); results lines
  ``{"custom_id", "result": {"type": "succeeded", "message": {...usage}}}`` or
  ``errored`` / ``canceled`` / ``expired``.

Read together (``results=``), each request carries the usage its result reports; requests
whose result failed, or that have no result, were not billed and are counted in the
stream's ``skipped`` instead of yielded. A requests file alone yields every request (an
estimate of a batch not yet run); a results file alone yields the observed usage with an
unrecorded prompt (``prompt_complete`` false). The results file is loaded first (only its
usage, status and line per ``custom_id``); the requests file is streamed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from cachecast.core.errors import RecordFieldError
from cachecast.logs.canonical import (
    completions_prompt,
    make_record,
    require_dict,
    unrecorded_prompt,
)
from cachecast.logs.errors import LogFileError, LogRecordError
from cachecast.logs.providers import openai_body_provider
from cachecast.logs.stream import Item, LogStream, documents, json_lines
from cachecast.logs.types import ObservedUsage
from cachecast.logs.usage import normalize_usage, to_canonical

OPENAI_BATCH_APIS = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/completions": "prompt",
    # Azure OpenAI's batch input lines name the endpoint without the version (its global
    # batch guide, docs/log-formats.md "Batches"): a line so written is Azure's.
    "/chat/completions": "chat",
}
AZURE_BATCH_URLS = frozenset({"/chat/completions"})


@dataclass(slots=True)
class _Result:
    line: int
    billed: bool
    why: str  # for a result that was not billed
    observed: ObservedUsage | None
    model: str | None
    timestamp: float | None
    request_id: str | None
    used: bool = False
    # The provider the result body shows where it is not OpenAI's (Groq's Batch API writes
    # OpenAI's file format: docs/log-formats.md, "Batches").
    provider: str | None = None


# --- detection ---------------------------------------------------------------------------


def is_openai_input(record: dict[str, Any]) -> bool:
    return "custom_id" in record and "body" in record and ("url" in record or "method" in record)


def is_openai_output(record: dict[str, Any]) -> bool:
    return "custom_id" in record and ("response" in record or "error" in record)


def is_anthropic_request(record: dict[str, Any]) -> bool:
    return "custom_id" in record and "params" in record


def is_anthropic_result(record: dict[str, Any]) -> bool:
    return "custom_id" in record and isinstance(record.get("result"), dict)


def is_anthropic_requests_document(document: Any) -> bool:
    requests = document.get("requests") if isinstance(document, dict) else None
    return (
        isinstance(requests, list)
        and bool(requests)
        and all(isinstance(r, dict) and is_anthropic_request(r) for r in requests[:8])
    )


# --- OpenAI ----------------------------------------------------------------------------------


def _openai_request(stream: LogStream, line: int, record: dict[str, Any]) -> dict[str, Any]:
    url = record.get("url")
    if url is not None and url not in OPENAI_BATCH_APIS:
        raise RecordFieldError("url", f"{url!r} is not a prompt endpoint cachecast reads")
    made = _batch_request(record, "body", "azure" if url in AZURE_BATCH_URLS else "openai")
    if url is not None and OPENAI_BATCH_APIS[url] == "prompt":
        made["request"] = completions_prompt(made["request"], "body")
    return made


def _batch_request(record: dict[str, Any], key: str, provider: str) -> dict[str, Any]:
    """A batch line's request: its body under ``key``, named by its ``custom_id``."""
    custom_id = record.get("custom_id")
    if not isinstance(custom_id, str):
        raise RecordFieldError("custom_id", f"expected a string, got {custom_id!r}")
    body = require_dict(record.get(key), key)
    model = body.get("model")
    return make_record(
        request=body,
        model=model if isinstance(model, str) else None,
        provider=provider,
        request_id=custom_id,
        service_tier="batch",
    )


def _openai_result(stream: LogStream, line: int, record: dict[str, Any], file: str) -> _Result:
    response = record.get("response")
    error = record.get("error")
    if response is None:
        why = "failed in the batch"
        if isinstance(error, dict) and error.get("message"):
            why += f" ({error.get('code')}: {error.get('message')})"
        return _Result(line, False, why, None, None, None, None)
    response = require_dict(response, "response")
    status = response.get("status_code")
    if isinstance(status, int) and not 200 <= status < 300:
        return _Result(line, False, f"HTTP {status} in the batch", None, None, None, None)
    body = require_dict(response.get("body"), "response.body")
    usage = body.get("usage")
    observed = None
    if isinstance(usage, dict) and usage:
        observed = normalize_usage(usage, path="response.body.usage")
    elif usage is not None:
        raise RecordFieldError("response.body.usage", "expected an object")
    created = body.get("created", body.get("created_at"))
    return _Result(
        line,
        True,
        "",
        observed,
        body.get("model") if isinstance(body.get("model"), str) else None,
        float(created)
        if isinstance(created, int | float) and not isinstance(created, bool)
        else None,
        response.get("request_id") if isinstance(response.get("request_id"), str) else None,
        provider=openai_body_provider(body),
    )


# --- Anthropic -------------------------------------------------------------------------------


def _anthropic_request(stream: LogStream, line: int, record: dict[str, Any]) -> dict[str, Any]:
    return _batch_request(record, "params", "anthropic")


def _anthropic_result(stream: LogStream, line: int, record: dict[str, Any], file: str) -> _Result:
    result = require_dict(record.get("result"), "result")
    kind = result.get("type")
    if kind != "succeeded":
        if kind not in ("errored", "canceled", "expired"):
            raise RecordFieldError(
                "result.type", f"expected succeeded/errored/canceled/expired, got {kind!r}"
            )
        return _Result(line, False, f"{kind} in the batch", None, None, None, None)
    message = require_dict(result.get("message"), "result.message")
    usage = message.get("usage")
    observed = None
    if usage is not None:
        observed = normalize_usage(
            require_dict(usage, "result.message.usage"),
            convention="anthropic",
            path="result.message.usage",
        )
    model = message.get("model")
    return _Result(
        line,
        True,
        "",
        observed,
        model if isinstance(model, str) else None,
        None,
        message.get("id") if isinstance(message.get("id"), str) else None,
    )


# --- reading ---------------------------------------------------------------------------------

_RequestParser = Callable[[LogStream, int, dict[str, Any]], dict[str, Any]]
_ResultParser = Callable[[LogStream, int, dict[str, Any], str], _Result]


def _requests(stream: LogStream, path: Path, anthropic: bool) -> Iterator[tuple[int, Any]]:
    if not anthropic:
        yield from json_lines(path, str(path))
        return
    # Anthropic requests may be the API's {"requests": [...]} document or JSON lines.
    for line, document in documents(stream):
        if isinstance(document, dict) and "requests" in document:
            requests = document["requests"]
            if not isinstance(requests, list):
                yield line, stream.error(line, "requests", "expected a list")
                continue
            yield from enumerate(requests, start=1)
        else:
            yield line, document


def _load_results(
    stream: LogStream, path: Path, parse: _ResultParser
) -> tuple[dict[str, _Result], list[LogRecordError]]:
    file = str(path)
    results: dict[str, _Result] = {}
    errors: list[LogRecordError] = []
    for line, record in json_lines(path, file):
        if isinstance(record, LogRecordError):
            errors.append(record)
            continue
        custom_id = record.get("custom_id")
        if not isinstance(custom_id, str):
            errors.append(
                LogRecordError(file, line, "custom_id", f"expected a string, got {custom_id!r}")
            )
            continue
        if custom_id in results:
            errors.append(
                LogRecordError(
                    file,
                    line,
                    "custom_id",
                    f"{custom_id!r} already has a result on line {results[custom_id].line}",
                )
            )
            continue
        try:
            results[custom_id] = parse(stream, line, record, file)
        except RecordFieldError as exc:
            errors.append(LogRecordError(file, line, exc.field, exc.reason))
    return results, errors


def _read(
    stream: LogStream,
    *,
    anthropic: bool,
    parse_request: _RequestParser,
    parse_result: _ResultParser,
) -> Iterator[Item]:
    results: dict[str, _Result] | None = None
    if stream.results is not None:
        results, errors = _load_results(stream, stream.results, parse_result)
        for error in errors:
            yield error.line, error
    matched = 0
    for line, record in _requests(stream, stream.path, anthropic):
        if isinstance(record, LogRecordError):
            yield line, record
            continue
        if not isinstance(record, dict):
            yield line, stream.error(line, "<record>", "expected a JSON object")
            continue
        try:
            built = parse_request(stream, line, record)
        except RecordFieldError as exc:
            yield line, stream.error(line, exc.field, exc.reason)
            continue
        if results is None:
            yield line, built
            continue
        custom_id = built["request_id"]
        result = results.get(custom_id)
        if result is None:
            stream.skip("request without a result in the results file (not billed)")
            continue
        result.used = True
        matched += 1
        if not result.billed:
            stream.skip(f"request {result.why} (not billed)")
            continue
        if result.observed is not None:
            built["observed"] = to_canonical(result.observed)
        if result.timestamp is not None:
            built["timestamp"] = result.timestamp
        if result.provider is not None:
            built["provider"] = result.provider
        if built.get("provider") == "azure" and result.model is not None:
            # An Azure body's ``model`` names the deployment; the response names the model
            # served (as for recorded Azure calls: docs/log-formats.md, "Recorded HTTP").
            built["model"] = result.model
        yield line, built
    if results is not None:
        if results and not matched:
            raise LogFileError(
                str(stream.results), f"shares no custom_id with the requests in {stream.source}"
            )
        unused = sum(1 for result in results.values() if not result.used)
        if unused:
            stream.skip("result without a request in the requests file", unused)


# A recording of the results being downloaded (Anthropic's "Retrieve Message Batch results":
# GET /v1/messages/batches/{id}/results, the same JSON lines a results file holds).
ANTHROPIC_RESULTS_DOWNLOAD = re.compile(r"/v1/messages/batches/[^/?#]+/results/?")


def anthropic_results_lines(stream: LogStream, text: str, line: int, where: str) -> Iterator[Item]:
    """The results of an Anthropic message batch as a recording of their download holds
    them (one JSON line each, at the exchange's ``line``; field paths ``where[i]``): read as
    a results file alone is, each result's usage with an unrecorded prompt of its own."""
    for index, raw in enumerate(text.splitlines()):
        if not raw.strip():
            continue
        field = f"{where}[{index}]"
        try:
            record = orjson.loads(raw)
            if not isinstance(record, dict):
                raise RecordFieldError("", f"expected a JSON object, got {type(record).__name__}")
            custom_id = record.get("custom_id")
            if not isinstance(custom_id, str):
                raise RecordFieldError("custom_id", f"expected a string, got {custom_id!r:.60}")
            result = _anthropic_result(stream, line, record, stream.source)
        except orjson.JSONDecodeError as exc:
            yield line, stream.error(line, field, f"not JSON: {exc}")
            continue
        except RecordFieldError as exc:
            yield line, stream.error(line, f"{field}.{exc.field}".rstrip("."), exc.reason)
            continue
        if not result.billed:
            stream.skip(f"request {result.why} (not billed)")
            continue
        yield (
            line,
            make_record(
                # one stand-in prompt per result: results share their exchange's line
                request=unrecorded_prompt(stream.source, line, f"batch request {custom_id!r}"),
                model=result.model,
                provider="anthropic",
                timestamp=None,  # when the batch ran is not recorded, only the download
                request_id=result.request_id or custom_id,
                observed=result.observed,
                prompt_complete=False,
                service_tier="batch",
            ),
        )


def _read_results_only(
    stream: LogStream, parse_result: _ResultParser, provider: str
) -> Iterator[Item]:
    for line, record in json_lines(stream.path, stream.source):
        if isinstance(record, LogRecordError):
            yield line, record
            continue
        custom_id = record.get("custom_id")
        try:
            if not isinstance(custom_id, str):
                raise RecordFieldError("custom_id", f"expected a string, got {custom_id!r}")
            result = parse_result(stream, line, record, stream.source)
        except RecordFieldError as exc:
            yield line, stream.error(line, exc.field, exc.reason)
            continue
        if not result.billed:
            stream.skip(f"request {result.why} (not billed)")
            continue
        yield (
            line,
            make_record(
                request=unrecorded_prompt(stream.source, line, "batch request"),
                model=result.model,
                provider=result.provider or provider,
                timestamp=result.timestamp,
                request_id=custom_id,
                observed=result.observed,
                prompt_complete=False,
                service_tier="batch",
            ),
        )


def read_openai(stream: LogStream) -> Iterator[Item]:
    return _read(
        stream, anthropic=False, parse_request=_openai_request, parse_result=_openai_result
    )


def read_openai_output(stream: LogStream) -> Iterator[Item]:
    return _read_results_only(stream, _openai_result, "openai")


def read_anthropic(stream: LogStream) -> Iterator[Item]:
    return _read(
        stream, anthropic=True, parse_request=_anthropic_request, parse_result=_anthropic_result
    )


def read_anthropic_results(stream: LogStream) -> Iterator[Item]:
    return _read_results_only(stream, _anthropic_result, "anthropic")
