"""The formats cachecast reads, how a file's format is told, and :func:`open_log`.

Detection sniffs the start of the file (:data:`SNIFF_BYTES`, at least its first whole line,
:data:`SNIFF_RECORDS` records): JSON lines are tried against each line-based format in
:data:`FORMATS` order (the most specific shapes first, cachecast's own last), a file that is
one JSON document against the document formats, a YAML file against VCR. The first format
that fits is used; if none does, one :class:`UnknownLogFormatError` lists every format tried
and why it did not fit. ``format=`` skips detection.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from cachecast.core.errors import LimitExceededError
from cachecast.core.limits import current
from cachecast.logs import (
    batch,
    bedrock_batch,
    bedrock_logs,
    claude_code,
    codex,
    ddrecord,
    easyvcr,
    gemini_cli,
    genai_replay,
    govcr,
    har,
    headless,
    helicone,
    hoverfly,
    httpmock,
    httprr,
    inspect_ai,
    jsonl,
    langfuse,
    langsmith,
    litellm,
    moscafetch,
    nock,
    otel,
    structural,
    talkback,
    testproxy,
    vcr,
    wiremock,
)
from cachecast.logs.compressed import compression_of, decompressed_copy, remove
from cachecast.logs.errors import LogFileError, UnknownLogFormatError
from cachecast.logs.headless_names import CLAUDE_RESULT, CLAUDE_STREAM, CODEX_EXEC
from cachecast.logs.stream import Item, LogStream, load_document

SNIFF_BYTES = 1 << 20
SNIFF_RECORDS = 32
# A first line longer than this is not looked for further (no JSON lines format writes one).
SNIFF_MAX_LINE_BYTES = 64 << 20

_UNSET: Any = object()


@dataclass
class Sample:
    """What detection looks at: the head of the file, its first JSON-lines records, and
    (parsed on demand, under the size bound) the file as one JSON document."""

    path: Path
    text: str
    records: list[dict[str, Any]]
    line_error: str | None  # why the first non-blank line is not a JSON object
    _document: Any = field(default=_UNSET)
    document_error: str | None = None

    def document(self) -> Any:
        if self._document is _UNSET:
            self._document = None
            stripped = self.text.lstrip()
            if self.records or not stripped.startswith(("{", "[")):
                self.document_error = "not one JSON document"
            else:
                try:
                    self._document = load_document(self.path)
                except LogFileError as exc:
                    self.document_error = exc.reason
        return self._document

    def parsed_document(self) -> Any:
        """The document if detection parsed the file as one, else None (not parsed twice)."""
        return None if self._document is _UNSET else self._document

    def objects(self) -> list[Any]:
        """The JSON values to judge: the JSON-lines records, or the one document."""
        if self.records:
            return list(self.records)
        document = self.document()
        return [] if document is None else [document]

    def why_not_json(self) -> str:
        self.document()
        if (
            self.line_error
            and self.document_error
            and self.document_error != "not one JSON document"
        ):
            return f"not JSON lines (line 1: {self.line_error}) nor {self.document_error}"
        if self.line_error and self.document_error is None:
            # The file parsed as one JSON document (a manifest, a config): the formats that
            # read lines do not fit, and what it holds says what it is.
            return f"one JSON document, not JSON lines ({_shape(self._document)})"
        if self.line_error:
            return f"neither JSON lines nor one JSON document (line 1: {self.line_error})"
        return self.document_error or "no JSON object in the file"


SHOWN_KEYS = 6  # top-level keys a detection error names (the rest are counted)


def _shape(document: Any) -> str:
    """What a JSON document holds, in a few words: its first top-level keys, or its length."""
    if isinstance(document, dict):
        keys = [str(key)[:40] for key in list(document)[:SHOWN_KEYS]]
        more = len(document) - len(keys)
        shown = ", ".join(keys) + (f", ... {len(document)} in all" if more else "")
        return f"top-level keys: {shown}" if keys else "an empty object"
    if isinstance(document, list):
        return f"a list of {len(document)} item{'s' if len(document) != 1 else ''}"
    return f"a JSON {type(document).__name__}"


Fit = Callable[[Sample], str | None]


@dataclass(frozen=True)
class LogFormat:
    name: str
    summary: str
    fits: Fit
    read: Callable[[LogStream], Iterator[Item]]
    counts_itself: bool = False
    batch: str | None = None  # "requests" or "results": the halves of a batch pair
    pair: str | None = None  # the format of the other half


def _lines_fit(check: Callable[[dict[str, Any]], bool], wanted: str) -> Fit:
    def fits(sample: Sample) -> str | None:
        if not sample.records:
            return sample.why_not_json()
        if any(check(record) for record in sample.records):
            return None
        return f"no line has {wanted}"

    return fits


def _records_fit(check: Callable[[list[dict[str, Any]]], str | None]) -> Fit:
    """A fit on the JSON-lines records, or on the one document (its items where it is a
    list): Claude Code prints its result pretty-printed when piped through jq, and a list
    of every message under ``--verbose``."""

    def fits(sample: Sample) -> str | None:
        if sample.records:
            return check(sample.records)
        document = sample.document()
        if isinstance(document, dict):
            return check([document])
        if isinstance(document, list) and document:
            return check([item for item in document if isinstance(item, dict)] or [{}])
        return sample.why_not_json()

    return fits


_codex_lines = _lines_fit(codex.fits, "a Codex rollout event {timestamp, type, payload}")


def _codex_fit(sample: Sample) -> str | None:
    """A rollout's lines, or the TypeScript CLI's rollout: one pretty-printed document
    ``{session, items}`` (docs/clients.md, "Format variants")."""
    found = _codex_lines(sample)
    if found is None or sample.records or not codex.typescript_rollout(sample.document()):
        return found
    return None


def _objects_fit(check: Callable[[Any], bool], wanted: str) -> Fit:
    def fits(sample: Sample) -> str | None:
        objects = sample.objects()
        if not objects:
            return sample.why_not_json()
        if any(check(value) for value in objects):
            return None
        return f"no {wanted}"

    return fits


def _cachecast_fits(sample: Sample) -> str | None:
    if not sample.records:
        # One JSON document: a record, or a list of records (cachecast.logs.jsonl).
        document = sample.document()
        values = document if isinstance(document, list) else [document]
        records = [value for value in values if isinstance(value, dict)]
        if not records:
            return sample.why_not_json()
        if any(jsonl.fits(record) is None for record in records):
            return None
        return f"one JSON document: {jsonl.fits(records[0])}"
    reasons = [jsonl.fits(record) for record in sample.records]
    if any(reason is None for reason in reasons):
        return None
    return f"line 1: {reasons[0]}"


# vcrpy and go-vcr write ``interactions:``, Ruby VCR ``http_interactions:``; their JSON
# serializers the same keys as the first of a JSON document.
_YAML_INTERACTIONS = re.compile(r"^(?:http_)?interactions:\s*$", re.MULTILINE)
_JSON_INTERACTIONS = re.compile(r'"(?:http_)?interactions"\s*:\s*\[')
# Ruby VCR 1.x: a top-level list of tagged interactions; php-vcr: a top-level list of
# untagged ones, each opening with its request (YAML "-" then "request:", or JSON).
_RUBY_VCR1 = re.compile(r"^-\s+!ruby/(?:struct|object):VCR::HTTPInteraction\b", re.MULTILINE)
_PHP_VCR = re.compile(r"\A\s*-[ \t]*(?:\n[ \t]+)?request:[ \t]*\n")
_JSON_LIST_OF_REQUESTS = re.compile(r'\A\s*\[\s*\{\s*"request"\s*:\s*\{')
# vcrpy's cassette dict dumped whole by a custom persister (LangChain's standard tests):
# ``requests:`` first (the keys sorted), a list of vcrpy requests {body, headers, method,
# uri}; ``responses:`` follows them, perhaps past the sniffed head.
_PAIRED = re.compile(
    r"""\A(?:---[ \t]*\n)?(?:requests:[ \t]*\n-[ \t]+|\s*\{\s*"requests"\s*:\s*\[\s*\{\s*")"""
    r"(?:body|headers|method|uri)\b"
)


def _paths_without_uri(document: Any) -> bool:
    """Whether a JSON document's first interaction keeps its request's ``path`` and no
    ``uri`` / ``url`` (every VCR writes the whole URL: vcrpy and Ruby VCR ``uri``, go-vcr
    ``url``; cachecast.logs.vcr reads no other)."""
    if not isinstance(document, dict):
        return False
    interactions = document.get("interactions", document.get("http_interactions"))
    if not isinstance(interactions, list) or not interactions:
        return False
    first = interactions[0]
    request = first.get("request") if isinstance(first, dict) else None
    return (
        isinstance(request, dict)
        and isinstance(request.get("path"), str)
        and not isinstance(request.get("uri", request.get("url")), str)
    )


def _vcr_fits(sample: Sample) -> str | None:
    if _YAML_INTERACTIONS.search(sample.text, 0, 1 << 16):  # the key opens a cassette
        return None
    if _RUBY_VCR1.search(sample.text, 0, 1 << 16) or _PHP_VCR.match(sample.text):
        return None
    if _JSON_LIST_OF_REQUESTS.match(sample.text):  # php-vcr's JSON storage
        return None
    if sample.text.lstrip().startswith("{") and _JSON_INTERACTIONS.search(sample.text, 0, 1 << 16):
        if _paths_without_uri(sample.document()):
            # A recorder's own {interactions: [{request: {method, path}, response}]} (PostHog's
            # cassettes): no VCR writes a request without its uri; read by shape instead.
            return "interactions whose requests keep a path and no uri (not a VCR cassette)"
        return None
    if _PAIRED.match(sample.text):  # LangChain's vcrpy persister
        return None
    if sample.text.lstrip().startswith("{") and vcr.single(sample.document()):
        return None  # one interaction a JSON file (the Datadog APM test agent's proxy)
    return (
        "no 'interactions:' (vcrpy, go-vcr) or 'http_interactions:' (Ruby VCR) key at the top,"
        " nor a list of '!ruby/struct:VCR::HTTPInteraction' (Ruby VCR 1.x) or of"
        " {request, response} (php-vcr), nor 'requests:' beside 'responses:' (vcrpy's"
        " cassette dict, LangChain's persister), nor one {request: {method, url}, response}"
    )


_govcr_document = _objects_fit(govcr.fits, "Tracks (a govcr cassette)")


def _govcr_fits(sample: Sample) -> str | None:
    if sample.text.startswith(govcr.ENCRYPTED_HEADER):
        return "an encrypted govcr cassette ($ENC$): decrypt it with its key first"
    return _govcr_document(sample)


def _anthropic_requests_fit(sample: Sample) -> str | None:
    if sample.records and any(batch.is_anthropic_request(r) for r in sample.records):
        return None
    if not sample.records:
        document = sample.document()
        if batch.is_anthropic_requests_document(document):
            return None
        if document is None:
            return sample.why_not_json()
    return 'no {custom_id, params} request (JSON lines or a {"requests": [...]} document)'


def _talkback_fits(sample: Sample) -> str | None:
    if talkback.fits_text(sample.text) or any(map(talkback.is_tape, sample.records[:1])):
        return None
    return "no meta:, req: and res: objects opening the lines of one (JSON5) object"


def _httprr_fits(sample: Sample) -> str | None:
    if httprr.fits_text(sample.text):
        return None
    return "no 'httprr trace v1' first line"


def _ddrecord_fits(sample: Sample) -> str | None:
    if ddrecord.fits_text(sample.text):
        return None
    return "no 'method:' and 'path:' lines, then '-- begin request body --' (or '> method:' ...)"


def _httpmock_fits(sample: Sample) -> str | None:
    if httpmock.fits_text(sample.text):
        return None
    return "no 'when:' mock (with a path or method under it) opening the file"


def _langsmith_value(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, dict) and langsmith.fits(v) for v in value[:8])
    return isinstance(value, dict) and langsmith.fits(value)


def _inspect_fits(sample: Sample) -> str | None:
    if inspect_ai.fits_text(sample.text):
        return None
    return "no Inspect log head ({version, status, eval: {run_id...}})"


def _by_shape_fits(sample: Sample) -> str | None:
    wanted = "no object holding a model endpoint's request and its response"
    objects = sample.objects()
    if objects:
        return None if any(map(structural.fits, objects)) else wanted
    unpaired = structural.txtar_without_request(sample.text)
    if unpaired is not None:
        return unpaired
    if sample.text.lstrip().startswith(("{", "[")):
        return sample.why_not_json()
    try:  # YAML or a txtar archive: read whole only here, once every named format has said no
        document = structural.text_document(sample.path)
    except LogFileError as exc:
        return exc.reason
    except LimitExceededError as exc:
        return f"not read as YAML: {exc.message}"
    return None if structural.fits(document) else f"{wanted} (YAML)"


FORMATS: tuple[LogFormat, ...] = (
    LogFormat(
        "otel",
        "OpenTelemetry GenAI / OpenInference spans, OTLP/JSON (a document or JSON lines)",
        _objects_fit(otel.fits, "resourceSpans (an OTLP/JSON traces document)"),
        otel.read,
    ),
    LogFormat(
        "har",
        "HAR 1.2 recorded HTTP traffic (browser dev tools, mitmproxy, proxies)",
        _objects_fit(har.fits, "log.entries (a HAR 1.2 document)"),
        har.read,
    ),
    LogFormat(
        "govcr",
        "govcr cassette (Go, seborama/govcr: Tracks of Request and Response)",
        _govcr_fits,
        govcr.read,
    ),
    LogFormat(
        "nock",
        "nock recordings (Node.js: nock.back fixtures, the recorder's definitions)",
        _objects_fit(nock.fits, "list of nock definitions {scope, method, path, status}"),
        nock.read,
    ),
    LogFormat(
        "moscafetch",
        "moscaFetch records (Node.js: KaibanJS's fetch recorder, a list of {url, method, body,"
        " response})",
        _objects_fit(moscafetch.fits, "list of moscaFetch records {url, method, response}"),
        moscafetch.read,
    ),
    LogFormat(
        "wiremock",
        "WireMock stub mappings (recorder output: {mappings} or one mapping per file)",
        _objects_fit(wiremock.fits, "WireMock mapping {request: {method, url}, response}"),
        wiremock.read,
    ),
    LogFormat(
        "hoverfly",
        "Hoverfly simulation (captured request/response pairs, any schema version)",
        _objects_fit(hoverfly.fits, "data.pairs (a Hoverfly simulation)"),
        hoverfly.read,
    ),
    LogFormat(
        "talkback",
        "talkback tape (Node.js: one recorded request per JSON5 file, {meta, req, res})",
        _talkback_fits,
        talkback.read,
    ),
    LogFormat(
        "easyvcr",
        "EasyVCR cassette (C# and Java: a list of {RecordedAt, Request, Response})",
        _objects_fit(easyvcr.fits, "list of EasyVCR interactions {RecordedAt, Request, Response}"),
        easyvcr.read,
    ),
    LogFormat(
        "test-proxy",
        "Azure SDK test-proxy recording (.NET SDKs' SessionRecords: {Entries, Variables})",
        _objects_fit(testproxy.fits, "Entries of {RequestUri, RequestMethod, StatusCode}"),
        testproxy.read,
    ),
    LogFormat(
        "azure-core-test",
        "azure-core-test session record (Azure SDK for Java before the test proxy:"
        " {networkCallRecords, variables}; no request bodies)",
        _objects_fit(testproxy.fits_calls, "networkCallRecords of {Method, Uri, Response}"),
        testproxy.read_calls,
    ),
    LogFormat(
        "genai-replay",
        "Google Gen AI SDK replay file (js-genai's test/system/recordings, python-genai's"
        " ReplayApiClient: {recordID or replay_id, interactions})",
        _objects_fit(genai_replay.fits, "replay interactions of {request: {url, bodySegments}}"),
        genai_replay.read,
    ),
    LogFormat(
        "otel-spans",
        "OpenTelemetry spans as the SDK writes them (span.to_json(), ConsoleSpanExporter),"
        " flat attributes",
        _objects_fit(otel.sdk_fits, "OpenTelemetry span {context/span_id, attributes: {...}}"),
        otel.read_sdk,
    ),
    LogFormat(
        "jaeger",
        "Jaeger's JSON of traces (query API /api/traces, the UI's download): {data: [{traceID,"
        " spans: [{spanID, startTime, tags: [{key, type, value}]}]}]}",
        _objects_fit(otel.jaeger_fits, "Jaeger traces {data: [{traceID, spans}]}"),
        otel.read_jaeger,
    ),
    LogFormat(
        "langfuse",
        "Langfuse trace export ({trace, observations}) or observations",
        _objects_fit(langfuse.fits, "Langfuse trace export or observation"),
        langfuse.read,
    ),
    LogFormat(
        "httprr",
        "Go httprr trace (golang.org/x/oscar, langchaingo: raw HTTP request/response pairs)",
        _httprr_fits,
        httprr.read,
    ),
    LogFormat(
        ddrecord.FORMAT,
        "dd-trace-java HTTP record (the OpenAI Java instrumentation's test records,"
        " http-records/**/*.rec: method, path, bodies between marker lines)",
        _ddrecord_fits,
        ddrecord.read,
    ),
    LogFormat(
        "httpmock",
        "httpmock recording or static mocks (Rust: YAML documents of when/then)",
        _httpmock_fits,
        httpmock.read,
    ),
    LogFormat(
        "vcr",
        "VCR / pytest-recording cassette (YAML interactions)",
        _vcr_fits,
        vcr.read,
    ),
    LogFormat(
        gemini_cli.GEMINI_CLI,
        "Gemini CLI chat recording (~/.gemini/tmp/<project>/chats/session-*.jsonl or .json)",
        _records_fit(gemini_cli.records_fit),
        gemini_cli.read,
    ),
    LogFormat(
        "claude-code",
        "Claude Code session transcript (~/.claude/projects/...)",
        _lines_fit(
            claude_code.fits, "a Claude Code event (type user/assistant/... with sessionId)"
        ),
        claude_code.read,
    ),
    LogFormat(
        "codex",
        "Codex CLI rollout (~/.codex/sessions/.../rollout-*.jsonl)",
        _codex_fit,
        codex.read,
    ),
    LogFormat(
        CLAUDE_STREAM,
        "Claude Code headless output (claude -p --output-format stream-json)",
        _records_fit(headless.stream_fits),
        headless.read,
    ),
    LogFormat(
        CLAUDE_RESULT,
        "Claude Code headless result (claude -p --output-format json)",
        _records_fit(headless.result_fits),
        headless.read,
    ),
    LogFormat(
        CODEX_EXEC,
        "Codex headless output (codex exec --json)",
        _records_fit(headless.codex_fits),
        headless.read,
    ),
    LogFormat(
        "openai-batch-output",
        "OpenAI Batch output file (its usage; the prompts are in the input file)",
        _lines_fit(batch.is_openai_output, "{custom_id, response, error} (a Batch output line)"),
        batch.read_openai_output,
        batch="results",
        pair="openai-batch",
    ),
    LogFormat(
        "anthropic-batch-results",
        "Anthropic Message Batches results (their usage; the prompts are in the requests)",
        _lines_fit(batch.is_anthropic_result, "{custom_id, result} (a batch results line)"),
        batch.read_anthropic_results,
        batch="results",
        pair="anthropic-batch",
    ),
    LogFormat(
        "anthropic-batch",
        "Anthropic Message Batches requests ({custom_id, params})",
        _anthropic_requests_fit,
        batch.read_anthropic,
        batch="requests",
        pair="anthropic-batch-results",
    ),
    LogFormat(
        "openai-batch",
        "OpenAI Batch input file ({custom_id, method, url, body})",
        _lines_fit(batch.is_openai_input, "{custom_id, url, body} (a Batch input line)"),
        batch.read_openai,
        batch="requests",
        pair="openai-batch-output",
    ),
    LogFormat(
        "bedrock-batch-output",
        "Amazon Bedrock batch inference output (.jsonl.out: its prompts and usage)",
        _lines_fit(
            bedrock_batch.is_output, "{recordId, modelInput, modelOutput} (a .jsonl.out line)"
        ),
        bedrock_batch.read_output,
        batch="results",
        pair="bedrock-batch",
    ),
    LogFormat(
        "bedrock-batch",
        "Amazon Bedrock batch inference input ({recordId, modelInput})",
        _lines_fit(bedrock_batch.is_input, "{recordId, modelInput} (a batch inference line)"),
        bedrock_batch.read_input,
        batch="requests",
        pair="bedrock-batch-output",
    ),
    LogFormat(
        "langsmith",
        "LangSmith runs (run_type, inputs, outputs, extra.metadata)",
        _objects_fit(_langsmith_value, "LangSmith run {run_type, inputs}"),
        langsmith.read,
    ),
    LogFormat(
        "bedrock-invocation-log",
        "Amazon Bedrock model invocation log (CloudWatch / S3: schemaType ModelInvocationLog)",
        _objects_fit(bedrock_logs.fits, "ModelInvocationLog record {schemaType, input, output}"),
        bedrock_logs.read,
    ),
    LogFormat(
        "litellm",
        "LiteLLM StandardLoggingPayload (messages, model, metadata.usage_object)",
        _objects_fit(litellm.fits, "StandardLoggingPayload {call_type, model, messages}"),
        litellm.read,
    ),
    LogFormat(
        "helicone",
        "Helicone export (request_body, response_body, provider)",
        _objects_fit(helicone.fits, "Helicone request {request_id, request_body}"),
        helicone.read,
    ),
    LogFormat(
        inspect_ai.FORMAT,
        "Inspect AI evaluation log (.json: samples' model events with the provider call made)",
        _inspect_fits,
        inspect_ai.read,
    ),
    # After every named format: a file none of them fits is read by its fields' names
    # (before cachecast's own records, whose request is a body, never an HTTP request).
    LogFormat(
        structural.FORMAT,
        "recorded HTTP calls in a dialect not known by name, read by their shape: an object"
        " holding a request (a model endpoint's URL, a body) and its response",
        _by_shape_fits,
        structural.read,
    ),
    LogFormat(
        "cachecast",
        "cachecast JSON lines: wrapper records, provider bodies, prompt/tokens, Mooncake",
        _cachecast_fits,
        jsonl.read,
        counts_itself=True,
    ),
)

BY_NAME: dict[str, LogFormat] = {fmt.name: fmt for fmt in FORMATS}


def format_names() -> list[str]:
    return [fmt.name for fmt in FORMATS]


def sample(path: Path) -> Sample:
    """The head of ``path`` for detection (at least its first whole line)."""
    with open(path, "rb") as handle:
        head = handle.read(SNIFF_BYTES)
        if not head.strip():
            if not head:
                raise LogFileError(str(path), "the file is empty")
            raise LogFileError(str(path), "the file holds only whitespace")
        # Only each new chunk is searched, and the chunks joined once: a first line of many
        # megabytes costs one pass over it, not one per chunk.
        chunks = [head]
        size = len(head)
        bound = min(SNIFF_MAX_LINE_BYTES, current().max_line_bytes + 1)
        found = b"\n" in head.lstrip()
        while not found and size < bound:
            more = handle.read(SNIFF_BYTES)
            if not more:
                break
            chunks.append(more)
            size += len(more)
            found = b"\n" in more
        head = b"".join(chunks) if len(chunks) > 1 else head
        at_end = not handle.read(1)
    lines = head.split(b"\n")
    if not at_end:
        lines = lines[:-1]  # the last one may be cut
    records: list[dict[str, Any]] = []
    line_error: str | None = None
    first = True
    for text in lines:
        if not text.strip():
            continue
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            if first:
                line_error = str(exc)
            value = None
        if first and value is not None and not isinstance(value, dict):
            line_error = f"a JSON {type(value).__name__}"
        first = False
        if isinstance(value, dict):
            records.append(value)
            if len(records) >= SNIFF_RECORDS:
                break
    decoded = head[:SNIFF_BYTES].decode("utf-8", "replace")
    if records and line_error is not None and structural.opens_txtar_request(decoded):
        # A Go txtar archive whose request or reply files are compact JSON lines is one
        # recording (by-shape reads it whole), not JSON lines of a log.
        return Sample(path, decoded, [], line_error)
    if records and line_error is not None and decoded.lstrip().startswith(("{", "[")):
        # A pretty-printed document opening with a lone "{" or "[" whose inner lines are
        # whole objects (one OTLP attribute per line, `{"key": ..., "value": {...}}`) is one
        # document, not JSON lines of its attributes: taken as one when it parses as one.
        whole = Sample(path, decoded, [], line_error)
        if whole.document() is not None:
            return whole
    return Sample(path, decoded, records, line_error)


def detect_format(path: Path, found: Sample | None = None) -> tuple[LogFormat, Sample]:
    """The first format that fits ``path``; UnknownLogFormatError naming each one tried."""
    found = found or sample(path)
    tried: list[tuple[str, str]] = []
    for fmt in FORMATS:
        why = fmt.fits(found)
        if why is None:
            return fmt, found
        tried.append((fmt.name, why))
    alone = _response_alone(found) or _unanswered_call(found) or _replies_only(found)
    if alone is not None:
        # A reply kept without its request, or a call kept without a reply to bill, is no
        # unknown format: say what it is (one error).
        raise LogFileError(str(path), alone)
    raise UnknownLogFormatError(str(path), tried)


def _unanswered_call(found: Sample) -> str | None:
    """Why the sampled file is a recorded call with no usage (``structural.unanswered_call``)."""
    for value in found.objects()[:1]:
        why = structural.unanswered_call(value)
        if why is not None:
            return why
    return None


def _replies_only(found: Sample) -> str | None:
    """Why the sampled file keeps replies without requests (``structural.replies_only``):
    the JSON document, else the file read as YAML (only here, once no format fits)."""
    objects = found.objects()
    if not objects and not found.text.lstrip().startswith(("{", "[")):
        try:
            objects = [structural.text_document(found.path)]
        except (LogFileError, LimitExceededError):
            return None
    return next((why for why in map(structural.replies_only, objects[:1]) if why), None)


def _response_alone(found: Sample) -> str | None:
    """Why the sampled file is a provider's response alone (``jsonl.response_alone``)."""
    records = found.records
    if not records:
        document = found.document()
        records = [document] if isinstance(document, dict) else []
    return jsonl.response_alone(records[0]) if len(records) == 1 else None


def open_log(
    path: str | Path,
    *,
    format: str | None = None,
    results: str | Path | None = None,
    name: str | None = None,
) -> LogStream:
    """Open a log of any supported format as a :class:`LogStream` of canonical records; a
    compressed file (gzip, zstd, bzip2, xz) is read inflated (``logs.compressed``).

    ``format`` forces a format (a name from :func:`format_names`); ``results`` gives a batch
    requests file its results file (either may be given first: they are told apart);
    ``name`` is what errors call the file (default: its path)."""
    log = Path(path)
    kind = compression_of(log)
    if kind is not None:  # .gz, .zst, .bz2, .xz: inflated (bounded) to a file of its own
        name = name if name is not None else str(log)
        log = decompressed_copy(log, kind, name)
    try:
        stream = _open(log, format, results)
    except LogFileError as error:
        if kind is not None:
            remove(str(log))
        raise (error.named(name) if name is not None else error) from None
    if name is not None:
        stream.source = name
    if kind is not None:
        weakref.finalize(stream, remove, str(log))
    return stream


def _open(log: Path, format: str | None, results: str | Path | None) -> LogStream:
    found: Sample | None = None
    if format is not None:
        fmt = BY_NAME.get(format)
        if fmt is None:
            raise LogFileError(
                str(log), f"unknown format {format!r}; known: {', '.join(format_names())}"
            )
    else:
        fmt, found = detect_format(log)
    results_path = Path(results) if results is not None else None
    if results_path is not None:
        log, fmt, results_path = _pair(log, fmt, results_path)
    preloaded = found.parsed_document() if found is not None else None
    return LogStream(
        log,
        fmt.name,
        fmt.read,
        results=results_path,
        counts_itself=fmt.counts_itself,
        preloaded=preloaded,
    )


def _pair(log: Path, fmt: LogFormat, results: Path) -> tuple[Path, LogFormat, Path]:
    """(requests file, its format, results file) from the two files of a batch."""
    if fmt.batch is None:
        raise LogFileError(
            str(log),
            f"a results file was given, but this is a {fmt.name} log: results pair with "
            "batch requests (openai-batch, anthropic-batch, bedrock-batch)",
        )
    other, _ = detect_format(results)
    if fmt.batch == "results":
        log, results, fmt, other = results, log, other, fmt
    if other.name != fmt.pair:
        raise LogFileError(
            str(results), f"is {other.name}, not the {fmt.pair} file that pairs with {fmt.name}"
        )
    return log, fmt, results


def _common_prefix(a: str, b: str) -> int:
    """Characters two file names share at their start (``run.jsonl`` / ``run_results.jsonl``)."""
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def pair_batch_files(paths: Sequence[str | Path]) -> list[tuple[Path, Path | None]]:
    """Each path with the results file it pairs with (None for the others): a batch
    requests file (openai-batch, anthropic-batch, bedrock-batch) and a results file of its
    kind among ``paths`` are paired; with several of a kind, by the longest common file-name
    prefix.
    A results file left without requests is inspected alone."""
    files = [Path(path) for path in paths]
    kinds: dict[Path, LogFormat] = {}
    for path in files:
        try:
            kinds[path] = detect_format(path)[0]
        except LogFileError:
            continue  # not a batch file: reading it later reports why, naming it
    requests = [p for p in kinds if kinds[p].batch == "requests"]
    results = [p for p in kinds if kinds[p].batch == "results"]
    paired: dict[Path, Path] = {}
    taken: set[Path] = set()
    for request in requests:
        candidates = [r for r in results if r not in taken and kinds[r].name == kinds[request].pair]
        if not candidates:
            continue
        best = max(candidates, key=lambda r: _common_prefix(r.name, request.name))
        paired[request] = best
        taken.add(best)
    out: list[tuple[Path, Path | None]] = []
    for path in files:
        if path in taken:
            continue
        out.append((path, paired.get(path)))
    return out
