"""Every usage report a log carries -> one :class:`ObservedUsage`.

The normalized form: ``input_tokens`` is the whole prompt (cached tokens included),
``cache_read_tokens`` / ``cache_write_tokens`` are parts of it, ``cache_write_by_ttl`` splits
the writes by TTL option (``5m``, ``1h``), ``output_tokens`` includes reasoning / thinking
tokens wherever the provider bills them as output, and ``cost`` is a gateway's reported
charge (OpenRouter's ``usage.cost``), never a price-table estimate.

Each provider or tool reports differently (docs/log-formats.md, "Usage conventions", gives
each rule with its source): whether input includes cached tokens (OpenAI, Gemini, DeepSeek,
OpenTelemetry, OpenInference, LangChain/LangSmith, Codex: yes; Anthropic, Bedrock, Langfuse's
``input`` key: no), and whether output includes reasoning (Gemini's ``thoughtsTokenCount``
and Langfuse's ``output_reasoning`` are separate and added here). :func:`normalize_usage`
picks the convention from the keys present unless the caller names it.

A wrapper record may instead carry the normalized form itself under ``observed``
(:func:`canonical_observed`); the format adapters in ``cachecast.logs`` write that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from decimal import Decimal
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.core.limits import check_tokens
from cachecast.logs import usage_fields
from cachecast.logs.types import ObservedUsage
from cachecast.logs.usage_fields import requested_ttl, splits_writes, with_write_ttl

# The field readers every convention uses (usage_fields), under short names.
_int, _count, _object = usage_fields.count_value, usage_fields.count_at, usage_fields.object_at
_sum, _cost = usage_fields.total_of, usage_fields.amount

MAX_ITERATIONS = 1000  # sampling iterations of one request (compaction, server tools)
CANONICAL_KEYS = (
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_write_by_ttl",
    "output_tokens",
    "cost",
    "contradiction",
    "iterations",
    "server_tool_calls",
    "ignored",
)


def observed_usage(record: dict[str, Any], api: str) -> ObservedUsage | None:
    """The usage a log record reports, normalized; None where it reports none."""
    canonical = record.get("observed")
    if canonical is not None:
        return canonical_observed(canonical)
    found = find_usage(record)
    if found is None:
        return None
    usage, path = found
    request = record.get("request")
    ttl = requested_ttl(request) if isinstance(request, dict) else None
    return normalize_usage(usage, api=api, path=path, write_ttl=ttl)


def find_usage(record: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """The usage object of a wrapper record and its path: ``usage``, ``response.usage``,
    ``response.usageMetadata``, ``response.body.usage`` (OpenAI batch output lines) or
    ``usageMetadata``; None where there is none (an empty object counts as none)."""
    usage: Any = record.get("usage")
    path = "usage"
    response = record.get("response")
    if usage is None and isinstance(response, dict):
        if "usage" in response:
            usage, path = response["usage"], "response.usage"
        elif "usageMetadata" in response:
            usage, path = response["usageMetadata"], "response.usageMetadata"
        elif isinstance(response.get("body"), dict):
            usage, path = response["body"].get("usage"), "response.body.usage"
    if usage is None and "usageMetadata" in record:
        usage, path = record["usageMetadata"], "usageMetadata"
    if usage is None:
        return None
    if not isinstance(usage, dict):
        raise RecordFieldError(path, f"expected an object, got {type(usage).__name__}")
    if not usage:
        return None
    return usage, path


# --- the canonical form ------------------------------------------------------------------


def canonical_observed(value: Any, path: str = "observed") -> ObservedUsage:
    """An ``observed`` object (the normalized form, as adapters write it) as ObservedUsage."""
    if not isinstance(value, dict):
        raise RecordFieldError(path, f"expected an object, got {type(value).__name__}")
    unknown = sorted(set(value) - set(CANONICAL_KEYS))
    if unknown:
        raise RecordFieldError(
            f"{path}.{unknown[0]}", f"unknown key; expected one of {', '.join(CANONICAL_KEYS)}"
        )
    by_ttl: dict[str, int] = {}
    split = value.get("cache_write_by_ttl")
    if split is not None:
        if not isinstance(split, dict):
            raise RecordFieldError(f"{path}.cache_write_by_ttl", "expected an object")
        for ttl, tokens in split.items():
            count = _int(tokens, f"{path}.cache_write_by_ttl.{ttl}")
            if count:
                by_ttl[str(ttl)] = count
    observed = ObservedUsage(
        input_tokens=_count(value, "input_tokens", path),
        cache_read_tokens=_count(value, "cache_read_tokens", path),
        cache_write_tokens=_count(value, "cache_write_tokens", path),
        cache_write_by_ttl=by_ttl,
        output_tokens=_count(value, "output_tokens", path),
        cost=_cost(value.get("cost"), f"{path}.cost"),
        server_tool_calls=_count(value, "server_tool_calls", path) or 0,
    )
    iterations = value.get("iterations")
    if iterations is not None:
        if not isinstance(iterations, list) or len(iterations) > MAX_ITERATIONS:
            raise RecordFieldError(
                f"{path}.iterations", f"expected a list of at most {MAX_ITERATIONS} usages"
            )
        parts = []
        for index, item in enumerate(iterations):
            where = f"{path}.iterations[{index}]"
            if isinstance(item, dict) and "iterations" in item:
                raise RecordFieldError(f"{where}.iterations", "iterations do not nest")
            parts.append(canonical_observed(item, where))
        observed = replace(observed, iterations=tuple(parts))
    ignored = value.get("ignored")
    if ignored is not None:
        if not isinstance(ignored, list) or not all(isinstance(item, str) for item in ignored):
            raise RecordFieldError(f"{path}.ignored", "expected a list of strings")
        observed = replace(observed, ignored=tuple(item[:300] for item in ignored[:MAX_IGNORED]))
    contradiction = value.get("contradiction")
    if contradiction is not None:
        if not isinstance(contradiction, str):
            raise RecordFieldError(f"{path}.contradiction", "expected a string")
        return replace(observed, contradiction=contradiction[:500])
    _check_parts(observed, path)
    return observed


def to_canonical(observed: ObservedUsage) -> dict[str, Any]:
    """The ``observed`` object for a wrapper record (the inverse of canonical_observed)."""
    out: dict[str, Any] = {}
    for key in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens"):
        value = getattr(observed, key)
        if value is not None:
            out[key] = value
    if observed.cache_write_by_ttl:
        out["cache_write_by_ttl"] = dict(observed.cache_write_by_ttl)
    if observed.cost is not None:
        out["cost"] = str(observed.cost)
    if observed.contradiction is not None:
        out["contradiction"] = observed.contradiction
    if observed.iterations:
        out["iterations"] = [to_canonical(part) for part in observed.iterations]
    if observed.server_tool_calls:
        out["server_tool_calls"] = observed.server_tool_calls
    if observed.ignored:
        out["ignored"] = list(observed.ignored)
    return out


# --- provider and tool conventions ---------------------------------------------------------


def normalize_usage(
    usage: Mapping[str, Any],
    *,
    convention: str | None = None,
    api: str | None = None,
    path: str = "usage",
    write_ttl: str | None = None,
) -> ObservedUsage:
    """Normalize one usage object. ``convention`` names its convention (a key of
    :data:`CONVENTIONS`); None picks it from the keys present (``api`` decides between
    Anthropic's and OpenAI Responses' ``input_tokens``, which mean different things).

    ``write_ttl``: the one TTL the request asked for on every cache mark
    (:func:`requested_ttl`); writes the usage does not split by TTL are that TTL's, not the
    default 5 minutes (a 1-hour write costs 2x input, a 5-minute one 1.25x)."""
    name = convention or detect_convention(usage, api, path)
    try:
        normalizer = CONVENTIONS[name]
    except KeyError:
        raise ValueError(f"unknown usage convention {name!r}") from None
    observed = _flag_contradiction(_tolerant(normalizer, name, usage, path), path)
    if write_ttl is not None and write_ttl != "5m" and not splits_writes(usage):
        observed = with_write_ttl(observed, write_ttl)
    return observed


def detect_convention(usage: Mapping[str, Any], api: str | None, path: str = "usage") -> str:
    """Which convention a usage object follows, from its keys."""
    keys = usage.keys()
    for key in keys:
        if key.startswith("gen_ai.usage."):
            return "otel"
        if key.startswith("llm.token_count."):
            return "openinference"
    if {"promptTokenCount", "candidatesTokenCount", "cachedContentTokenCount"} & keys or {
        "prompt_token_count",
        "candidates_token_count",
    } & keys:
        return "gemini"
    if {"inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens"} & keys:
        return "bedrock"
    if "billed_units" in keys:
        return "cohere"
    if {"prompt_cache_hit_tokens", "prompt_cache_miss_tokens"} & keys:
        return "deepseek"
    if {"input_token_details", "output_token_details"} & keys:
        return "langchain"
    if "cached_input_tokens" in keys:
        return "codex"
    if {"prompt_tokens", "completion_tokens"} & keys:
        return "openai-chat"
    if api == "anthropic" or {"cache_creation_input_tokens", "cache_read_input_tokens"} & keys:
        return "anthropic"
    if {"input_tokens", "output_tokens"} & keys:
        return "openai-responses"
    if {"input", "output"} & keys:
        return "langfuse"
    if "total_tokens" in keys or "totalTokenCount" in keys:
        return "openai-chat"  # only a total: nothing to split, every count stays unknown
    raise RecordFieldError(
        path,
        "no usage counts found (keys: "
        + ", ".join(sorted(keys)[:8])
        + "); expected one provider's usage object (docs/log-formats.md)",
    )


def _gemini(usage: Mapping[str, Any], path: str) -> ObservedUsage:
    # promptTokenCount includes cachedContentTokenCount; thoughtsTokenCount is billed as
    # output but reported apart from candidatesTokenCount; tool-use prompt tokens are
    # input the service added (search results, code output) and billed as input.
    def get(camel: str, snake: str) -> int | None:
        value = _count(usage, camel, path)
        return value if value is not None else _count(usage, snake, path)

    prompt = get("promptTokenCount", "prompt_token_count")
    tool_prompt = get("toolUsePromptTokenCount", "tool_use_prompt_token_count")
    candidates = get("candidatesTokenCount", "candidates_token_count")
    thoughts = get("thoughtsTokenCount", "thoughts_token_count")
    # An absent cachedContentTokenCount is a read of 0, never "not reported": the API's JSON
    # is protobuf's mapping, which omits a field at its default value (docs/log-formats.md,
    # "Absent cache reads").
    return ObservedUsage(
        input_tokens=_sum(prompt, tool_prompt),
        cache_read_tokens=get("cachedContentTokenCount", "cached_content_token_count") or 0,
        output_tokens=_sum(candidates, thoughts),
    )


def _bedrock(usage: Mapping[str, Any], path: str) -> ObservedUsage:
    # Converse: inputTokens excludes cache reads and writes (TokenUsage, Bedrock API
    # reference); cacheDetails splits the writes by TTL.
    uncached = _count(usage, "inputTokens", path)
    read = _count(usage, "cacheReadInputTokens", path)
    written = _count(usage, "cacheWriteInputTokens", path)
    by_ttl: dict[str, int] = {}
    details = usage.get("cacheDetails")
    if details is not None:
        if not isinstance(details, list):
            raise RecordFieldError(f"{path}.cacheDetails", "expected a list")
        for index, detail in enumerate(details):
            where = f"{path}.cacheDetails[{index}]"
            if not isinstance(detail, dict):
                raise RecordFieldError(where, "expected an object")
            ttl = detail.get("ttl")
            if not isinstance(ttl, str):
                raise RecordFieldError(f"{where}.ttl", "expected '5m' or '1h'")
            tokens = _count(detail, "inputTokens", where) or 0
            if tokens:
                by_ttl[ttl] = by_ttl.get(ttl, 0) + tokens
    elif written:
        by_ttl["5m"] = written  # without the split, writes are the default 5-minute TTL
    if written is None and by_ttl:
        written = sum(by_ttl.values())
    # An absent cacheReadInputTokens is a read of 0: Converse leaves the cache counts out of a
    # response to a request without a cache point (which can read nothing) and writes them,
    # 0 included, where the request has one (recordings; docs/log-formats.md, "Absent cache
    # reads").
    return ObservedUsage(
        input_tokens=None if uncached is None else uncached + (read or 0) + (written or 0),
        cache_read_tokens=read or 0,
        cache_write_tokens=written or 0,
        cache_write_by_ttl=by_ttl,
        output_tokens=_count(usage, "outputTokens", path),
    )


def _deepseek(usage: Mapping[str, Any], path: str) -> ObservedUsage:
    # prompt_tokens = prompt_cache_hit_tokens + prompt_cache_miss_tokens
    hit = _count(usage, "prompt_cache_hit_tokens", path)
    miss = _count(usage, "prompt_cache_miss_tokens", path)
    prompt = _count(usage, "prompt_tokens", path)
    return ObservedUsage(
        input_tokens=prompt if prompt is not None else _sum(hit, miss),
        cache_read_tokens=hit,
        output_tokens=_count(usage, "completion_tokens", path),
    )


def _otel(usage: Mapping[str, Any], path: str) -> ObservedUsage:
    # OpenTelemetry GenAI: gen_ai.usage.input_tokens includes cached tokens; the deprecated
    # names (prompt_tokens, cache_read_input_tokens, ...) are read as their successors.
    def first(*keys: str) -> int | None:
        for key in keys:
            value = _count(usage, key, path)
            if value is not None:
                return value
        return None

    return ObservedUsage(
        input_tokens=first("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
        cache_read_tokens=first(
            "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens"
        ),
        cache_write_tokens=first(
            "gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens"
        ),
        output_tokens=first("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
    )


def _openinference(usage: Mapping[str, Any], path: str) -> ObservedUsage:
    # llm.token_count.prompt includes the cache_read / cache_write details.
    return ObservedUsage(
        input_tokens=_count(usage, "llm.token_count.prompt", path),
        cache_read_tokens=_count(usage, "llm.token_count.prompt_details.cache_read", path),
        cache_write_tokens=_count(usage, "llm.token_count.prompt_details.cache_write", path),
        output_tokens=_count(usage, "llm.token_count.completion", path),
    )


def _langchain(usage: Mapping[str, Any], path: str) -> ObservedUsage:
    # LangChain / LangSmith usage_metadata: input_tokens is the sum of every input type
    # (cache reads and creation included); output_tokens includes reasoning.
    details = _object(usage, "input_token_details", path)
    where = f"{path}.input_token_details"
    by_ttl = _ttl_split(details, where)
    written = _count(details, "cache_creation", where)
    if written is None and by_ttl:
        written = sum(by_ttl.values())
    elif written and not by_ttl:
        by_ttl["5m"] = written
    return ObservedUsage(
        input_tokens=_count(usage, "input_tokens", path),
        cache_read_tokens=_count(details, "cache_read", where),
        cache_write_tokens=written,
        cache_write_by_ttl=by_ttl,
        output_tokens=_count(usage, "output_tokens", path),
    )


def _codex(usage: Mapping[str, Any], path: str) -> ObservedUsage:
    # Codex CLI token_count: cached_input_tokens is a subset of input_tokens and
    # reasoning_output_tokens a subset of output_tokens (total = input + output). Recent
    # versions add cache_write_input_tokens, also inside input_tokens (codex-rs protocol's
    # TokenUsage; docs/clients.md, "Format variants"): the tokens a request wrote to a cache
    # a contract bills writes of (GPT-5.6 and GPT-6's explicit caching); absent in older
    # rollouts, where the writes are not reported.
    return ObservedUsage(
        input_tokens=_count(usage, "input_tokens", path),
        cache_read_tokens=_count(usage, "cached_input_tokens", path),
        cache_write_tokens=_count(usage, "cache_write_input_tokens", path),
        output_tokens=_count(usage, "output_tokens", path),
    )


def _openai_chat(usage: Mapping[str, Any], path: str) -> ObservedUsage:
    # OpenAI Chat Completions and the many APIs that copy it (xAI, Moonshot, OpenRouter,
    # LiteLLM): prompt_tokens includes cached tokens, completion_tokens includes reasoning.
    # LiteLLM adds Anthropic's cache_read/cache_creation_input_tokens at the top level and
    # counts both inside prompt_tokens; Moonshot reports cached_tokens at the top level.
    details = _object(usage, "prompt_tokens_details", path)
    where = f"{path}.prompt_tokens_details"
    read = _count(details, "cached_tokens", where)
    if read is None:
        read = _count(usage, "cache_read_input_tokens", path)
    if read is None:
        read = _count(usage, "cached_tokens", path)
    written = _count(details, "cache_write_tokens", where)
    if written is None:
        written = _count(details, "cache_creation_tokens", where)
    if written is None:
        written = _count(usage, "cache_creation_input_tokens", path)
    split = _object(details, "cache_creation_token_details", where)
    by_ttl = _ttl_split(split, f"{where}.cache_creation_token_details")
    prompt = _count(usage, "prompt_tokens", path)
    completion = _count(usage, "completion_tokens", path)
    # Reasoning is inside completion_tokens (OpenAI, DeepSeek, OpenRouter, Z.ai), except
    # where the total says otherwise: xAI's chat completions report total = prompt +
    # completion + reasoning, reasoning billed as output but outside completion_tokens.
    reasoning = _count(
        _object(usage, "completion_tokens_details", path),
        "reasoning_tokens",
        f"{path}.completion_tokens_details",
    )
    total = _count(usage, "total_tokens", path)
    if (
        reasoning
        and completion is not None
        and prompt is not None
        and total == prompt + completion + reasoning
    ):
        completion += reasoning
    return ObservedUsage(
        input_tokens=prompt,
        cache_read_tokens=read,
        cache_write_tokens=written,
        cache_write_by_ttl=by_ttl,
        output_tokens=completion,
        cost=_gateway_cost(usage.get("cost"), f"{path}.cost"),
    )


def _gateway_cost(value: Any, path: str) -> Decimal | None:
    # OpenRouter writes its charge as a number; Perplexity as an object whose ``total_cost``
    # is its charge (input_tokens_cost + output_tokens_cost + request_cost = total_cost in
    # the recordings: docs/log-formats.md, "Optional fields").
    if isinstance(value, dict):
        return _cost(value.get("total_cost"), f"{path}.total_cost")
    return _cost(value, path)


def _cohere(usage: Mapping[str, Any], path: str) -> ObservedUsage:
    # Cohere (v2 ``usage``, v1 ``meta``): ``billed_units.input_tokens`` is what is billed;
    # ``tokens.input_tokens`` counts the prompt after Cohere's chat template (its own
    # preamble and turn markers, unbilled); ``cached_tokens`` is documented only as "the
    # number of prompt tokens that hit the inference cache" (docs/log-formats.md, Cohere).
    # It is counted on the templated prompt, so it is read onto billed units [U]: the
    # template's tokens come first (its preamble opens the prompt), so a prefix hit covers
    # them before any billed token, and the billed tokens read are what the hit covers past
    # them: cached - (tokens - billed), within [0, billed]. Recorded: 2,928 cached of 2,935
    # templated, 2,406 billed -> 2,399 read; 1,376 cached of 1,476 templated, 44 billed ->
    # 0 (the hit ended inside the template). Without the templated count the template's
    # length is unknown and the read is the cached count, at most the billed input [U].
    billed = _object(usage, "billed_units", path)
    where = f"{path}.billed_units"
    billed_input = _count(billed, "input_tokens", where)
    cached = _count(usage, "cached_tokens", path)
    templated = _count(_object(usage, "tokens", path), "input_tokens", f"{path}.tokens")
    read: int | None = 0
    if cached is not None and billed_input is not None:
        template = templated - billed_input if templated is not None else 0
        read = min(billed_input, max(0, cached - max(0, template)))
    elif cached:
        read = None  # a hit on an input of unknown size: unknown in billed units
    return ObservedUsage(
        input_tokens=billed_input,
        cache_read_tokens=read,
        output_tokens=_count(billed, "output_tokens", where),
    )


def _anthropic(usage: Mapping[str, Any], path: str) -> ObservedUsage:
    # Anthropic Messages: input_tokens excludes cache reads and writes; cache_creation
    # splits the writes by TTL (ephemeral_5m / ephemeral_1h). With compaction, ``iterations``
    # lists every sampling iteration (the compaction, then the message), each with usage of
    # the same shape; the top-level counts are the message's only. The request's usage is the
    # sum of its iterations, and each is billed as the request it is.
    iterations = usage.get("iterations")
    if iterations is not None:
        where = f"{path}.iterations"
        if not isinstance(iterations, list) or len(iterations) > MAX_ITERATIONS:
            raise RecordFieldError(where, f"expected a list of at most {MAX_ITERATIONS} usages")
        parts = []
        for index, item in enumerate(iterations):
            if not isinstance(item, dict):
                raise RecordFieldError(f"{where}[{index}]", "expected an object")
            parts.append(
                _anthropic(
                    {k: v for k, v in item.items() if k != "iterations"}, f"{where}[{index}]"
                )
            )
        if parts:
            return _summed(tuple(parts))
    uncached = _count(usage, "input_tokens", path)
    written = _count(usage, "cache_creation_input_tokens", path) or 0
    # Absent or null: not reported (None), not 0 (docs/log-formats.md, "Absent cache reads").
    read = _count(usage, "cache_read_input_tokens", path)
    by_ttl: dict[str, int] = {}
    if usage.get("cache_creation") is not None:
        by_ttl = _ttl_split(_object(usage, "cache_creation", path), f"{path}.cache_creation")
    elif written:
        by_ttl["5m"] = written  # without the split, writes are the default 5-minute TTL
    return ObservedUsage(
        input_tokens=None if uncached is None else uncached + written + (read or 0),
        cache_read_tokens=read,
        cache_write_tokens=written,
        cache_write_by_ttl=by_ttl,
        output_tokens=_count(usage, "output_tokens", path),
        server_tool_calls=_server_tool_calls(usage, path),
    )


def _server_tool_calls(usage: Mapping[str, Any], path: str) -> int:
    """The calls Anthropic's server tools made (``server_tool_use``: ``web_search_requests``,
    ``web_fetch_requests``, ...), summed; 0 where none is reported."""
    counts = usage.get("server_tool_use")
    if not isinstance(counts, dict):
        return 0
    where = f"{path}.server_tool_use"
    return sum(_count(counts, key, where) or 0 for key in counts if key.endswith("_requests"))


def _summed(parts: tuple[ObservedUsage, ...]) -> ObservedUsage:
    by_ttl: dict[str, int] = {}
    for part in parts:
        for ttl, tokens in part.cache_write_by_ttl.items():
            by_ttl[ttl] = by_ttl.get(ttl, 0) + tokens
    return ObservedUsage(
        input_tokens=_sum(*(p.input_tokens for p in parts)),
        cache_read_tokens=_sum(*(p.cache_read_tokens for p in parts)),
        cache_write_tokens=_sum(*(p.cache_write_tokens for p in parts)),
        cache_write_by_ttl=by_ttl,
        output_tokens=_sum(*(p.output_tokens for p in parts)),
        iterations=parts,
    )


def _openai_responses(usage: Mapping[str, Any], path: str) -> ObservedUsage:
    # OpenAI Responses: input_tokens includes cached; output_tokens includes reasoning.
    details = _object(usage, "input_tokens_details", path)
    where = f"{path}.input_tokens_details"
    return ObservedUsage(
        input_tokens=_count(usage, "input_tokens", path),
        cache_read_tokens=_count(details, "cached_tokens", where),
        cache_write_tokens=_count(details, "cache_write_tokens", where),
        output_tokens=_count(usage, "output_tokens", path),
    )


def _langfuse(usage: Mapping[str, Any], path: str) -> ObservedUsage:
    # Langfuse usageDetails: free-form usage types that Langfuse sums to the total, so they
    # are disjoint: ``input`` is uncached input only, ``input_cache_read`` etc. are added to
    # it, ``output_reasoning`` to ``output``. Where a ``total`` is given and equals
    # input + output alone, the other keys are details inside them instead (OpenInference's
    # prompt_details / completion_details, as some integrations map them).
    counts: dict[str, int] = {}
    for key in usage:
        value = _count(usage, key, path)
        if value is not None:
            counts[key] = value
    total = counts.pop("total", None)
    inputs = {k: v for k, v in counts.items() if _is_input_key(k)}
    outputs = {k: v for k, v in counts.items() if k not in inputs}
    reads = [v for k, v in inputs.items() if "cache_read" in k or "cached" in k]
    read = sum(reads) if reads else None  # no read key: not reported, not 0
    written = sum(v for k, v in inputs.items() if "cache_creation" in k or "cache_write" in k)
    base_input = counts.get("input")
    base_output = counts.get("output")
    disjoint = sum(counts.values())
    if total is None or total == disjoint:
        input_tokens = sum(inputs.values()) if inputs else None
        output_tokens = sum(outputs.values()) if outputs else None
    elif total == (base_input or 0) + (base_output or 0):
        input_tokens, output_tokens = base_input, base_output
    else:
        raise RecordFieldError(
            f"{path}.total",
            f"{total} is neither the sum of the usage types ({disjoint}) nor input + output "
            f"({(base_input or 0) + (base_output or 0)}): the keys' meaning is ambiguous",
        )
    return ObservedUsage(
        input_tokens=input_tokens,
        cache_read_tokens=read,
        cache_write_tokens=written,
        output_tokens=output_tokens,
    )


def _ttl_split(split: Mapping[str, Any], path: str) -> dict[str, int]:
    """Anthropic's cache writes by TTL (``ephemeral_5m/1h_input_tokens``), as the API, LiteLLM
    and LangChain pass them on (the LangSmith JS SDK spells the second ``1hr``)."""
    by_ttl: dict[str, int] = {}
    for key, ttl in (
        ("ephemeral_5m_input_tokens", "5m"),
        ("ephemeral_1h_input_tokens", "1h"),
        ("ephemeral_1hr_input_tokens", "1h"),
    ):
        value = _count(split, key, path)
        if value:
            by_ttl[ttl] = by_ttl.get(ttl, 0) + value
    return by_ttl


def _is_input_key(key: str) -> bool:
    return key.startswith(("input", "prompt")) or any(
        part in key for part in ("cache_read", "cache_creation", "cache_write", "cached")
    )


# The keys of each convention whose counts make the request's usage: one of a shape the
# convention does not know drops the record (its prompt, reads or writes are unknown). Every
# other key is optional (details, splits, a gateway's cost, server tool counts): one of an
# unexpected shape is left out and named (``ObservedUsage.ignored``), the request read without
# it. None: every key is a count (the span attribute conventions, Langfuse's usage types).
COUNTED_KEYS: dict[str, frozenset[str] | None] = {
    "gemini": frozenset(
        {
            "promptTokenCount",
            "prompt_token_count",
            "candidatesTokenCount",
            "candidates_token_count",
            "cachedContentTokenCount",
            "cached_content_token_count",
            "toolUsePromptTokenCount",
            "tool_use_prompt_token_count",
            "thoughtsTokenCount",
            "thoughts_token_count",
        }
    ),
    # cacheDetails gives the writes where cacheWriteInputTokens is absent
    "bedrock": frozenset(
        {
            "inputTokens",
            "outputTokens",
            "cacheReadInputTokens",
            "cacheWriteInputTokens",
            "cacheDetails",
        }
    ),
    "deepseek": frozenset(
        {
            "prompt_tokens",
            "completion_tokens",
            "prompt_cache_hit_tokens",
            "prompt_cache_miss_tokens",
        }
    ),
    "otel": None,
    "openinference": None,
    "langchain": frozenset({"input_tokens", "output_tokens"}),
    "codex": frozenset(
        {"input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens"}
    ),
    "openai-chat": frozenset(
        {
            "prompt_tokens",
            "completion_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
            "cached_tokens",
            "prompt_tokens_details",  # holds the cache read (cached_tokens)
        }
    ),
    "cohere": frozenset({"billed_units"}),
    # cache_creation splits the writes by TTL, which prices them (5m 1.25x, 1h 2x)
    "anthropic": frozenset(
        {
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "cache_creation",
        }
    ),
    # input_tokens_details holds the cache read (cached_tokens)
    "openai-responses": frozenset({"input_tokens", "output_tokens", "input_tokens_details"}),
    "langfuse": None,
}
MAX_IGNORED = 20  # optional fields left out of one usage (each a key of the object)


def _tolerant(
    normalizer: Callable[[Mapping[str, Any], str], ObservedUsage],
    name: str,
    usage: Mapping[str, Any],
    path: str,
) -> ObservedUsage:
    """``normalizer(usage)``, leaving out each optional key (not in :data:`COUNTED_KEYS`)
    whose value it cannot read, named in ``ignored``: a bad optional field costs the field,
    never the request (a Perplexity ``cost`` object where OpenRouter writes a number)."""
    counted = COUNTED_KEYS.get(name)
    ignored: list[str] = []
    current = usage
    while True:
        try:
            observed = normalizer(current, path)
        except RecordFieldError as exc:
            key = _top_key(exc.field, path, current)
            if counted is None or key is None or key in counted or len(ignored) >= MAX_IGNORED:
                raise
            ignored.append(f"{exc.field}: {exc.reason}"[:300])
            current = {k: v for k, v in current.items() if k != key}
            continue
        return replace(observed, ignored=tuple(ignored)) if ignored else observed


def _top_key(field: str, path: str, usage: Mapping[str, Any]) -> str | None:
    """The key of ``usage`` (at ``path``) that an error's ``field`` lies in; None where the
    error is about the object itself."""
    if not field.startswith(f"{path}."):
        return None
    rest = field[len(path) + 1 :]
    for key in usage:
        if rest == key or rest.startswith((f"{key}.", f"{key}[")):
            return key
    return None


CONVENTIONS: dict[str, Callable[[Mapping[str, Any], str], ObservedUsage]] = {
    "gemini": _gemini,
    "bedrock": _bedrock,
    "deepseek": _deepseek,
    "otel": _otel,
    "openinference": _openinference,
    "langchain": _langchain,
    "codex": _codex,
    "openai-chat": _openai_chat,
    "cohere": _cohere,
    "anthropic": _anthropic,
    "openai-responses": _openai_responses,
    "langfuse": _langfuse,
}


def _flag_contradiction(observed: ObservedUsage, path: str) -> ObservedUsage:
    """A provider's usage whose reads and writes exceed the prompt they are parts of: kept
    as reported, with the contradiction named (no bill or reconciliation is made from it)."""
    total = observed.input_tokens
    if total is None:
        return observed
    check_tokens(total, path)
    read, written = observed.cache_read_tokens or 0, observed.cache_write_tokens or 0
    if read + written <= total:
        return observed
    return replace(
        observed,
        contradiction=f"{path}: cache read {read} + write {written} exceed the input of"
        f" {total} tokens",
    )


def _check_parts(observed: ObservedUsage, path: str) -> None:
    """Reads and writes are parts of the prompt: more of them than prompt is a log whose
    convention is not the one assumed (docs/log-formats.md); say so here, with the field,
    rather than bill a negative uncached count later."""
    total = observed.input_tokens
    if total is None:
        return
    check_tokens(total, path)  # the whole prompt, where it is the sum of parts
    parts = (observed.cache_read_tokens or 0) + (observed.cache_write_tokens or 0)
    if parts > total:
        raise RecordFieldError(
            path,
            f"cache read {observed.cache_read_tokens or 0} + write "
            f"{observed.cache_write_tokens or 0} exceed the input of {total} tokens: this "
            "usage does not follow the convention its keys name (docs/log-formats.md)",
        )
