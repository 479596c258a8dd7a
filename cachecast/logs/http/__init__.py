"""Recorded HTTP exchanges (VCR cassettes, HAR files) -> canonical records.

Only calls to model endpoints are requests (``endpoints``: which endpoint, which provider);
everything else in a recording (auth, file uploads, listing models, telemetry) is counted in
``skipped``. Responses other than 2xx were not billed. Bodies are decoded by ``bodies``
(compression, server-sent events, Bedrock's binary event stream); the usage the provider
reported is read from the response, streamed or not, or its headers by ``response_usage``.

Conversation state the API keeps is followed within the recording (``state``): a Responses
request with ``previous_response_id`` gets the earlier input and output in front of its own; a
Gemini request naming ``cachedContent`` created earlier in the recording gets the cached
system instruction, tools and contents in front, with a cache breakpoint at their end (the
``cache_control`` mark the renderer reads on a Gemini content). A reference to state the
recording does not hold makes the request ``prompt_complete`` false, and so does a stored
request body whose length differs from the ``Content-Length`` the request was sent with (a
recording filter replaced it: the text in the file is not the prompt the provider counted).
The recording formats hand their exchanges over as ``exchange.Exchange`` objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cachecast.core.errors import LimitExceededError, Location, RecordFieldError
from cachecast.logs.batch import ANTHROPIC_RESULTS_DOWNLOAD, anthropic_results_lines
from cachecast.logs.canonical import (
    completions_prompt,
    make_record,
    response_tier,
    unrecorded_prompt,
)
from cachecast.logs.errors import LogRecordError
from cachecast.logs.http.bodies import decode_body, decode_bytes, decode_json
from cachecast.logs.http.conversations import (
    agent_completion_as_chat,
    conversation_as_chat,
    remember_agent,
)
from cachecast.logs.http.endpoints import Endpoint, model_endpoint
from cachecast.logs.http.exchange import (
    BadEntry,
    Exchange,
    body_rewritten,
    exchanges_of,
    http_date,
    numbered,
)
from cachecast.logs.http.interactions import (
    interactions_as_gemini,
    interactions_response_as_gemini,
)
from cachecast.logs.http.response_usage import (
    final_response,
    is_ollama_final,
    reported_usage,
    response_id,
    response_time,
)
from cachecast.logs.http.state import (
    ApiState,
    Chain,
    cache_creation_record,
    cache_lifetimes,
    cached_content_name,
    carried_reply,
    chain_response,
    gemini_listed,
    remember_response,
    with_cache,
)
from cachecast.logs.http.system_calls import ModelCall, call_request, check_sums, system_calls
from cachecast.logs.providers import is_router_slug
from cachecast.logs.stream import Item, LogStream, documents
from cachecast.logs.usage_fields import requested_ttl

__all__ = ["Exchange", "exchanges_of", "http_date", "read_documents", "read_exchanges"]


def read_documents(
    stream: LogStream,
    fits: Callable[[Any], bool],
    missing: tuple[str, str],
    entries_of: Callable[[Any], tuple[str, list[Any]] | None],
    parse: Callable[[Any, int, str], Exchange],
) -> Iterator[Item]:
    """A recording that is one JSON document (or one per line) listing its exchanges:
    ``entries_of`` gives a document's (field path of the list, the list), or None for a
    document that is itself one entry (at its line, field paths from its top); ``parse``
    reads one entry. An entry's ``line`` is its position in a whole document, else its
    document's line; its ``entry`` its position in the document (entries on one line told
    apart)."""
    for line, document in documents(stream, fits, missing):
        if isinstance(document, LogRecordError):
            yield line, document
            continue
        whole = stream.whole_document
        listed = entries_of(document)
        entries: Iterable[tuple[int, str, Any]] = [(line, "", document)]
        if listed is not None:
            path, values = listed
            entries = (
                (index + 1 if whole else line, f"{path}[{index}]", value)
                for index, value in enumerate(values)
            )
        yield from read_exchanges(stream, numbered(exchanges_of(stream, entries, parse)))


def read_exchanges(stream: LogStream, exchanges: Iterable[Exchange | BadEntry]) -> Iterator[Item]:
    """The model calls among ``exchanges`` as records (an unreadable exchange comes as its
    LogRecordError, in order). Recordings are read whole, so the lifetime of every Gemini cache
    (its TTL, updates and deletion later in the recording) is known before its creation
    is handed on."""
    state = ApiState()
    exchanges = list(exchanges)
    state.lifetimes = cache_lifetimes(exchanges)
    state.organization = first_organization(exchanges)
    for exchange in exchanges:
        if isinstance(exchange, BadEntry):
            yield exchange.line, stream.error(exchange.line, exchange.field, exchange.reason)
            continue
        endpoint = model_endpoint(exchange.method, exchange.url)
        if endpoint is None and _results_download(exchange):
            yield from _batch_results(stream, exchange)
            continue
        if endpoint is None:
            remember_agent(exchange, state.agents)  # a Mistral agent later calls name
            stream.skip("recorded call that is not a model endpoint")
            continue
        try:
            records = _records(stream, exchange, endpoint, state)
        except RecordFieldError as exc:
            field_path = (
                exc.field
                if exc.field.startswith(exchange.where)
                else f"{exchange.where}.{exc.field}"
            )
            yield exchange.line, stream.error(exchange.line, field_path, exc.reason)
            continue
        except LimitExceededError as exc:  # a body over its bound: named by its exchange
            field = exc.location.field or ""
            if not field.startswith(exchange.where):
                field = f"{exchange.where}.{field}" if field else exchange.where
            exc.location = Location(source=stream.source, line=exchange.line, field=field)
            exc.args = (exc.one_line(),)
            raise
        for record in records:
            yield exchange.line, record


# Response headers naming the account a provider answered for (OpenAI's, in its API
# reference; Anthropic's, as recordings show it). Prompt caches are not shared between
# organizations (docs/log-formats.md, "Request time and shared caches").
ORGANIZATION_HEADERS = ("openai-organization", "anthropic-organization-id")


def organization_of(headers: dict[str, str]) -> str | None:
    """The organization a recorded response names (``provider-header:value``), or None."""
    for name in ORGANIZATION_HEADERS:
        value = headers.get(name, "").strip()
        if value:
            return f"{name}:{value}"
    return None


def first_organization(exchanges: Iterable[Exchange | BadEntry]) -> str | None:
    """The first organization a recording's responses name: it stands for the exchanges
    that name none (a header a recording filter kept on some responses only), so that one
    recording is one scope unless its responses name different organizations."""
    for exchange in exchanges:
        if isinstance(exchange, Exchange):
            found = organization_of(exchange.response_headers)
            if found is not None:
                return found
    return None


def _results_download(exchange: Exchange) -> bool:
    """A recorded download of an Anthropic message batch's results."""
    # (by its path alone: a recording may keep no host, as WireMock and httpmock do)
    if exchange.method.upper() != "GET":
        return False
    return ANTHROPIC_RESULTS_DOWNLOAD.fullmatch(urlsplit(exchange.url).path) is not None


