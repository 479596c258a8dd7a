"""Provider names as logs write them -> the provider ids the contract store uses.

Logs spell providers many ways: OpenTelemetry's ``gen_ai.provider.name`` values
(``gcp.vertex_ai``, ``aws.bedrock``, ``azure.ai.openai``), LiteLLM's model prefixes
(``vertex_ai/gemini-2.5-pro``, ``bedrock/anthropic.claude-...``), Helicone's upper-case
enum, gateways whose model slug names the upstream provider (OpenRouter's
``anthropic/claude-sonnet-4.5``). :func:`normalize_provider_name` maps a name onto the store's
ids (its own alias table first, then the store's, ``cachecast.core.provider_names``);
:func:`split_model` takes a ``provider/model`` string apart; :func:`infer_provider` names the
provider a bare model name belongs to where the log says nothing else (docs/log-formats.md).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from cachecast.core.provider_names import PROVIDER_ALIASES, normalize_provider

# Names logs use beyond the store's own aliases (docs/log-formats.md, "Provider names").
LOG_PROVIDER_ALIASES: dict[str, str] = {
    # Google: the Gemini API and Vertex AI bill Gemini models under one contract.
    "google_genai": "google",
    "google-genai": "google",
    "google_ai_studio": "google",
    "vertex": "google",
    "vertexai": "google",
    "vertex_ai": "google",
    "vertex_ai_beta": "google",
    "vertex-ai": "google",
    "google-vertex": "google",
    "google_vertex": "google",
    "gcp.gen_ai": "google",
    "gcp.gemini": "google",
    "gcp.vertex_ai": "google",
    # AWS
    "aws.bedrock": "bedrock",
    "amazon_bedrock": "bedrock",
    "bedrock-runtime": "bedrock",
    # Azure
    "azure.ai.openai": "azure",
    "azure.ai.inference": "azure",
    "azure_ai": "azure",
    "azureopenai": "azure",
    # Others spelled their own way
    "x_ai": "xai",
    "mistral_ai": "mistral",
    "mistralai": "mistral",
    "anthropic_messages": "anthropic",
    "text-completion-openai": "openai",
    "openai_responses": "openai",
    "moonshot_ai": "moonshot",
    "moonshotai-cn": "moonshot",
    "deepseek-ai": "deepseek",
    # OpenRouter's vendor slug for Z.ai (``z-ai/glm-5-turbo``; its responses name the
    # upstream ``"provider": "Z.AI"``).
    "z-ai": "zai",
}

# Gateways: the upstream provider is the first segment of the model slug.
GATEWAYS = frozenset({"openrouter", "litellm_proxy", "litellm"})

# Every name taken as a provider prefix in ``provider/model`` strings.
_KNOWN = (
    frozenset(PROVIDER_ALIASES)
    | frozenset(PROVIDER_ALIASES.values())
    | frozenset(LOG_PROVIDER_ALIASES)
    | frozenset(LOG_PROVIDER_ALIASES.values())
    | GATEWAYS
    | frozenset(
        {
            "openai",
            "anthropic",
            "google",
            "bedrock",
            "azure",
            "deepseek",
            "xai",
            "moonshot",
            "alibaba",
            "mistral",
            "groq",
            "cohere",
            "together_ai",
            "fireworks_ai",
            "perplexity",
            "cerebras",
        }
    )
)

# Bare model names -> provider, where a log names no provider (first match wins).
_MODEL_FAMILIES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"^(?:[a-z-]{2,8}\.)?(?:anthropic|amazon|meta|cohere|mistral|ai21)\.[a-z]"),
        "bedrock",
    ),
    (re.compile(r"^claude"), "anthropic"),
    (re.compile(r"^(?:gpt-|chatgpt|o[1-9](?:-|$)|text-embedding|codex)"), "openai"),
    (re.compile(r"^gemini"), "google"),
    (re.compile(r"^deepseek"), "deepseek"),
    (re.compile(r"^grok"), "xai"),
    (re.compile(r"^(?:kimi|moonshot)"), "moonshot"),
    (re.compile(r"^qwen"), "alibaba"),
    (re.compile(r"^glm-"), "zai"),
    # Mistral's own API names (docs/log-formats.md, "Provider names"); Bedrock's
    # ``mistral.`` ids are matched above, and a bare ``mixtral`` is left alone (other hosts
    # serve the open weights under that name).
    (
        re.compile(
            r"^(?:mistral-|magistral-|codestral-|devstral-|ministral-|pixtral-|voxtral-"
            r"|open-mistral-|open-mixtral-)"
        ),
        "mistral",
    ),
)


_VERSION_DOT = re.compile(r"(?<=\d)\.(?=\d)")
# Anthropic's own ids from before Claude 3 are dotted (``claude-2.1``, ``claude-2.0``,
# ``claude-instant-1.2``, ``claude-1.3``: Anthropic's model deprecations page,
# https://platform.claude.com/docs/en/about-claude/model-deprecations); they are kept.
_ANTHROPIC_DOTTED = re.compile(r"claude-(?:instant-)?[12]\.\d(?:-[a-z0-9-]+)?")

# Anthropic's fast mode (``"speed": "fast"`` in a response's usage) bills a multiple of the
# model's prices and caches apart, so a session reader names such a request's model
# ``<model>-fast`` (as Microsoft Foundry names its fast deployments), and the contract store
# never prices that name under the standard model's contract (docs/clients.md, "Format
# variants").
FAST_MODE_SUFFIX = "-fast"


@functools.lru_cache(maxsize=256)
def normalize_provider_name(name: str) -> str:
    """The store's provider id for a provider name as a log writes it."""
    lowered = name.strip().lower()
    return normalize_provider(LOG_PROVIDER_ALIASES.get(lowered, lowered))


