"""Gemini CLI chat recordings read as session requests: each reply ``logs.gemini_cli`` finds
(a ``gemini`` message with ``tokens``, counted once per message id) is one request of the
model it names, billed by Google: the Gemini API unless ``--provider`` names another
(``vertex``), since the recording does not say how the CLI signed in (docs/clients.md,
"Gemini CLI").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from cachecast.core.errors import LimitExceededError, LogRecordError, RecordFieldError
from cachecast.logs.canonical import iso_seconds
from cachecast.logs.gemini_cli import CONVENTION, GEMINI_CLI, REPEATED, Reply, replies
from cachecast.logs.usage import normalize_usage
from cachecast.sessions.native import (
    NO_DEFAULTS,
    NO_MODEL,
    ModelDefaults,
    SessionRequest,
    make_request,
)

__all__ = ["GEMINI_CLI", "PROVIDER", "gemini_requests"]

# The Gemini API (an API key). Vertex AI (GOOGLE_GENAI_USE_VERTEXAI) is ``--provider vertex``;
# a Google sign-in (Code Assist) bills no tokens at all [U: the recording does not say].
PROVIDER = "google"


def gemini_requests(
    path: Path,
    source: str,
    skipped: Counter[str],
    seen: set[str],
    defaults: ModelDefaults = NO_DEFAULTS,
    *,
    need_model: bool = True,
) -> Iterator[SessionRequest | LogRecordError]:
    """Every request of a recording, errors in place; ``seen`` holds the reply ids counted
    so far (shared across files: a resumed ``.json`` recording is copied whole into the
    ``.jsonl`` that continues it, ``ChatRecordingService.initialize``). A reply naming no
    model takes ``--model``; without one it is a bad record naming ``model``
    (``need_model`` false: ``inspect``, which prices nothing, leaves the model empty)."""
    for reply in replies(path, source, skipped):
        if isinstance(reply, LogRecordError):
            yield reply
            continue
        key = f"{GEMINI_CLI}:{reply.session}:{reply.message_id}"
        if key in seen:
            skipped[REPEATED] += 1
            continue
        seen.add(key)
        try:
            yield _request(reply, source, defaults, need_model)
        except RecordFieldError as error:
            yield LogRecordError(source, reply.line, error.field, error.reason)
        except LimitExceededError as error:
            raise error.located(source, reply.line) from None


def _request(
    reply: Reply, source: str, defaults: ModelDefaults, need_model: bool
) -> SessionRequest:
    model = reply.model or defaults.model
    if model is None:
        if need_model:
            raise RecordFieldError("model", NO_MODEL)
        model = ""
    usage = normalize_usage(reply.usage, convention=CONVENTION, path=reply.where)
    if (usage.cache_read_tokens or 0) > (usage.input_tokens or 0):
        raise RecordFieldError(
            "tokens.cached",
            f"{usage.cache_read_tokens} exceeds tokens.input {usage.input_tokens} (a subset)",
        )
    timestamp = None if reply.timestamp is None else iso_seconds(reply.timestamp, "timestamp")
    return make_request(
        source,
        reply.line,
        reply.message_id,
        reply.lineage,
        model,
        timestamp,
        usage,
        provider=defaults.provider or PROVIDER,
        client_version=None,  # the recording names no CLI version
        client=GEMINI_CLI,
        session=reply.session,
        project=reply.project,
        user_turn=reply.user_turn,
    )
