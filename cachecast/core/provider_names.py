"""Provider ids the contract store uses, and the other names users give them.

Its own module, free of the database layer, so that reading logs (which normalizes the
provider names records carry) does not import it; ``cachecast.contracts.store`` re-exports
both names.
"""

from __future__ import annotations

# Other names users and price sheets give the providers we store.
PROVIDER_ALIASES = {
    "aws": "bedrock",
    "aws-bedrock": "bedrock",
    "amazon-bedrock": "bedrock",
    "bedrock_converse": "bedrock",
    "azure-openai": "azure",
    "azure_openai": "azure",
    "gemini": "google",
    "google-gemini": "google",
    "kimi": "moonshot",
    "moonshotai": "moonshot",
    "grok": "xai",
    "x-ai": "xai",
    "dashscope": "alibaba",
    "qwen": "alibaba",
    "claude": "anthropic",
    "vertex_ai": "vertex",
    "vertex-ai": "vertex",
    "vertexai": "vertex",
    "google-vertex": "vertex",
}


def normalize_provider(provider: str) -> str:
    name = provider.strip().lower()
    return PROVIDER_ALIASES.get(name, name)
