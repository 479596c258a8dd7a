"""Agent sessions read once for the reports that replay or price them (``usage``,
``estimate``, ``compare``): every request of the session files by the client that wrote it,
predicted under its client's profile, and, for the self-hosted side, the prompts as block keys
built from what the log says, without a tokenizer (docs/economics.md, "Agent sessions").

A transcript omits the system prompt and tools its client adds, so its prompts cannot be
tokenized; what the provider reported for each request can stand for them:

* a request's length is its observed prompt total (uncached + cache reads + writes);
* it shares with the earlier prompts of its lineage (same model) the prefix the provider said
  it read, or, where an idle gap let that prefix expire, the prefix the lineage had cached
  (``PredictedRequest.kept``): those tokens were in the earlier prompt, in the same order;
* a request that read a prefix its own lineage does not hold (a sub-agent or a new session
  reading the client's system prompt and tools) shares it with the lineage it continues
  (a compaction's), the one with the same first message, else the latest prompt of the model;
* every other token is its own.

:class:`SessionPrompts` gives each request one key per ``block_size`` tokens, equal keys for
an equal prefix: the block-key trace the vLLM policy replays (the way Mooncake traces are).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cachecast.core.errors import BadInputError, Location, LogRecordError
from cachecast.sessions.native import compressed
from cachecast.sessions.profiles import ClientProfile, profile_for_format, profile_named
from cachecast.sessions.reading import (
    NO_DEFAULTS,
    SESSION_FORMATS,
    ModelDefaults,
    SessionRequest,
    session_client,
    session_format,
    session_requests,
)
from cachecast.sessions.replay import PredictedRequest, predict_sessions

if TYPE_CHECKING:  # the usage report imports this module: no log reader of every format
    from cachecast.passes.log_input import LogInput
    from cachecast.tokenizers.types import TokenizedRequest

SHARING = (
    "agent sessions: each prompt's length is its observed prompt total; it shares with its"
    " lineage's earlier prompts the prefix the provider reported reading (or, after an idle"
    " gap outlived the TTL, the prefix the lineage had cached); the rest is new (no tokenizer)"
)


def session_paths(log: LogInput) -> list[tuple[Path, str]] | None:
    """The log's files as (path, name) where every one is a Claude Code transcript or a
    Codex CLI rollout, read natively (not compressed, no other format forced); else None:
    the log is read, tokenized, as any other."""
    if log.inline or not log.files:
        return None
    found: list[tuple[Path, str]] = []
    for file in log.files:
        if file.format is not None and file.format not in SESSION_FORMATS:
            return None
        if not file.path.is_file() or compressed(file.path) or session_format(file.path) is None:
            return None
        found.append((file.path, file.display_name))
    return found


def read_sessions(
    paths: Sequence[tuple[Path, str]],
    on_error: Callable[[LogRecordError], None],
    defaults: ModelDefaults = NO_DEFAULTS,
) -> dict[str, list[SessionRequest]]:
    """Every request of the files by the client that wrote them (a response repeated by a
    resumed session counted once across the files); ``defaults`` name the model of the
    requests whose files name none (``--model``: ``codex exec --json`` never does)."""
    by_client: dict[str, list[SessionRequest]] = {}
    seen: set[str] = set()
    for path, name in paths:
        try:
            found = session_format(path)  # a compressed file: by its inflated head
        except LogRecordError as exc:  # a compressed file that does not inflate
            on_error(exc)
            continue
        if found is None:
            on_error(
                LogRecordError(
                    name,
                    1,
                    "<format>",
                    "neither a Claude Code transcript, a Codex rollout nor a Gemini CLI"
                    " recording, nor their headless output (claude -p --output-format"
                    " stream-json or json, codex exec --json)",
                )
            )
            continue
        requests = by_client.setdefault(session_client(found), [])
        for item in session_requests(path, name, found, seen=seen, defaults=defaults):
            if isinstance(item, LogRecordError):
                on_error(item)
            else:
                requests.append(item)
    return by_client


def profile_of(client: str, named: str | None = None) -> ClientProfile:
    """The profile a client's requests are predicted with: the one ``named`` (``--client``),
    else the one of the format that wrote them."""
    if named is not None:
        return profile_named(named)
    profile = profile_for_format(client)
    assert profile is not None  # a native format's client
    return profile


def predicted_sessions(
    by_client: dict[str, list[SessionRequest]], named: str | None = None
) -> list[PredictedRequest]:
    """Every request predicted under its client's profile, all clients in log-time order."""
    predicted: list[PredictedRequest] = []
    for client, requests in by_client.items():
        predicted.extend(predict_sessions(requests, profile_of(client, named)))
    predicted.sort(key=lambda each: each.request.facts.timestamp)
    return predicted


