"""Building canonical wrapper records: what every format adapter hands to the reader.

A record (see ``cachecast.tokenizers.records``) is ``{"timestamp", "scope", "session",
"provider", "model", "request_id", "request": <a provider body the renderer reads>,
"observed": <normalized usage>, "prompt_complete": false, "service_tier": "batch"}``; keys
with no value are left out. Provider and model are normalized here
(``cachecast.logs.providers``) so that every format names providers as the contract store
does.
"""

from __future__ import annotations

from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs import sanitize
from cachecast.logs.providers import is_gateway, normalize_provider_name, resolve_provider
from cachecast.logs.types import ObservedUsage
from cachecast.logs.usage import to_canonical


def make_record(
    *,
    request: dict[str, Any],
    model: str | None,
    provider: str | None = None,
    timestamp: float | str | None = None,
    request_id: str | None = None,
    session: str | None = None,
    scope: str | None = None,
    observed: ObservedUsage | None = None,
    prompt_complete: bool = True,
    service_tier: str | None = None,
) -> dict[str, Any]:
    gateway = normalize_provider_name(provider) if is_gateway(provider) else None
    provider, model = resolve_provider(provider, model)
    record: dict[str, Any] = {"request": request}
    if gateway is not None and provider != gateway:
        # Priced as the upstream vendor's model; which way it went is kept for the reason
        # given where the vendor prices no such model (docs/log-formats.md, "Canonical
        # records").
        record["gateway"] = gateway
    if model is not None:
        record["model"] = model
    if provider is not None:
        record["provider"] = provider
    if timestamp is not None:
        record["timestamp"] = timestamp
    if request_id is not None:
        record["request_id"] = request_id
    if session is not None:
        record["session"] = session
    if scope is not None:
        record["scope"] = scope
    if observed is not None:
        record["observed"] = to_canonical(observed)
    if not prompt_complete:
        record["prompt_complete"] = False
    if service_tier is not None:
        # Billed under the provider's batch term where one is in force, else at on-demand
        # prices; the reports say which (docs/contracts.md, "Batch terms"; docs/log-formats.md,
        # "Canonical records", ``service_tier``).
        record["service_tier"] = service_tier
    return record


# The service tiers the reports note (docs/log-formats.md, "Canonical records"), each with what
# the note says where the request is priced at on-demand prices: every priority and scale
# request, and a batch or flex request for which no batch term is in force (docs/contracts.md,
# "Batch terms"; one that is in force gives its own note instead). ``batch``: a request read
# from a batch file, or whose Anthropic usage says it ran in a batch; OpenAI's ``flex``,
# ``priority`` and ``scale`` and Anthropic's ``priority`` as a response reports them. Standard
# processing (``default``, ``auto``, ``standard``) is what the contracts price: no tier.
SERVICE_TIER_NOTES = {
    "batch": (
        "read from a batch file (or run as a batch): billed at on-demand prices; the"
        " provider's Batch API charges 50% of them (docs/log-formats.md, Batches), not applied"
        " here"
    ),
    "flex": (
        "served under service_tier flex: billed at on-demand prices; OpenAI's Flex processing"
        " charges its Batch API prices, 50% of them (docs/log-formats.md, Canonical records),"
        " not applied here"
    ),
    "priority": (
        "served under service_tier priority: billed at on-demand prices; priority processing"
        " charges more (docs/log-formats.md, Canonical records), not modelled here"
    ),
    "scale": (
        "served under service_tier scale: billed at on-demand prices; OpenAI's Scale Tier is"
        " paid for as reserved capacity (docs/log-formats.md, Canonical records), not modelled"
        " here"
    ),
}
NOTED_SERVICE_TIERS = frozenset(SERVICE_TIER_NOTES)
# Groq's flex tier is priced as its on-demand tier (Groq's Flex Processing guide,
# docs/log-formats.md "Canonical records"): the bill is the one charged, nothing to note.
ON_DEMAND_PRICED_TIERS = frozenset({("groq", "flex")})


# Tiers a dated batch term can price (``contracts.batch_terms``): reconcile and estimate bill
# such a request under the term in force for its provider, model and day, and say so in the
# term's note; the note above is what they say where no term is in force.
TERM_PRICED_TIERS = frozenset({"batch", "flex"})