def is_gateway(provider: str | None) -> bool:
    return provider is not None and normalize_provider_name(provider) in GATEWAYS


def is_router_slug(model: str) -> bool:
    """Whether ``model`` names a gateway's router, not a model: OpenRouter's own slugs
    (``openrouter/auto``, its Auto Router) route each request to a model that the response's
    ``model`` names and that prices the call (docs/log-formats.md, "Recorded HTTP"). A
    provider's path behind the gateway's prefix (``openrouter/anthropic/claude-3.5-sonnet``)
    names its model and is no router."""
    head, _, rest = model.strip().lower().partition("/")
    return head == "openrouter" and bool(rest) and "/" not in rest


# Hugging Face's router (``https://router.huggingface.co/v1``, OpenAI-compatible) takes a Hub
# repository id with the serving provider after a colon (``openai/gpt-oss-120b:cerebras``)
# and bills that provider's rates with no markup of its own (docs/log-formats.md, "Provider
# names"): the suffix names the provider whose contract prices the call. Its provider ids, as
# its provider pages spell them, mapped to the store's where they differ; the others keep
# their own name (no contract: reported unpriced, not priced as the model's maker).
HUGGING_FACE_PROVIDERS = {
    "baseten": "baseten",
    "cerebras": "cerebras",
    "cohere": "cohere",
    "deepinfra": "deepinfra",
    "featherless-ai": "featherless_ai",
    "fireworks-ai": "fireworks_ai",
    "groq": "groq",
    "hf-inference": "hf_inference",
    "hyperbolic": "hyperbolic",
    "nebius": "nebius",
    "novita": "novita",
    "nscale": "nscale",
    "ovhcloud": "ovhcloud",
    "publicai": "publicai",
    "replicate": "replicate",
    "sambanova": "sambanova",
    "scaleway": "scaleway",
    "together": "together_ai",
    "wavespeed": "wavespeed",
    "zai-org": "zai",
}


def hugging_face_routed(model: str) -> tuple[str, str] | None:
    """``(provider, model)`` of a Hugging Face router id naming its serving provider
    (``openai/gpt-oss-120b:cerebras`` -> ``("cerebras", "gpt-oss-120b")``: the model as the
    provider's own API names it, without the Hub organization), or None for any other name (a
    Hub id without a suffix is routed by a policy the log does not show; Ollama's
    ``llama3:8b`` and OpenRouter's ``:free`` are no provider ids)."""
    base, colon, suffix = model.strip().rpartition(":")
    provider = HUGGING_FACE_PROVIDERS.get(suffix.lower()) if colon else None
    if provider is None or "/" not in base:
        return None
    return provider, base.split("/", 1)[1]