def read_predicted(
    paths: Sequence[tuple[Path, str]],
    on_bad_record: str,
    errors: list[LogRecordError],
    named: str | None = None,
    defaults: ModelDefaults = NO_DEFAULTS,
) -> list[PredictedRequest]:
    """Every request of the session files, predicted (:func:`predicted_sessions`); a line
    that cannot be read goes to ``errors``, or stops the run where ``on_bad_record`` is
    ``stop``; ``defaults``: the log's --model and --provider. A file whose usage comes per
    turn or per run is refused (no request's prompt to replay)."""

    def on_error(error: LogRecordError) -> None:
        if on_bad_record == "stop":
            raise error
        errors.append(error)

    by_client = read_sessions(paths, on_error, defaults)
    for requests in by_client.values():
        whole = next((each for each in requests if each.unit != "request"), None)
        if whole is not None:
            from cachecast.sessions.headless import PER_UNIT

            raise BadInputError(
                f"its usage is stated per {whole.unit} ({PER_UNIT[whole.unit]}), not per request:"
                " no request's prompt can be replayed; `cachecast usage` reports it",
                location=Location(source=whole.facts.source, line=whole.facts.line, field="usage"),
            )
    return predicted_sessions(by_client, named)


def shared_tokens(each: PredictedRequest) -> int:
    """The prefix of ``each``'s prompt that an earlier prompt held (module docstring)."""
    return min(each.request.facts.prompt_tokens, max(each.request.observed.read, each.kept or 0))


class SessionPrompts:
    """Session requests as a block-key trace (a ``RequestLog``; module docstring), read in
    log-time order, the same keys on every read."""

    def __init__(self, predicted: Sequence[PredictedRequest], block_size: int) -> None:
        self.predicted = sorted(predicted, key=lambda each: each.request.facts.timestamp)
        self.block_size = block_size
        self.errors: list[LogRecordError] = []

    def read(
        self, prepare: Callable[[TokenizedRequest], TokenizedRequest] | None = None
    ) -> Iterator[TokenizedRequest]:
        # Here, not at the top: ``usage`` reads sessions without building block traces.
        from cachecast.tokenizers.types import TokenizedRequest

        size = self.block_size
        fresh = 1  # the next key no prompt has used
        # The latest prompt (its keys, its length) of each (lineage, model), of each
        # (model, first message) and of each model.
        lineages: dict[tuple[str, str], tuple[array[int], int]] = {}
        roots: dict[tuple[str, str], tuple[array[int], int]] = {}
        models: dict[str, tuple[array[int], int]] = {}
        for each in self.predicted:
            call = each.request
            facts = call.facts
            total = facts.prompt_tokens
            shared = shared_tokens(each)
            candidates = [
                lineages.get((facts.lineage, facts.model)),
                None if facts.parent is None else lineages.get((facts.parent, facts.model)),
                None if facts.root is None else roots.get((facts.model, facts.root)),
                models.get(facts.model),
            ]
            known = [item for item in candidates if item is not None]
            source = next((item for item in known if item[1] >= shared), None)
            if source is None and known:
                source = max(known, key=lambda item: item[1])
            kept = 0 if source is None else min(shared, source[1]) // size
            keys = array("q", [] if source is None else source[0][:kept])
            new = -(-total // size) - kept
            keys.extend(range(fresh, fresh + new))
            fresh += new
            prompt = (keys, total)
            lineages[(facts.lineage, facts.model)] = prompt
            if facts.root is not None:
                roots[(facts.model, facts.root)] = prompt
            models[facts.model] = prompt
            request = TokenizedRequest(
                source=facts.source,
                line=facts.line,
                request_id=facts.request_id,
                timestamp=facts.timestamp,
                scope="agent-sessions",
                provider=call.provider,
                model=None,  # one self-hosted model serves every request
                input_tokens=total,
                output_tokens=call.observed.output,
                block_keys=keys,
                block_size=size,
                session=facts.lineage,
                logged_model=facts.model,
            )
            yield request if prepare is None else prepare(request)
