"""``tokenize``: every request of a log as its model's tokenizer sees it.

Each request is reported in file order (sources one after the other, not merged by time:
this is a listing of the log, not a replay) with its exact token count, whether the count
is exact, the tokenizer, the spans of the prompt that came from each part of the request
body (system, tools, messages, content blocks) and its cache breakpoints. Requests stream
to ``on_request`` as they are read, so a long log never sits in memory; the report holds
the totals and the lines that could not be read.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import Field

from cachecast.logs.errors import bad_line_count
from cachecast.passes.log_input import LogReading
from cachecast.passes.progress import NoProgress, Progress
from cachecast.tokenizers import get_tokenizer
from cachecast.tokenizers.types import TokenizedRequest
from cachecast.usecases.reports import InputIssue, Report, issues_of
from cachecast.usecases.requests import LogRequest

PROGRESS_STEP = 256  # requests per progress update (a bar redrawn per request costs more)


class TokenizeRequest(LogRequest):
    """Tokenize every request of ``log``."""

    model: str | None = Field(
        default=None,
        description="tokenize every request as this model (default: each record's own)",
    )


class SegmentSpan(Report):
    """Tokens ``[start, end)`` of the prompt came from the body part ``label``."""

    kind: str = Field(examples=["system"])
    label: str = Field(examples=["messages[0]"])
    start: int
    end: int


class BreakpointMark(Report):
    """An explicit cache breakpoint after ``offset`` tokens; ``ttl`` None is the default."""

    offset: int
    ttl: str | None


class RequestTokens(Report):
    """One request as tokenized."""

    request_id: str
    line: int = Field(description="1-based line in its file (position of an inline record)")
    timestamp: float
    scope: str
    provider: str | None
    model: str | None = Field(description="the model the request was tokenized as")
    input_tokens: int
    output_tokens: int
    exact: bool = Field(description="False where the provider publishes no tokenizer")
    tokenizer: str
    segments: list[SegmentSpan]
    breakpoints: list[BreakpointMark]
    block_size: int | None = Field(description="block-level traces: tokens per block")
    blocks: int | None = Field(description="block-level traces: block keys given")

    @classmethod
    def of(cls, request: TokenizedRequest) -> RequestTokens:
        blocks = len(request.block_keys) if request.block_keys is not None else None
        return cls.read(request, blocks=blocks)


class TokenizeReport(Report):
    """Totals of a tokenized log and the lines that could not be read."""

    sources: list[str]
    requests: int
    input_tokens: int
    skipped_lines: int
    errors: list[InputIssue]


def tokenize(
    request: TokenizeRequest,
    *,
    progress: Progress | None = None,
    on_request: Callable[[RequestTokens], None] | None = None,
) -> TokenizeReport:
    """Tokenize the log; every request goes to ``on_request`` in file order.

    Checked before any work: the model (when one is given) and the log's sources. A source
    with no readable request is bad input; other bad lines follow ``on_bad_record``."""
    if request.model is not None:
        get_tokenizer(request.model)  # an unknown one: UnknownModelError at the field "model"
    log = request.log
    log.check_sources()
    progress = progress or NoProgress()
    progress.start("tokenizing requests", None)  # counted as read, not lines
    reading = LogReading(log, request.model)
    requests = tokens = pending = 0
    for index in range(len(log.source_names)):
        for tokenized in reading.source_requests(index):
            requests += 1
            tokens += tokenized.input_tokens
            if on_request is not None:
                on_request(RequestTokens.of(tokenized))
            pending += 1
            if pending == PROGRESS_STEP:
                progress.advance(pending)
                pending = 0
    progress.advance(pending)
    reading.finish()
    return TokenizeReport(
        sources=log.source_names,
        requests=requests,
        input_tokens=tokens,
        skipped_lines=bad_line_count(reading.errors),
        errors=issues_of(reading.errors),
    )
