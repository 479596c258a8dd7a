"""A Groq Compound response -> the model calls it made, each a request of its own.

Groq's Compound systems (``groq/compound``, ``groq/compound-mini``, formerly ``compound-beta``
and ``compound-beta-mini``) are no model: each request runs an agent that calls Groq's own
models (GPT-OSS 120B, Llama 4 Scout, Llama 3.3 70B) and built-in tools (web search, code
execution, ...) server-side, up to 10 tool calls per request. The response's ``usage`` is the
sum of the models' calls, and ``usage_breakdown.models`` lists each call: the model's id and
its own usage object (docs/log-formats.md, "Groq Compound"). Each call is billed as a
request to that model under its own Groq contract, so a recorded Compound request is handed
on as those calls, not as itself.

The calls' prompts (the user's messages with Compound's own instructions, tool results and
earlier steps) are not in the recording: each call's record carries a stand-in prompt that
names it (``canonical.unrecorded_prompt``), padded by the reader to the call's reported count
and sharing no prefix with any other prompt, and is ``prompt_complete`` false. No cache read is
predicted for a call, then: what the breakdown reports is all the log tells of its caching.
The tools' own charges are not in the usage and are not priced (docs/log-formats.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.types import ObservedUsage
from cachecast.logs.usage import normalize_usage

BREAKDOWN = "response.body.usage_breakdown"
MAX_CALLS = 100  # model calls of one Compound request (10 tool calls, each a step or two)


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One model call a Compound system made inside a request: the model's id as the
    breakdown names it and the usage the call reported, normalized."""

    model: str
    observed: ObservedUsage


def system_calls(provider: str | None, final: Any) -> tuple[ModelCall, ...]:
    """The model calls a Groq response's ``usage_breakdown.models`` lists, in order; none
    where the response is not Groq's or has no breakdown (a plain model's response)."""
    if provider != "groq" or not isinstance(final, dict):
        return ()
    breakdown = final.get("usage_breakdown")
    if breakdown is None:
        return ()
    if not isinstance(breakdown, dict):
        raise RecordFieldError(BREAKDOWN, f"expected an object, got {type(breakdown).__name__}")
    models = breakdown.get("models")
    if models is None:
        return ()
    if not isinstance(models, list) or len(models) > MAX_CALLS:
        raise RecordFieldError(
            f"{BREAKDOWN}.models", f"expected a list of at most {MAX_CALLS} model calls"
        )
    return tuple(_call(entry, f"{BREAKDOWN}.models[{index}]") for index, entry in enumerate(models))


def _call(entry: Any, path: str) -> ModelCall:
    if not isinstance(entry, dict):
        raise RecordFieldError(path, f"expected an object, got {type(entry).__name__}")
    model = entry.get("model")
    if not isinstance(model, str) or not model.strip():
        raise RecordFieldError(f"{path}.model", "expected the id of the model called")
    usage = entry.get("usage")
    if not isinstance(usage, dict):
        raise RecordFieldError(f"{path}.usage", "expected the call's usage object")
    observed = normalize_usage(usage, convention="openai-chat", path=f"{path}.usage")
    return ModelCall(model.strip(), observed)


def check_sums(calls: tuple[ModelCall, ...], total: ObservedUsage | None) -> None:
    """The response's usage must be the calls' sum (Groq's documented shape): a breakdown
    that does not add up is not billed from (which of the two is right is unknown)."""
    if total is None or not calls:
        return
    for name, key in (("prompt", "input_tokens"), ("completion", "output_tokens")):
        reported: int | None = getattr(total, key)
        parts = [getattr(call.observed, key) for call in calls]
        if reported is None or any(part is None for part in parts):
            continue
        summed = sum(parts)
        if summed != reported:
            raise RecordFieldError(
                f"{BREAKDOWN}.models",
                f"the model calls' {name} tokens sum to {summed}, the response's usage"
                f" reports {reported}; the breakdown does not add up to the request",
            )


def call_request(system: str, index: int, count: int, model: str) -> str:
    """What a call's stand-in prompt says it stands for."""
    return f"prompt of {system}'s model call {index + 1} of {count} ({model})"
