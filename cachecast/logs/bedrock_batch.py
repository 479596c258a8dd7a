"""Amazon Bedrock batch inference files (docs/log-formats.md, "Batches", gives the sources).

A batch inference job reads JSON lines ``{"recordId", "modelInput": {...}}`` (the
InvokeModel request body of the job's model, or a Converse request body for a Converse
job) and writes, for each input file, an output file (``<input>.jsonl.out``) of
``{"recordId", "modelInput", "modelOutput": {...the response body...}}``; a record that
failed has ``error`` {``errorCode``, ``errorMessage``} in place of ``modelOutput``. A
``manifest.json.out`` beside the outputs gives the job's totals (``totalRecordCount``,
``processedRecordCount``, ``successRecordCount``, ``errorRecordCount``,
``inputTokenCount``, ``outputTokenCount``).

Each output record is one request, read as the InvokeModel (or Converse) exchange it was:
the request body and response body through the readers recorded Bedrock traffic goes
through (``cachecast.logs.http``: Anthropic on Bedrock, Nova, Titan, Llama, ...). The
model is not in the records (it is a parameter of the job): the records name none, and the
log's ``--model`` (the job's ``modelId``) stands in; without it each request is refused,
naming the option. The ``model`` an Anthropic response body carries is Anthropic's API name,
not the Bedrock model id prices are keyed by (``claude-3-5-sonnet-20241022`` is
``anthropic.claude-3-5-sonnet-20241022-v2:0``), so it is not taken for one.

An output file alone holds the prompts and the usage; an input file alone is every request
of a batch not yet run. Given together (``results=``) the output's records are read, the
input's records without an output counted as not billed. Where the output file's folder
holds a ``manifest.json.out`` and no other output file, its totals are compared with the
records read; a difference is reported as an error naming the manifest and the field.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from cachecast.core.errors import RecordFieldError
from cachecast.logs.errors import LogFileError, LogRecordError
from cachecast.logs.http import Exchange, read_exchanges
from cachecast.logs.sanitize import shown
from cachecast.logs.stream import Item, LogStream, json_lines

MANIFEST = "manifest.json.out"
OUTPUT_SUFFIX = ".jsonl.out"
# The manifest's totals compared with the records read (the counts of records, then the
# tokens the responses report).
MANIFEST_COUNTS = ("successRecordCount", "errorRecordCount", "inputTokenCount", "outputTokenCount")
# The URL an exchange is read under: the records name no model, this stands in for it in
# the URL and is taken out of the record again (it is never priced).
_NO_MODEL = "bedrock-batch-job-model"


def is_input(record: dict[str, Any]) -> bool:
    return isinstance(record.get("modelInput"), dict) and not is_output(record)


def is_output(record: dict[str, Any]) -> bool:
    return isinstance(record.get("modelInput"), dict) and (
        "modelOutput" in record or "error" in record
    )


def _action(response: Any) -> str:
    """A Converse job's response (the Converse response: ``output.message``, ``usage`` and
    ``metrics``) is read as Converse; any other as InvokeModel, whose bodies are read by
    their shape (Nova's InvokeModel response has ``output`` and ``usage`` but no
    ``metrics``; a request alone reads the same either way)."""
    if isinstance(response, dict) and isinstance(response.get("metrics"), dict):
        return "converse"
    return "invoke"


def _record_id(record: dict[str, Any], line: int, stream: LogStream) -> str:
    record_id = record.get("recordId")
    if record_id is None:
        return f"{Path(stream.source).name}:{line}"
    if not isinstance(record_id, str) or not record_id:
        raise RecordFieldError("recordId", f"expected a string, got {shown(record_id)}")
    return record_id


def _exchange(
    stream: LogStream, line: int, record: dict[str, Any], *, with_output: bool
) -> Exchange | None:
    """The exchange a record was (None for a record that failed: counted as not billed)."""
    body = record.get("modelInput")
    if not isinstance(body, dict):
        raise RecordFieldError("modelInput", f"expected the request body, got {shown(body)}")
    response: Any = None
    if with_output:
        error = record.get("error")
        if record.get("modelOutput") is None:
            why = "failed in the batch"
            if isinstance(error, dict):
                why += f" ({error.get('errorCode')}: {str(error.get('errorMessage'))[:80]})"
            stream.skip(f"request {why} (not billed)")
            return None
        response = record["modelOutput"]
        if not isinstance(response, dict):
            raise RecordFieldError(
                "modelOutput", f"expected the response body, got {shown(response)}"
            )
    action = _action(response)
    return Exchange(
        line=line,
        where="",
        method="POST",
        url=f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{_NO_MODEL}/{action}",
        request_headers={"content-type": "application/json"},
        request_body=body,
        status=200,
        response_headers={"content-type": "application/json"},
        response_body=response,
    )


def _records(
    stream: LogStream, path: Path, source: str, *, with_output: bool, sums: Counter[str] | None
) -> Iterator[tuple[int, str, dict[str, Any] | LogRecordError | None]]:
    """(line, recordId, the canonical record or its error) for each record of ``path``;
    None for a record that failed in the batch (counted in ``skipped``)."""
    for line, record in json_lines(path, source):
        if isinstance(record, LogRecordError):
            yield line, "", record
            continue
        try:
            record_id = _record_id(record, line, stream)
            exchange = _exchange(stream, line, record, with_output=with_output)
        except RecordFieldError as exc:
            yield line, "", LogRecordError(source, line, exc.field, exc.reason)
            continue
        if exchange is None:  # failed in the batch: counted, not billed
            if sums is not None:
                sums["errorRecordCount"] += 1
            yield line, record_id, None
            continue
        for at, built in read_exchanges(stream, [exchange]):
            if isinstance(built, dict):
                # The job's model is named by no record: --model stands in (module doc).
                built.pop("model", None)
                built.pop("provider", None)
                built["request_id"] = record_id
                built["service_tier"] = "batch"  # billed on demand, noted (docs/log-formats.md)
                if sums is not None:
                    sums["successRecordCount"] += 1
                    observed = built.get("observed") or {}
                    sums["inputTokenCount"] += observed.get("input_tokens") or 0
                    sums["outputTokenCount"] += observed.get("output_tokens") or 0
            elif built.file != source:  # the output file of a pair: named as such
                built = LogRecordError(source, built.line, built.field, built.reason)
            yield at, record_id, built


def _manifest(path: Path) -> Path | None:
    """The job's manifest beside ``path`` where it covers this output file alone."""
    manifest = path.parent / MANIFEST
    if not manifest.is_file():
        return None
    outputs = [p for p in path.parent.iterdir() if p.name.endswith(OUTPUT_SUFFIX)]
    return manifest if len(outputs) <= 1 else None


