"""Which model endpoint a recorded request went to, and the provider behind its host.

============================  ===================================================  =========
endpoint                      path                                                 body read
============================  ===================================================  =========
OpenAI Chat Completions       ``.../chat/completions`` (OpenAI, Azure, gateways)   chat
OpenAI Responses              ``.../responses``                                    responses
Anthropic Messages            ``/v1/messages``                                     anthropic
Bedrock Converse              ``/model/{id}/converse``, ``converse-stream``        bedrock
Bedrock InvokeModel           ``/model/{id}/invoke``, ``invoke-with-response-stream`` by body
Gemini generateContent        ``.../models/{model}:generateContent`` (and stream)  gemini
Gemini cachedContents         ``POST .../cachedContents``                          (cache)
Gemini Interactions           ``POST .../interactions`` (Google's hosts)           as gemini
Cohere Chat v2                ``/v2/chat``                                         chat
Cohere Chat v1                ``/v1/chat`` (``message``, ``chat_history``)         as chat
OpenAI legacy Completions     ``.../completions`` (not chat)                       prompt
Anthropic Text Completions    ``/v1/complete`` (legacy; no usage in the response)  prompt
vLLM native ``/generate``     ``/generate`` (no usage in the response)             prompt
Ollama native API             ``/api/chat``, ``/api/generate``                     as chat
============================  ===================================================  =========

Anthropic's legacy Text Completions and vLLM's native ``/generate`` report no token counts,
so a call to them is a bad record that says so (nothing to reconcile), not a silent skip.
Ollama's native paths are common route names (a web app's own ``/api/chat``): a call there is
Ollama's only where its response is Ollama's final object (``done``), else it is skipped as no
model endpoint (``cachecast.logs.http``).

The provider comes from the host (api.openai.com, *.openai.azure.com, api.anthropic.com,
bedrock-runtime.*.amazonaws.com and bedrock-mantle.*.api.aws (Bedrock also serves OpenAI's
Chat Completions and Responses and Anthropic's Messages there: read as those APIs, provider
bedrock), generativelanguage / aiplatform.googleapis.com,
openrouter.ai and other OpenAI-compatible APIs), the model from the body or the URL.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from cachecast.logs.batch import OPENAI_BATCH_APIS
from cachecast.logs.http.conversations import AGENT_COMPLETIONS, conversation_target

_HOST_PROVIDERS = (
    ("api.openai.com", "openai"),
    (".openai.azure.com", "azure"),
    (".cognitiveservices.azure.com", "azure"),
    (".services.ai.azure.com", "azure"),
    ("api.anthropic.com", "anthropic"),
    ("bedrock-runtime.", "bedrock"),
    # Bedrock's compatible-APIs host (Mantle): OpenAI Chat Completions and Responses under
    # ``/v1`` or ``/openai/v1``, Anthropic's Messages under ``/anthropic/v1`` (docs/log-formats.md,
    # "Recorded HTTP").
    ("bedrock-mantle.", "bedrock"),
    ("generativelanguage.googleapis.com", "google"),
    ("aiplatform.googleapis.com", "google"),
    ("openrouter.ai", "openrouter"),
    ("api.deepseek.com", "deepseek"),
    ("api.x.ai", "xai"),
    ("api.moonshot.ai", "moonshot"),
    ("api.moonshot.cn", "moonshot"),
    ("dashscope", "alibaba"),
    ("api.mistral.ai", "mistral"),
    ("api.groq.com", "groq"),
    ("api.cohere.com", "cohere"),
    ("api.cohere.ai", "cohere"),
    ("api.z.ai", "zai"),
    ("open.bigmodel.cn", "zai"),
    # OpenAI-compatible APIs of open-weight hosts: named, so that a request is priced under
    # the host's contracts (contracts-v15, -v27) or reported unpriced for want of one, not as
    # a log that names no provider (LiteLLM's spellings for Together and Fireworks).
    ("api.cerebras.ai", "cerebras"),
    ("api.perplexity.ai", "perplexity"),
    ("api.together.xyz", "together_ai"),
    ("api.together.ai", "together_ai"),
    ("api.fireworks.ai", "fireworks_ai"),
    ("api.sambanova.ai", "sambanova"),
    ("api.hyperbolic.xyz", "hyperbolic"),
    ("api.deepinfra.com", "deepinfra"),
    ("api.cloudflare.com", "cloudflare"),  # Workers AI: /client/v4/accounts/{id}/ai/v1/...
    # Ollama's cloud serves the native API at ollama.com/api/chat (docs/log-formats.md,
    # "Recorded HTTP"); a local Ollama (localhost:11434) is told by its paths.
    ("ollama.com", "ollama"),
)
# A provider a recording names (``provenance.source: "anthropic"``) where it keeps each
# call's path without a host (docs/log-formats.md, "Recordings read by their shape"): the
# provider's own public API host, the first exact host above (Azure and Bedrock have a host
# per resource or region, so a path alone cannot say where it went: not listed).
_PROVIDER_ALIASES = {
    "claude": "anthropic",
    "gemini": "google",
    "googleai": "google",
    "googlegenai": "google",
    "together": "together_ai",
    "fireworks": "fireworks_ai",
    "grok": "xai",
}


def _squash(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


_PROVIDER_HOSTS: dict[str, str] = {}
for _pattern, _name in _HOST_PROVIDERS:
    if "." in _pattern and not _pattern.startswith(".") and not _pattern.endswith("."):
        _PROVIDER_HOSTS.setdefault(_squash(_name), _pattern)


def provider_origin(name: str) -> str | None:
    """``https://`` and the public API host of the provider ``name`` names (a provider's
    name as cachecast spells it, or a common alias: ``gemini``, ``claude``), or None."""
    squashed = _squash(name)
    host = _PROVIDER_HOSTS.get(_squash(_PROVIDER_ALIASES.get(squashed, squashed)))
    return f"https://{host}" if host is not None else None


# Ollama's native API (docs/log-formats.md, "Recorded HTTP"): chat takes ``messages``,
# generate a ``prompt`` (and ``system``).
OLLAMA_PATHS = {"/api/chat": "ollama-chat", "/api/generate": "ollama-generate"}
BEDROCK_ACTIONS = {
    "converse": "converse",
    "converse-stream": "converse",
    "invoke": "invoke",
    "invoke-with-response-stream": "invoke",
}


@dataclass(slots=True)
class Endpoint:
    api: str  # chat, responses, anthropic, bedrock-converse, bedrock-invoke, gemini,
    # gemini-cache, gemini-interactions, cohere (v2), cohere-v1, prompt (OpenAI legacy
    # Completions: the name the batch reader gives the same endpoint), anthropic-complete,
    # vllm-generate, ollama-chat, ollama-generate, mistral-conversations, mistral-agents
    provider: str | None
    model: str | None  # from the URL where it names one


def model_endpoint(method: str, url: str) -> Endpoint | None:
    """The model endpoint a request went to, or None for any other call."""
    if method.upper() != "POST":
        return None
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    path = unquote(parts.path)
    provider = next((name for pattern, name in _HOST_PROVIDERS if pattern in host), None)
    if provider == "bedrock" and "/model/" in path:
        segments = path.split("/")
        if len(segments) >= 4 and segments[-3] == "model" and segments[-1] in BEDROCK_ACTIONS:
            kind = BEDROCK_ACTIONS[segments[-1]]
            return Endpoint(f"bedrock-{kind}", "bedrock", segments[-2])
        return None
    # Bedrock's other APIs (bedrock-runtime's ``/openai/v1`` and ``/anthropic/v1`` paths, and
    # the Mantle host's) are OpenAI's and Anthropic's own, read below under provider bedrock.
    if ":generateContent" in path or ":streamGenerateContent" in path:
        model = path.rsplit("/models/", 1)[-1].split(":", 1)[0] if "/models/" in path else None
        return Endpoint("gemini", provider or "google", model)
    if provider == "google" and path.rstrip("/").endswith("/interactions"):
        # Gemini's Interactions API (cachecast.logs.http.interactions)
        return Endpoint("gemini-interactions", provider, None)
    if path.rstrip("/").endswith("/cachedContents"):
        return Endpoint("gemini-cache", provider or "google", None)
    if provider == "mistral" and path.rstrip("/").endswith(AGENT_COMPLETIONS):
        # Chat Completions naming an agent (cachecast.logs.http.conversations)
        return Endpoint("mistral-agents", provider, None)
    if path.endswith("/chat/completions"):
        model = None
        if "/openai/deployments/" in path:  # Azure: the deployment stands for the model
            model = path.split("/openai/deployments/", 1)[1].split("/", 1)[0]
        return Endpoint("chat", provider, model)
    if path.endswith("/completions"):  # OpenAI's legacy Completions (and compatible servers)
        model = None
        if "/openai/deployments/" in path:
            model = path.split("/openai/deployments/", 1)[1].split("/", 1)[0]
        return Endpoint(OPENAI_BATCH_APIS["/v1/completions"], provider, model)
    if path.endswith("/v1/complete"):
        return Endpoint("anthropic-complete", provider or "anthropic", None)
    if path.rstrip("/") == "/generate":
        return Endpoint("vllm-generate", provider, None)
    if path.rstrip("/") in OLLAMA_PATHS:
        return Endpoint(OLLAMA_PATHS[path.rstrip("/")], provider or "ollama", None)
    if provider == "mistral" and conversation_target(path) is not None:
        # Mistral's Conversations API (cachecast.logs.http.conversations)
        return Endpoint("mistral-conversations", provider, None)
    if provider == "cohere" and path.rstrip("/").endswith(("/v1/chat", "/v2/chat")):
        return Endpoint(
            "cohere-v1" if path.rstrip("/").endswith("/v1/chat") else "cohere", provider, None
        )
    if path.endswith("/responses"):
        return Endpoint("responses", provider, None)
    if path.endswith("/v1/messages") or path == "/messages":
        return Endpoint("anthropic", provider or "anthropic", None)
    return None
