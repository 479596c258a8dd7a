"""Amazon Bedrock model invocation logs: the records Bedrock writes for each Converse,
ConverseStream, InvokeModel and InvokeModelWithResponseStream call once model invocation
logging is on (delivered to CloudWatch Logs, or to S3 as gzip-compressed JSON lines).

One record (``schemaType: ModelInvocationLog``, ``schemaVersion: 1.0``): ``timestamp``,
``accountId``, ``identity.arn``, ``region``, ``requestId``, ``operation``, ``modelId`` (a
model id, an inference profile id such as ``us.anthropic.claude-...``, or an ARN of
either), ``input`` {``inputContentType``, ``inputBodyJson`` (the request body as sent),
``inputTokenCount``, ``cacheReadInputTokenCount``, ``cacheWriteInputTokenCount``} and
``output`` {``outputContentType``, ``outputBodyJson`` (the response body; for a streaming
InvokeModel the list of its decoded chunks), ``outputTokenCount``}; a failed call has
``errorCode`` and no output. Bodies over the inline limit are delivered to S3 instead:
``inputBodyS3Path`` / ``outputBodyS3Path`` (docs/log-formats.md, "Bedrock invocation
logs", gives the sources).

Each record is read as the HTTP exchange it logs (cachecast.logs.http): the request body,
the response body, the model and action in the URL, so the Converse and InvokeModel bodies
(Anthropic, Nova, Titan, ...) are read exactly as recorded traffic is. The log's own counts
stand in for the ``X-Amzn-Bedrock-*-Token-Count`` headers: used where the response body
carries no usage (an S3-delivered output, a model whose body states none). They mean the
same as those headers and as the stream's ``amazon-bedrock-invocationMetrics``: the input
count leaves out cache reads and writes.

Also read: the same records as CloudWatch Logs returns them, ``aws logs filter-log-events``
/ ``get-log-events`` output (``{"events": [{"timestamp", "message": "<the record as JSON
text>"}]}``) and Logs Insights rows (``@message``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import orjson

from cachecast.core.errors import RecordFieldError
from cachecast.logs.canonical import iso_seconds
from cachecast.logs.errors import LogRecordError
from cachecast.logs.http import Exchange, read_exchanges
from cachecast.logs.http.exchange import BadEntry
from cachecast.logs.sanitize import check_nesting, shown
from cachecast.logs.stream import Item, LogStream, documents

SCHEMA_TYPE = "ModelInvocationLog"

# The runtime API's operations and the URL action each is sent to (Bedrock Runtime API
# reference: POST /model/{modelId}/converse, /converse-stream, /invoke,
# /invoke-with-response-stream).
OPERATIONS = {
    "Converse": "converse",
    "ConverseStream": "converse-stream",
    "InvokeModel": "invoke",
    "InvokeModelWithResponseStream": "invoke-with-response-stream",
}

# The log's counts, as the InvokeModel response headers that carry the same counts.
_COUNT_HEADERS = (
    ("input", "inputTokenCount", "x-amzn-bedrock-input-token-count"),
    ("input", "cacheReadInputTokenCount", "x-amzn-bedrock-cache-read-input-token-count"),
    ("input", "cacheWriteInputTokenCount", "x-amzn-bedrock-cache-write-input-token-count"),
    ("output", "outputTokenCount", "x-amzn-bedrock-output-token-count"),
)


def is_record(value: Any) -> bool:
    """A ModelInvocationLog record, or a CloudWatch event / Logs Insights row holding one."""
    if not isinstance(value, dict):
        return False
    if value.get("schemaType") == SCHEMA_TYPE:
        return True
    message = value.get("message", value.get("@message"))
    return isinstance(message, str) and f'"schemaType":"{SCHEMA_TYPE}"' in message.replace(" ", "")


def fits(value: Any) -> bool:
    """A record, a JSON list of them, or a CloudWatch ``{"events": [...]}`` response."""
    if isinstance(value, dict) and isinstance(value.get("events"), list):
        value = value["events"]
    if isinstance(value, list):
        return bool(value) and any(is_record(item) for item in value[:8])
    return is_record(value)


def read(stream: LogStream) -> Iterator[Item]:
    exchanges: list[Exchange | BadEntry] = []
    errors: list[Item] = []
    for line, document in documents(stream):
        if isinstance(document, LogRecordError):
            errors.append((line, document))
            continue
        path, values = "", [document]
        if isinstance(document, dict) and isinstance(document.get("events"), list):
            path, values = "events", document["events"]
        elif isinstance(document, list):
            values = document
        for index, value in enumerate(values):
            at = index + 1 if stream.whole_document else line
            where = f"{path}[{index}]" if path or isinstance(document, list) else ""
            try:
                exchange = _exchange(stream, value, at, where)
            except RecordFieldError as exc:
                exchanges.append(
                    BadEntry(at, f"{where}.{exc.field}" if where else exc.field, exc.reason)
                )
                continue
            if exchange is not None:
                exchanges.append(exchange)
    yield from errors
    yield from read_exchanges(stream, exchanges)


def _unwrapped(value: Any) -> tuple[Any, str]:
    """The record, and the field path its fields are under (a CloudWatch event keeps it as
    JSON text in ``message``)."""
    if isinstance(value, dict) and "schemaType" not in value:
        for key in ("message", "@message"):
            text = value.get(key)
            if isinstance(text, str):
                try:
                    record = orjson.loads(text)
                except orjson.JSONDecodeError as exc:
                    raise RecordFieldError(key, f"not JSON: {exc}") from None
                check_nesting(record)
                return record, key
    return value, ""


def _exchange(stream: LogStream, value: Any, line: int, where: str) -> Exchange | None:
    record, inner = _unwrapped(value)
    prefix = f"{inner}." if inner else ""
    if not isinstance(record, dict) or record.get("schemaType") != SCHEMA_TYPE:
        raise RecordFieldError(
            f"{prefix}schemaType", f"expected a {SCHEMA_TYPE} record, got {shown(record)}"
        )
    if record.get("errorCode") is not None:
        stream.skip(f"failed invocation (errorCode {record.get('errorCode')}): not billed")
        return None
    operation = record.get("operation")
    model_id = record.get("modelId")
    if not isinstance(model_id, str) or not model_id:
        raise RecordFieldError(f"{prefix}modelId", f"expected the model id, got {shown(model_id)}")
    # An ARN (foundation-model/<id>, inference-profile/<id>) names the model after its
    # last slash; an application inference profile's id names no model.
    model_id = model_id.rsplit("/", 1)[-1]
    action = OPERATIONS.get(operation) if isinstance(operation, str) else None
    # Another operation (an embedding through a different API, ApplyGuardrail, ...) is
    # given a URL that is no model endpoint, and counted as such.
    region = record.get("region") if isinstance(record.get("region"), str) else "us-east-1"
    url = f"https://bedrock-runtime.{region}.amazonaws.com/model/{quote(model_id, safe='')}/"
    url += action if action is not None else f"operation/{quote(str(operation), safe='')}"
    given = record.get("input")
    taken = record.get("output")
    if not isinstance(given, dict):
        raise RecordFieldError(f"{prefix}input", f"expected an object, got {shown(given)}")
    output = taken if isinstance(taken, dict) else {}
    body = given.get("inputBodyJson")
    if body is None and given.get("inputBodyS3Path") is not None:
        raise RecordFieldError(
            f"{prefix}input.inputBodyS3Path",
            "the request body was delivered to S3, not into this log: fetch it from "
            f"{shown(given.get('inputBodyS3Path'))} and put it under input.inputBodyJson",
        )
    if not isinstance(body, dict):
        raise RecordFieldError(
            f"{prefix}input.inputBodyJson", f"expected the request body, got {shown(body)}"
        )
    headers: dict[str, str] = {"content-type": "application/json"}
    request_id = record.get("requestId")
    if isinstance(request_id, str) and request_id:
        headers["x-amzn-requestid"] = request_id
    for part, key, header in _COUNT_HEADERS:
        count = (given if part == "input" else output).get(key)
        if count is not None:
            if type(count) is not int or count < 0:
                raise RecordFieldError(
                    f"{prefix}{part}.{key}", f"expected a token count, got {shown(count)}"
                )
            headers[header] = str(count)
    response = output.get("outputBodyJson")
    timestamp = record.get("timestamp")
    return Exchange(
        line=line,
        where=f"{where}.{inner}" if where and inner else where or inner,
        method="POST",
        url=url,
        request_headers={"content-type": "application/json"},
        request_body=body,
        status=200,
        response_headers=headers,
        response_body=response if isinstance(response, dict | list) else None,
        timestamp=None if timestamp is None else iso_seconds(timestamp, f"{prefix}timestamp"),
    )