def _compare(manifest: Path, sums: Counter[str]) -> Iterator[Item]:
    """The manifest's totals that differ from the records' sums, as errors at the manifest."""
    name = str(manifest)
    try:
        totals = orjson.loads(manifest.read_bytes()[: 1 << 20])
    except (OSError, orjson.JSONDecodeError) as exc:
        yield 1, LogRecordError(name, 1, "<manifest>", f"not readable as JSON: {exc}")
        return
    if not isinstance(totals, dict):
        yield 1, LogRecordError(name, 1, "<manifest>", f"expected an object, got {shown(totals)}")
        return
    for key in MANIFEST_COUNTS:
        stated = totals.get(key)
        if stated is None:
            continue
        if type(stated) is not int:
            yield 1, LogRecordError(name, 1, key, f"expected a count, got {shown(stated)}")
        elif stated != sums[key]:
            yield (
                1,
                LogRecordError(
                    name,
                    1,
                    key,
                    f"the manifest states {stated}, the records of the output file add up"
                    f" to {sums[key]}",
                ),
            )


def read_output(stream: LogStream) -> Iterator[Item]:
    """An output file (``.jsonl.out``), alone: every record's prompt and usage."""
    sums: Counter[str] = Counter()
    for line, _, built in _records(stream, stream.path, stream.source, with_output=True, sums=sums):
        if built is not None:
            yield line, built
    manifest = _manifest(stream.path)
    if manifest is not None:
        yield from _compare(manifest, sums)


def read_input(stream: LogStream) -> Iterator[Item]:
    """An input file alone (every request, no usage), or joined with its output file
    (``results``): the output's records, the input's records without one not billed."""
    if stream.results is None:
        for line, _, built in _records(
            stream, stream.path, stream.source, with_output=False, sums=None
        ):
            if built is not None:
                yield line, built
        return
    wanted: dict[str, int] = {}
    for line, record in json_lines(stream.path, stream.source):
        if isinstance(record, LogRecordError):
            yield line, record
            continue
        try:
            wanted.setdefault(_record_id(record, line, stream), line)
        except RecordFieldError as exc:
            yield line, stream.error(line, exc.field, exc.reason)
    results = str(stream.results)
    sums: Counter[str] = Counter()
    seen: set[str] = set()
    unmatched = 0
    for line, record_id, built in _records(
        stream, stream.results, results, with_output=True, sums=sums
    ):
        if record_id and record_id not in wanted:
            unmatched += 1
            continue
        seen.add(record_id)
        if built is not None:
            yield line, built
    if wanted and not seen and unmatched:
        raise LogFileError(results, f"shares no recordId with the records in {stream.source}")
    if unmatched:
        stream.skip("result without a request in the requests file", unmatched)
    missing = sum(1 for record_id in wanted if record_id not in seen)
    if missing:
        stream.skip("request without a result in the results file (not billed)", missing)
    manifest = _manifest(stream.results)
    if manifest is not None:
        yield from _compare(manifest, sums)