def _batch_results(stream: LogStream, exchange: Exchange) -> Iterator[Item]:
    """The batch results a download carries, each a usage-only record (the requests were
    sent when the batch was created: docs/log-formats.md, "Batch results downloaded")."""
    status = exchange.status
    if status is not None and not 200 <= status < 300:
        stream.skip(f"HTTP {status} response (not billed)")
        return
    where = f"{exchange.where}.response.body"
    try:
        text = decode_bytes(exchange.response_body, exchange.response_headers, where)
    except RecordFieldError as exc:
        yield exchange.line, stream.error(exchange.line, exc.field, exc.reason)
        return
    if not isinstance(text, str):
        yield exchange.line, stream.error(exchange.line, where, "expected JSON lines of results")
        return
    yield from anthropic_results_lines(stream, text, exchange.line, where)


# Endpoints whose responses carry no token counts: Anthropic's legacy Completion object is
# id, type, completion, stop_reason, model (Anthropic's API reference, "Create a Text
# Completion"); vLLM's native /generate answers {"text": [...]} (docs/log-formats.md).
_NO_USAGE = {
    "anthropic-complete": "missing: Anthropic's legacy Text Completions (/v1/complete) response"
    " carries no usage, so there is nothing to reconcile",
    "vllm-generate": "missing: vLLM's native /generate response carries no usage, so there is"
    " nothing to reconcile",
}


def titan_text_prompt(body: dict[str, Any]) -> dict[str, Any]:
    """An Amazon Titan Text InvokeModel body (``inputText``, optional
    ``textGenerationConfig``: AWS's "Amazon Titan Text models" parameters page) as the plain
    prompt it sends."""
    text = body.get("inputText")
    if not isinstance(text, str):
        raise RecordFieldError("request.body.inputText", f"expected a string, got {text!r:.60}")
    return {"prompt": text}


_COHERE_ROLES = {"USER": "user", "CHATBOT": "assistant", "SYSTEM": "system", "TOOL": "tool"}


