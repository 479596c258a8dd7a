"""Inspect AI evaluation logs (UK AISI's ``inspect_ai``: the ``.json`` log format, one JSON
document per evaluation; docs/log-formats.md, "Inspect AI evaluation logs").

An ``EvalLog`` (Inspect's log reference, https://inspect.aisi.org.uk/eval-logs.html and the
``EvalLog`` / ``ModelEvent`` types of https://inspect.aisi.org.uk/reference/inspect_ai.log.html)
holds ``version``, ``status``, ``eval`` (the task: ``run_id``, ``task``, ``task_id``,
``model``...), ``plan``, ``results``, ``stats`` and ``samples``. Each sample keeps its
``events``; a ``model`` event is one generation: ``model`` (Inspect's ``provider/model``
name), ``timestamp``, ``output`` (Inspect's own summary), ``cache`` (``read`` where Inspect
answered from its own local response cache, so no provider call was made) and ``call``: the
provider API call as made, ``request`` (the body the provider's SDK sent) and ``response``
(the provider's reply, its usage as the provider reported it; a parameter the SDK did not
send is logged as null and left out). Long texts are kept once per
sample under ``attachments`` and referred to as ``attachment://<hash>``: they are put back.

Each ``call`` is read as the HTTP call it was, to the endpoint Inspect's provider calls (the
provider named before the ``/`` of the event's model: ``openai`` -> Chat Completions, or the
Responses API where the body holds ``input``; ``anthropic`` -> Messages; ``google`` ->
generateContent; ``mistral``, ``grok``, ``groq``, ``together``, ``fireworks``, ``openrouter``,
``perplexity`` -> their Chat Completions endpoints), through the recorded-HTTP reader
(``cachecast.logs.http``). A model event without a call (an error), one served from Inspect's
cache, or one of a provider not mapped here is skipped with its reason. The ``.eval`` format
(a zip archive) is not read here [U].
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from cachecast.logs.http import Exchange, read_exchanges
from cachecast.logs.http.exchange import BadEntry, numbered
from cachecast.logs.sanitize import iso_moment
from cachecast.logs.stream import Item, LogStream, documents

FORMAT = "inspect-ai"

# The head of a log as Inspect writes it (pydantic, indent 2): ``version`` first, then
# ``status`` and ``eval``, whose ``run_id`` follows within its first fields (newer logs open
# ``eval`` with ``eval_set_id`` / ``eval_id``).
_HEAD = re.compile(r'^\s*\{\s*"version":\s*\d+,\s*"status":\s*"\w+",\s*"eval":\s*\{')
_EVAL_HEAD_CHARS = 2_000

# Inspect provider -> (base URL of its Chat Completions endpoint); openai, anthropic and
# google are handled apart.
_CHAT_URLS = {
    "mistral": "https://api.mistral.ai/v1/chat/completions",
    "grok": "https://api.x.ai/v1/chat/completions",
    "groq": "https://api.groq.com/openai/v1/chat/completions",
    "together": "https://api.together.xyz/v1/chat/completions",
    "fireworks": "https://api.fireworks.ai/inference/v1/chat/completions",
    "openrouter": "https://openrouter.ai/api/v1/chat/completions",
    "perplexity": "https://api.perplexity.ai/chat/completions",
}
_ATTACHMENT = "attachment://"


def fits_text(text: str) -> bool:
    """Whether a file's head is an Inspect log's."""
    found = _HEAD.match(text)
    return found is not None and '"run_id"' in text[found.end() : found.end() + _EVAL_HEAD_CHARS]


def fits(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("eval"), dict)
        and isinstance(value.get("version"), int)
        and "status" in value
        and ("run_id" in value["eval"] or "eval_id" in value["eval"])
    )


def _url(provider: str, model: str, body: Any) -> str | None:
    if provider == "openai":
        responses = isinstance(body, dict) and "input" in body and "messages" not in body
        return "https://api.openai.com/v1/" + ("responses" if responses else "chat/completions")
    if provider == "anthropic":
        return "https://api.anthropic.com/v1/messages"
    if provider == "google":
        return f"https://generativelanguage.googleapis.com/v1beta/models/{model}:generateContent"
    return _CHAT_URLS.get(provider)


def _resolved(value: Any, attachments: dict[str, Any]) -> Any:
    """``value`` with every ``attachment://<hash>`` string Inspect wrote for a text it kept
    once put back (a hash the sample does not hold is left as it is)."""
    if isinstance(value, str):
        if value.startswith(_ATTACHMENT):
            found = attachments.get(value[len(_ATTACHMENT) :])
            return found if isinstance(found, str) else value
        return value
    if isinstance(value, list):
        return [_resolved(item, attachments) for item in value]
    if isinstance(value, dict):
        return {key: _resolved(item, attachments) for key, item in value.items()}
    return value


def _calls(
    stream: LogStream, document: dict[str, Any], first: int
) -> Iterator[Exchange | BadEntry]:
    samples = document.get("samples")
    number = first
    for s_index, sample in enumerate(samples if isinstance(samples, list) else []):
        if not isinstance(sample, dict):
            yield BadEntry(number, f"samples[{s_index}]", "expected a sample object")
            continue
        attachments = sample.get("attachments")
        attachments = attachments if isinstance(attachments, dict) else {}
        events = sample.get("events")
        for e_index, event in enumerate(events if isinstance(events, list) else []):
            if not isinstance(event, dict) or event.get("event") != "model":
                continue
            where = f"samples[{s_index}].events[{e_index}]"
            if event.get("cache") == "read":
                stream.skip("a generation Inspect answered from its own cache (no provider call)")
                continue
            call = event.get("call")
            if not isinstance(call, dict) or not isinstance(call.get("response"), dict):
                stream.skip("a generation with no provider call recorded (an error)")
                continue
            name = event.get("model")
            if not isinstance(name, str) or "/" not in name:
                yield BadEntry(number, f"{where}.model", "expected a provider/model name")
                number += 1
                continue
            provider, model = name.split("/", 1)
            request = _resolved(call.get("request"), attachments)
            if isinstance(request, dict):
                # A parameter the SDK did not send (its NOT_GIVEN) is logged as null
                # (``"tools": null``): not part of the request.
                request = {key: value for key, value in request.items() if value is not None}
            url = _url(provider, model, request)
            if url is None:
                stream.skip(f"a generation of Inspect provider {provider!r}, not mapped here")
                continue
            number += 1
            yield Exchange(
                line=number - 1,
                where=where,
                method="POST",
                url=url,
                request_headers={},
                request_body=request,
                status=200,
                response_headers={},
                response_body=_resolved(call["response"], attachments),
                timestamp=iso_moment(event.get("timestamp")),
            )


def read(stream: LogStream) -> Iterator[Item]:
    exchanges: list[Exchange | BadEntry] = []
    for line, document in documents(stream, fits, ("<document>", "not an Inspect log")):
        if not isinstance(document, dict):  # a line that is not JSON, or not a log: its error
            yield line, document
            continue
        stream.whole_document = True  # one document: calls numbered by position
        exchanges.extend(_calls(stream, document, len(exchanges) + 1))
    yield from read_exchanges(stream, numbered(exchanges))
