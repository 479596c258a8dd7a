"""Prompt logs (JSONL, streamed) -> :class:`TokenizedRequest`.

A line is one JSON object, either a bare request body or a wrapper::

    {"timestamp": "2026-01-05T10:00:00Z" | 1767607200 | 1767607200000,
     "scope": "org-1/key-2",            # or org / project / api_key / prompt_cache_key ...
     "session": "s-17", "provider": "openai", "model": "gpt-4o", "request_id": "r-1",
     "request": {...body...},           # also accepted: "body" (OpenAI batch files)
     "response": {"usage": {...}},      # or "usage": {...} at the top level
     "output_tokens": 120}

Bodies: OpenAI Chat Completions (``messages``), Responses (``input``/``instructions``),
Anthropic Messages (``messages`` with ``system``/``cache_control``, or provider anthropic),
Gemini generateContent (``contents``), ``{"prompt": "..."}``, ``{"tokens": [...]}``, and
Mooncake traces (``timestamp`` in ms, ``input_length``, ``output_length``, ``hash_ids`` with
one id per 512-token block -> ``block_keys``, ``block_size`` 512).

Timestamps: ISO 8601 (naive = UTC) or epoch numbers; a number above 1e11 is taken as
milliseconds. A record without a timestamp is dated by the creation time its recorded
response states (``created`` / ``created_at``, see ``record_fields.timestamp_of``), else gets
the previous record's (0.0 for the first), so file order is kept. Scope: ``scope`` if given,
else ``key=value`` pairs of the identity fields present (org, project, api_key,
prompt_cache_key, cache_salt, ...), else ``default``.

Model and provider: a record's own (wrapper, then body, then the model its ``response``
names as the one that served it) model and provider are what it was logged with:
``TokenizedRequest.logged_model`` and ``provider`` keep them, ``default_model`` and
``default_provider`` standing in for records that name none. The ``model`` argument chooses
the tokenization (a pass that prices the log as gpt-4o tokenizes every record as gpt-4o, and
``TokenizedRequest.model``, the cache's model namespace, is then gpt-4o for every request):
it never replaces the logged model, which observed usage is reconciled against.

Providers without a public tokenizer (approximate tokenizers): the approximate ids are
calibrated (``calibration``): where the record reports its prompt length the text tokens are
scaled so that the request has exactly that many (breakpoints move with them), and records
without usage are scaled by the ratio the log's usage taught for their model; the request
stays ``exact=False``. An exact tokenizer whose rendering guesses (OpenAI tools) takes the
reported count as exact, the difference cut or padded at the end.

Canonical keys (written by the format adapters in ``cachecast.logs``, honoured in any
record): ``observed`` holds usage already normalized (``input_tokens`` including cached,
``cache_read_tokens``, ``cache_write_tokens``, ``cache_write_by_ttl``, ``output_tokens``,
``cost``; see ``cachecast.logs.usage``) and wins over ``usage``; ``"prompt_complete": false``
marks a request whose log omits part of its prompt (agent transcripts: no system prompt or
tool definitions): its tokens are then approximate (``exact`` False, fitted to the observed
input count) and the request says so (``TokenizedRequest.prompt_complete``);
``service_tier`` (``batch``, ``flex``, ``priority``, ``scale``; else the one a ``response``
reports) marks a request billed otherwise than on demand (``TokenizedRequest.service_tier``:
priced on demand all the same, and the reports say so). Provider names
are normalized to the contract store's ids (``gemini`` -> ``google``, ``aws`` -> ``bedrock``).

Other formats (observability exports, agent transcripts, batch files, recorded HTTP
traffic) are read through ``cachecast.logs.open_log``, which detects them and hands this
reader the same records (``read_log(path, format=..., results=...)``).

Bad lines raise or record :class:`LogRecordError` (file, line, field, reason); nothing is skipped
without being recorded.

This module holds the entry points; the pipeline is ``log_reader``, a wrapper's fields are
read by ``record_fields``, open conversations are kept by ``conversations``, and a request is
made from its ids (Mooncake traces included) by ``request_build``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from cachecast.logs.errors import LogRecordError
from cachecast.logs.formats import open_log
from cachecast.logs.sanitize import checked
from cachecast.logs.stream import LogStream
from cachecast.tokenizers.calibration import Calibrator
from cachecast.tokenizers.encode import SegmentCache
from cachecast.tokenizers.log_reader import CalibratorChoice, LogReader
from cachecast.tokenizers.request_build import ModelChoice
from cachecast.tokenizers.types import TokenizedRequest

__all__ = ["read_log", "read_records"]


def read_log(
    path: str | Path | LogStream,
    *,
    name: str | None = None,
    model: str | None = None,
    default_model: str | None = None,
    default_provider: str | None = None,
    strict: bool = False,
    errors: list[LogRecordError] | None = None,
    cache: SegmentCache | None = None,
    format: str | None = None,
    results: str | Path | None = None,
    calibrator: Calibrator | CalibratorChoice | None = None,
    first_timestamp: float = 0.0,
) -> Iterator[TokenizedRequest]:
    """Stream a log of any format ``cachecast.logs`` reads (detected, or ``format``; a batch
    file's ``results`` joined to it). A :class:`LogStream` already opened may be passed
    instead of a path: its counts then tell the caller whether any record was readable.
    ``name`` is what errors and requests call the file (default: its path).
    ``first_timestamp`` is what records without a timestamp get before any record with one
    (a part of a file read on its own passes NaN, to learn which inherit it from before).
    ``calibrator``: see ``log_reader.LogReader``."""
    if isinstance(path, LogStream):
        stream = path
    else:
        stream = open_log(path, format=format, results=results, name=name)
    # The parsed records are ours alone, so a conversation's earlier bodies stay as they were
    # and later requests may take their rendering over (see ``render.render_after``).
    reader = LogReader(
        name or stream.source,
        ModelChoice(model, default_model, default_provider),
        strict,
        errors,
        cache,
        reuse=True,
        calibrator=calibrator,
        first_timestamp=first_timestamp,
    )
    yield from reader.read(iter(stream))


def read_records(
    records: Iterable[dict[str, Any]],
    source: str,
    *,
    model: str | None = None,
    default_model: str | None = None,
    default_provider: str | None = None,
    strict: bool = False,
    errors: list[LogRecordError] | None = None,
    cache: SegmentCache | None = None,
    settled: bool = False,
    calibrator: Calibrator | CalibratorChoice | None = None,
) -> Iterator[TokenizedRequest]:
    """Like :func:`read_log` for records already in memory (line = 1-based position).
    ``settled``: the records are all built and nobody changes them while they are read (a
    list held for the whole read), so later requests may take a conversation's earlier
    rendering over, as for a file."""

    def numbered() -> Iterator[tuple[int, dict[str, Any] | LogRecordError]]:
        for number, record in enumerate(records, start=1):
            if isinstance(record, dict):
                yield number, checked(record, source, number)  # the one sanitizer
            else:
                yield number, LogRecordError(source, number, "<record>", "expected a JSON object")

    # No reuse across records unless settled: the caller owns them and may change one after
    # handing it over (a history list appended to in place), which would make an earlier body
    # unreliable.
    reader = LogReader(
        source,
        ModelChoice(model, default_model, default_provider),
        strict,
        errors,
        cache,
        reuse=settled,
        calibrator=calibrator,
    )
    yield from reader.read(numbered())