def cohere_v1_as_chat(body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """A Cohere v1 ``/v1/chat`` body (``preamble``, ``chat_history``, ``message``) as the
    messages it stands for, and whether that is the whole prompt: documents, connectors'
    search results and tools are placed by Cohere's own template, which is not published."""
    messages: list[dict[str, Any]] = []
    if isinstance(body.get("preamble"), str):
        messages.append({"role": "system", "content": body["preamble"]})
    history = body.get("chat_history")
    for index, turn in enumerate(history if isinstance(history, list) else []):
        if not isinstance(turn, dict):
            raise RecordFieldError(f"request.body.chat_history[{index}]", "expected an object")
        role = _COHERE_ROLES.get(str(turn.get("role", "")).upper())
        text = turn.get("message")
        if role is None or not isinstance(text, str):
            raise RecordFieldError(
                f"request.body.chat_history[{index}]", "expected a role and a message text"
            )
        messages.append({"role": role, "content": text})
    if isinstance(body.get("message"), str):
        messages.append({"role": "user", "content": body["message"]})
    if not messages:
        raise RecordFieldError("request.body.message", "missing")
    chat: dict[str, Any] = {"messages": messages}
    if isinstance(body.get("model"), str):
        chat["model"] = body["model"]
    extra = ("documents", "connectors", "tools", "tool_results")
    return chat, not any(body.get(key) for key in extra)


def ollama_generate_as_chat(body: dict[str, Any]) -> dict[str, Any]:
    """An Ollama ``/api/generate`` body (``prompt``, optional ``system``: Ollama's API
    reference) as the messages it stands for; the model's template places them."""
    prompt = body.get("prompt")
    if not isinstance(prompt, str):
        raise RecordFieldError("request.body.prompt", f"expected a string, got {prompt!r:.60}")
    messages: list[dict[str, Any]] = []
    if isinstance(body.get("system"), str):
        messages.append({"role": "system", "content": body["system"]})
    messages.append({"role": "user", "content": prompt})
    chat: dict[str, Any] = {"messages": messages}
    if isinstance(body.get("model"), str):
        chat["model"] = body["model"]
    return chat


def _when(exchange: Exchange, final: Any) -> float | None:
    """When the call was made: the time the recording keeps for it, else the creation time
    its response body states, else a time the recording states for all its calls."""
    if exchange.timestamp is not None:
        return exchange.timestamp
    stated = response_time(final)
    return stated if stated is not None else exchange.recorded_at


def _records(
    stream: LogStream, exchange: Exchange, endpoint: Endpoint, state: ApiState
) -> list[dict[str, Any]]:
    """The exchange's request as a record; a Groq Compound request as the model calls it
    made (``system_calls``); none for a response that was not billed."""
    body = decode_json(exchange.request_body, exchange.request_headers, "request.body")
    if not isinstance(body, dict):
        raise RecordFieldError("request.body", "expected a JSON object")
    status = exchange.status
    if status is not None and not 200 <= status < 300:
        stream.skip(f"HTTP {status} response (not billed)")
        return []
    response = decode_body(exchange.response_body, exchange.response_headers, "response.body")
    whole = True
    if endpoint.api == "gemini-interactions":
        # Read as the generateContent call it stands for (cachecast.logs.http.interactions).
        body, whole = interactions_as_gemini(body)
        response = interactions_response_as_gemini(response)
        endpoint = Endpoint("gemini", endpoint.provider, endpoint.model)
    if endpoint.api == "mistral-conversations":
        # Read as the Chat Completions call it stands for (cachecast.logs.http.conversations).
        path = urlsplit(exchange.url).path
        body, response, whole = conversation_as_chat(
            body, path, response, state.conversations, state.agents
        )
        endpoint = Endpoint("chat", endpoint.provider, endpoint.model)
    elif endpoint.api == "mistral-agents":
        body, whole = agent_completion_as_chat(body, state.agents)
        endpoint = Endpoint("chat", endpoint.provider, endpoint.model)
    if endpoint.api in ("gemini", "gemini-cache"):
        body = gemini_listed(body)
    if endpoint.api == "gemini-cache":
        created = cache_creation_record(exchange, body, response, state)
        return [] if created is None else [created]
    if endpoint.api.startswith("ollama-") and not is_ollama_final(
        final_response(response, endpoint.api)
    ):
        # /api/chat is also a common route of web apps' own: only Ollama answers with its
        # final ``done`` object (cachecast.logs.http.endpoints).
        stream.skip("recorded call that is not a model endpoint")
        return []
    # A recording filter may replace the body it stores (secrets, long prompts): the stored
    # body is then not what was sent, whose length the request's Content-Length still gives.
    complete = whole and not body_rewritten(exchange)
    if endpoint.api == "cohere-v1":
        body, whole = cohere_v1_as_chat(body)
        complete = complete and whole
    elif endpoint.api == "prompt":
        # A fill-in-the-middle call (Mistral's /v1/fim/completions, OpenAI's legacy
        # ``suffix``) sends text after the prompt in a template of the provider's: the
        # prompt read is not all of it.
        complete = complete and not body.get("suffix")
        body = completions_prompt(body)
    elif endpoint.api == "bedrock-invoke" and "inputText" in body and "messages" not in body:
        body = titan_text_prompt(body)
    elif endpoint.api == "ollama-generate":
        # A raw prompt or a template of the caller's own is placed as sent, not by the
        # model's template the messages stand for.
        complete = complete and not body.get("raw") and not body.get("template")
        body = ollama_generate_as_chat(body)
    cached_content: str | None = None
    model = body.get("model") if isinstance(body.get("model"), str) else endpoint.model
    chain: Chain | None = None
    if endpoint.api == "responses":
        chain = chain_response(body, state)
        body = chain.body
        complete = complete and chain.complete
    elif endpoint.api == "gemini" and (named := cached_content_name(body)) is not None:
        cached_content = named
        body, merged = with_cache(body, state)
        complete = complete and merged
    final = final_response(response, endpoint.api)
    served = final.get("model") if isinstance(final, dict) else None
    # Azure OpenAI serves the deployment's model whatever the body's ``model`` says (an SDK
    # may send any name there): the response names the model served, else the deployment
    # stands for it (docs/log-formats.md, "Recorded HTTP").
    azure_deployment = endpoint.provider == "azure" and endpoint.model is not None
    if azure_deployment:
        model = served if isinstance(served, str) else endpoint.model
    elif isinstance(served, str) and (model is None or is_router_slug(model)):
        # A router's slug (OpenRouter's ``openrouter/auto``) names no model: the response's
        # ``model`` names the one it routed to, which bills the call (docs/log-formats.md,
        # "Recorded HTTP").
        model = served
    if chain is not None and chain.parent is not None:
        # The items taken over were looked at for cache marks when their turns were read.
        ttl = requested_ttl({**body, "input": chain.own}, chain.parent.ttls)
    else:
        ttl = requested_ttl(body)
    observed = reported_usage(endpoint, final, response, exchange.response_headers, write_ttl=ttl)
    calls = system_calls(endpoint.provider, final)
    check_sums(calls, observed)
    if observed is None and endpoint.api in _NO_USAGE:
        raise RecordFieldError("response.body.usage", _NO_USAGE[endpoint.api])
    if chain is not None and isinstance(final, dict):
        remember_response(chain, final, state)
    request_id = response_id(exchange.response_headers, final)
    if request_id is None and exchange.entry is not None:
        # The default id (file:line) is the same for every entry of a one-line HAR.
        request_id = f"{Path(stream.source).name}:{exchange.line} entry {exchange.entry}"
    record = make_record(
        request=body,
        model=model,
        provider=endpoint.provider,
        timestamp=_when(exchange, final),
        request_id=request_id,
        observed=observed,
        prompt_complete=complete,
        service_tier=response_tier(final),
    )
    organization = organization_of(exchange.response_headers) or state.organization
    if organization is not None:
        # The cache's isolation scope (docs/log-formats.md, "Request time and shared
        # caches"): kept as a keyed hash by the reader (``record_fields.scope_of``).
        record["organization"] = organization
    if cached_content is not None:
        record["cached_content"] = cached_content
    if endpoint.api == "chat":
        carried = carried_reply(body, response, state)
        if carried is not None:
            record["carries_reply"] = carried
    if chain is not None:
        _continued(stream, state, chain, record)
    if calls:
        return [
            _call_record(stream, exchange, endpoint, record, calls, index)
            for index in range(len(calls))
        ]
    return [record]


def _call_record(
    stream: LogStream,
    exchange: Exchange,
    endpoint: Endpoint,
    record: dict[str, Any],
    calls: tuple[ModelCall, ...],
    index: int,
) -> dict[str, Any]:
    """A Compound request's ``index``-th model call as a request of its own to that model,
    made when and for whom the Compound request was, its prompt not in the recording
    (``system_calls``)."""
    call = calls[index]
    system = str(record.get("model", "a Compound system"))
    request_id = record.get("request_id")
    made = make_record(
        request=unrecorded_prompt(
            stream.source, exchange.line, call_request(system, index, len(calls), call.model)
        ),
        model=call.model,
        provider=endpoint.provider,
        timestamp=record.get("timestamp"),
        request_id=None if request_id is None else f"{request_id} call {index + 1}",
        observed=call.observed,
        prompt_complete=False,
    )
    if "organization" in record:
        made["organization"] = record["organization"]
    if "service_tier" in record:
        made["service_tier"] = record["service_tier"]
    return made


def _continued(stream: LogStream, state: ApiState, chain: Chain, record: dict[str, Any]) -> None:
    """Tell the sanitizer which leading input items of ``record`` the record before it
    (checked already) holds, so that a chain of N requests is checked in N steps of its new
    items, not N whole histories; and remember this record for the next one."""
    latest = state.latest
    if (
        chain.earlier is not None
        and latest is not None
        and latest["request"].get("input") is chain.earlier
    ):
        stream.continues(record, latest, len(chain.earlier))
    state.latest = record