def split_model(model: str, provider: str | None = None) -> tuple[str | None, str]:
    """``(provider, model)`` from a model string that may carry its provider.

    ``vertex_ai/gemini-2.5-pro`` -> ``("google", "gemini-2.5-pro")``;
    ``openrouter/anthropic/claude-3.5-sonnet`` and, with ``provider="openrouter"``,
    ``anthropic/claude-3.5-sonnet`` -> ``("anthropic", "claude-3.5-sonnet")``;
    Anthropic models with gateways' dotted versions -> Anthropic's ids
    (``anthropic/claude-sonnet-4.6`` -> ``("anthropic", "claude-sonnet-4-6")``);
    Hugging Face router ids (``openai/gpt-oss-20b:fireworks-ai``) -> their serving provider
    and its model (``("fireworks_ai", "gpt-oss-20b")``: :func:`hugging_face_routed`);
    Gemini resource names (``models/gemini-2.5-flash``,
    ``projects/p/locations/l/publishers/google/models/gemini-2.5-flash``) -> the model id.
    A first segment that names no provider (``meta-llama/Llama-3-8B``) is kept as it is.
    """
    routed = hugging_face_routed(model)
    if routed is not None:
        return routed
    normalized = normalize_provider_name(provider) if provider else None
    name = model.strip()
    if "/publishers/" in name and "/models/" in name:  # a Vertex AI resource name
        publisher = name.split("/publishers/", 1)[1].split("/", 1)[0]
        return normalize_provider_name(publisher), name.rsplit("/models/", 1)[1]
    if name.startswith("models/"):
        name = name[len("models/") :]
    while "/" in name:
        head, rest = name.split("/", 1)
        candidate = normalize_provider_name(head)
        if candidate not in _KNOWN:
            break
        if normalized is None or normalized in GATEWAYS or normalized == candidate:
            normalized = candidate
        name = rest
        if candidate not in GATEWAYS:
            break
    if normalized in GATEWAYS:
        # A gateway slug without a provider segment: infer from the model family.
        normalized = infer_provider(name)
    if (
        normalized == "anthropic"
        and name.lower().startswith("claude")
        and not _ANTHROPIC_DOTTED.fullmatch(name.lower())
    ):
        # Gateways write Anthropic's versions with dots (OpenRouter's
        # ``anthropic/claude-sonnet-4.6``, ``claude-3.5-sonnet``); Anthropic's own ids
        # have none from Claude 3 on (``claude-sonnet-4-6``), while the older ones keep
        # theirs (``claude-2.1``: see _ANTHROPIC_DOTTED).
        name = _VERSION_DOT.sub("-", name)
    return normalized, name


def infer_provider(model: str) -> str | None:
    """The provider a bare model name belongs to, or None where the name does not say."""
    name = model.strip().lower()
    for pattern, provider in _MODEL_FAMILIES:
        if pattern.search(name):
            return provider
    return None


def resolve_provider(provider: str | None, model: str | None) -> tuple[str | None, str | None]:
    """Normalize a (provider, model) pair as a log gives it: the model's own prefix wins
    over a gateway, an absent provider is inferred from the model family."""
    if model is None:
        return (normalize_provider_name(provider) if provider else None), None
    resolved, name = split_model(model, provider)
    if resolved is None:
        resolved = infer_provider(name)
    return resolved, name


def openai_body_provider(body: dict[str, Any]) -> str | None:
    """The provider an OpenAI-format response body shows where it is not OpenAI: Groq's
    ``x_groq``; Azure OpenAI's content filter results (``prompt_filter_results``, a choice's
    ``content_filter_results``), which OpenAI's responses do not carry (docs/log-formats.md,
    "Batches"). A batch output line's body and a traced call's recorded response are read
    by it."""
    if isinstance(body.get("x_groq"), dict):
        return "groq"
    if "prompt_filter_results" in body:
        return "azure"
    choices = body.get("choices")
    if isinstance(choices, list) and any(
        isinstance(choice, dict) and "content_filter_results" in choice for choice in choices
    ):
        return "azure"
    return None