def service_tier_hint(tier: str, provider: str | None) -> str | None:
    """What ``inspect`` (which reads no contract) says of a request served under ``tier``:
    for a tier a batch term can price, which bill the other commands give it; else the
    tier's note."""
    note = service_tier_note(tier, provider)
    if note is None or tier not in TERM_PRICED_TIERS:
        return note
    what = "read from a batch file (or run as a batch)" if tier == "batch" else note.split(":")[0]
    return (
        f"{what}: reconcile and estimate bill it at the provider's {tier} prices where a dated"
        " batch term is in force for its model and day (docs/contracts.md, Batch terms), else"
        " at on-demand prices with a note"
    )


def service_tier_note(tier: str, provider: str | None) -> str | None:
    """What the reports say of a request served under ``tier`` by ``provider`` (None: the
    on-demand prices the contracts hold are what it was charged)."""
    if (provider or "", tier) in ON_DEMAND_PRICED_TIERS:
        return None
    return SERVICE_TIER_NOTES.get(tier)


def response_tier(body: Any) -> str | None:
    """The service tier a response body reports where it is one the reports note: OpenAI's
    top-level ``service_tier`` or Anthropic's ``usage.service_tier``; None otherwise."""
    if not isinstance(body, dict):
        return None
    usage = body.get("usage")
    for value in (
        body.get("service_tier"),
        usage.get("service_tier") if isinstance(usage, dict) else None,
    ):
        if isinstance(value, str) and value.lower() in NOTED_SERVICE_TIERS:
            return value.lower()
    return None


def unrecorded_prompt(source: str, line: int, what: str = "prompt") -> dict[str, Any]:
    """A stand-in body for a request whose log keeps usage but no prompt text. It names the
    record, so that its tokens (padded to the observed input count by the reader) share no
    prefix with any other request's: no cache hit is predicted from text nobody saw."""
    return {"prompt": f"[{what} not recorded in the log: {source}:{line}]"}


def epoch_nanos(value: Any, field: str) -> float:
    """OTLP's ``startTimeUnixNano`` (a decimal string or an integer) as epoch seconds."""
    return sanitize.epoch_nanos(value, field)


def iso_seconds(value: Any, field: str) -> float:
    """An ISO 8601 string (naive = UTC) or epoch number (seconds, or ms above 1e11)."""
    return sanitize.epoch_seconds(value, field)


def optional_str(obj: dict[str, Any], key: str, path: str = "") -> str | None:
    """``obj[key]`` if it is a string, None if absent or null; anything else is an error naming
    the field (``path.key``) and the value's type (never the value: it may be a secret)."""
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise RecordFieldError(
            f"{path}.{key}" if path else key, f"expected a string, got {type(value).__name__}"
        )
    return value


def require_dict(obj: Any, path: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise RecordFieldError(path, f"expected an object, got {type(obj).__name__}")
    return obj


def require_list(obj: Any, path: str) -> list[Any]:
    if not isinstance(obj, list):
        raise RecordFieldError(path, f"expected a list, got {type(obj).__name__}")
    return obj


def completions_prompt(body: dict[str, Any], field: str = "request.body") -> dict[str, Any]:
    """An OpenAI legacy Completions body (``/v1/completions``: ``prompt`` a string, a list of
    strings, token ids or lists of them) as the one plain prompt it sends. A list of several
    prompts is several completions in one call whose reported usage is their sum (OpenAI's
    Completions reference, docs/log-formats.md "Recorded HTTP"): no single prompt stands for
    it, so it is refused, naming the field."""
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return body
    if isinstance(prompt, list) and prompt and all(type(item) is int for item in prompt):
        rest = {key: value for key, value in body.items() if key != "prompt"}
        return {**rest, "tokens": prompt}
    if isinstance(prompt, list) and len(prompt) == 1:
        return completions_prompt({**body, "prompt": prompt[0]}, field)
    if isinstance(prompt, list) and len(prompt) > 1:
        raise RecordFieldError(
            f"{field}.prompt",
            f"{len(prompt)} prompts in one call: the usage reported is their sum, which no"
            " single prompt stands for",
        )
    raise RecordFieldError(
        f"{field}.prompt", f"expected a string, token ids or a list of one, got {prompt!r:.60}"
    )
