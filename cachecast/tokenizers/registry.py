"""Model name -> tokenizer registry.

``get_tokenizer(model)`` matches the model name (lower-cased, an ``openai/``-style provider
prefix removed) against :data:`MODEL_PATTERNS` with ``fnmatch``, first match wins. A path to a
local Hugging Face tokenizer directory (or ``hf:PATH``) is loaded with transformers. An unknown
model raises :class:`~cachecast.core.errors.UnknownModelError` naming every known pattern.

Tokenizer kinds:

* ``o200k_base`` / ``cl100k_base``: exact, real ``tiktoken.Encoding`` (see ``openai_data``);
* ``approx:o200k_base``: providers without a public tokenizer (Anthropic, Gemini, DeepSeek,
  Kimi): o200k_base ids as a documented approximation, ``exact=False``; exact counts come
  from the usage a record carries (see ``records``);
* Hugging Face: ``llama3``, ``qwen`` (Qwen3) and ``qwen2.5`` vocabularies shipped by
  quicktok-v1, Mistral Tekken shipped by mistral-common, or a local tokenizer directory
  (see ``hf``).
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

from cachecast.core.errors import Location, UnknownModelError
from cachecast.tokenizers.base import Tokenizer

# (pattern, tokenizer key). Order matters: the first match wins.
MODEL_PATTERNS: tuple[tuple[str, str], ...] = (
    ("gpt-4o*", "o200k_base"),
    ("chatgpt-4o*", "o200k_base"),
    ("gpt-4.1*", "o200k_base"),
    ("gpt-4.5*", "o200k_base"),
    ("gpt-5*", "o200k_base"),
    ("gpt-6*", "o200k_base"),
    ("gpt-oss*", "o200k_base"),
    ("o1*", "o200k_base"),
    ("o3*", "o200k_base"),
    ("o4*", "o200k_base"),
    # Other OpenAI ids without a gpt-N prefix; like gpt-5*/gpt-6*, assumed o200k_base.
    ("chat-latest", "o200k_base"),
    ("gpt-chat-latest", "o200k_base"),
    ("codex-mini*", "o200k_base"),
    ("daybreak-*", "o200k_base"),
    ("gpt-daybreak-*", "o200k_base"),
    ("gpt-rosalind-*", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-4-*", "cl100k_base"),
    ("gpt-3.5*", "cl100k_base"),
    # Azure OpenAI's spelling of gpt-3.5-turbo (no dot in a deployment's model name):
    # tiktoken's model map gives gpt-35-turbo and the gpt-35-turbo- prefix cl100k_base.
    ("gpt-35-turbo*", "cl100k_base"),
    ("text-embedding-3*", "cl100k_base"),
    ("text-embedding-ada-002", "cl100k_base"),
    # OpenAI's legacy Completions base models: tiktoken's model map gives both cl100k_base
    # (gpt-3.5-turbo-instruct is matched by gpt-3.5* above).
    ("davinci-002", "cl100k_base"),
    ("babbage-002", "cl100k_base"),
    # The GPT-3 completions models (contracts-v24, shut down 2024-01-04): tiktoken's model map
    # gives p50k_base (text-davinci-002/003) and r50k_base (the -001 models), vocabularies we
    # do not ship: approximated (exact counts come from the usage a recording carries).
    ("text-davinci-*", "approx:o200k_base"),
    ("text-curie-*", "approx:o200k_base"),
    ("text-babbage-*", "approx:o200k_base"),
    ("text-ada-*", "approx:o200k_base"),
    ("claude-*", "approx:o200k_base"),
    ("anthropic.claude-*", "approx:o200k_base"),
    ("amazon.nova-*", "approx:o200k_base"),
    # Bedrock cross-region inference profiles: us./eu./apac./us-gov./global. prefixes.
    ("*.anthropic.claude-*", "approx:o200k_base"),
    ("*.amazon.nova-*", "approx:o200k_base"),
    ("grok-*", "approx:o200k_base"),
    ("gemini-*", "approx:o200k_base"),
    ("deepseek-*", "approx:o200k_base"),
    ("kimi-*", "approx:o200k_base"),
    ("moonshot-*", "approx:o200k_base"),
    ("llama-3*", "hf:llama3"),
    ("meta-llama-3*", "hf:llama3"),
    ("llama3*", "hf:llama3"),
    # Fireworks AI writes Llama 3.x as llama-v3p1-8b-instruct, llama-v3p3-70b-instruct.
    ("llama-v3*", "hf:llama3"),
    # Llama 2 and 4 (Bedrock's meta.llama2-13b-chat-v1, meta.llama4-scout-*: the vendor
    # prefix is dropped below) have vocabularies we do not ship: approximated.
    ("llama2*", "approx:o200k_base"),
    ("llama-2*", "approx:o200k_base"),
    ("llama4*", "approx:o200k_base"),
    ("llama-4*", "approx:o200k_base"),
    ("qwen2.5-*", "hf:qwen2.5"),
    ("qwen3-*", "hf:qwen"),
    ("mistral-nemo*", "hf:tekken_240718"),
    ("open-mistral-nemo*", "hf:tekken_240718"),
    ("pixtral-*", "hf:tekken_240911"),
    # Hosted Qwen (Alibaba Cloud): its serving-side framing is not public; o200k approximates.
    ("qwen*", "approx:o200k_base"),
    # Other hosted models seen in recordings, no public tokenizer matched: approximated
    # (exact counts come from the usage the recording carries).
    ("mistral-*", "approx:o200k_base"),
    # Mistral's open-weight API ids (open-mistral-7b, contracts-v13); open-mistral-nemo*
    # matched its own tokenizer above.
    ("open-mistral-*", "approx:o200k_base"),
    ("mixtral-*", "approx:o200k_base"),
    ("ministral-*", "approx:o200k_base"),
    ("magistral-*", "approx:o200k_base"),
    ("codestral-*", "approx:o200k_base"),
    ("glm-*", "approx:o200k_base"),
    # Cohere's Command models (command-r, command-a-03-2025, ...) and the first one's bare
    # name, `command` (contracts-v29): Cohere's own tokenizer is not packaged.
    ("command-*", "approx:o200k_base"),
    ("command", "approx:o200k_base"),
    ("nova-*", "approx:o200k_base"),
    # Image and realtime models bill image or audio tokens no text tokenizer counts; their
    # text prompt is approximated (exact counts come from the usage a recording carries).
    ("gpt-image-*", "approx:o200k_base"),
    ("chatgpt-image-*", "approx:o200k_base"),
    ("gpt-realtime*", "approx:o200k_base"),
    ("gemma*", "approx:o200k_base"),  # gemma-*, and Groq's gemma2-9b-it
    ("llama-guard-*", "approx:o200k_base"),  # Llama Guard 4 (Groq): a Llama 4 model
    ("deep-research-*", "approx:o200k_base"),
    # Perplexity's Sonar models (sonar, sonar-pro, sonar-reasoning-pro, ...): no public
    # tokenizer; Perplexity's usage carries the exact counts.
    ("sonar*", "approx:o200k_base"),
    # Bedrock base models without a public tokenizer (contracts-v16): AI21's Jamba, Amazon's
    # Titan Text, DeepSeek-R1 (its Bedrock id); Cohere's command-text matches command-*.
    ("jamba-*", "approx:o200k_base"),
    ("titan-*", "approx:o200k_base"),
    ("deepseek.r1*", "approx:o200k_base"),
    # Bedrock base models of contracts-v20 (vendor prefixes dropped below): DeepSeek V3 /
    # V3.2, AI21's Jurassic-2, MiniMax, Mistral's Voxtral, NVIDIA's Nemotron, Writer's
    # Palmyra; no public tokenizer we ship: approximated.
    ("deepseek.v3*", "approx:o200k_base"),
    ("j2-*", "approx:o200k_base"),
    ("minimax-*", "approx:o200k_base"),
    ("voxtral-*", "approx:o200k_base"),
    ("nemotron-*", "approx:o200k_base"),
    ("palmyra-*", "approx:o200k_base"),
)

# Deployment prefixes a cloud puts before a model id (Azure's ``eu.``/``global-standard.``,
# Bedrock's ``us.``/``apac.``/``us-gov.`` cross-region profiles) and the vendor prefixes of a
# marketplace id (Bedrock's ``openai.``, ``xai.``, ``moonshotai.``): the tokenizer is the
# model's, so a name no pattern matches is tried again without them (docs/log-formats.md).
DEPLOYMENT_PREFIXES = frozenset(
    {"us", "eu", "apac", "us-gov", "global", "global-standard", "regional", "in", "jp", "au"}
)
VENDOR_PREFIXES = frozenset(
    {
        "openai",
        "xai",
        "moonshotai",
        "zai",
        "anthropic",
        "amazon",
        "meta",
        "mistral",
        "google",
        "ai21",
        "cohere",
        "minimax",
        "moonshot",
        "nvidia",
        "writer",
    }
)


def known_patterns() -> list[str]:
    """Every model name pattern the registry maps, in match order."""
    return [pattern for pattern, _ in MODEL_PATTERNS]


def unknown_model(model: str) -> UnknownModelError:
    """The error for a model no tokenizer is known for; the message lists the known patterns."""
    return UnknownModelError(
        f"unknown model {model!r}: no tokenizer matches it. Known model patterns: "
        + ", ".join(known_patterns())
        + "; or pass a local Hugging Face tokenizer directory (hf:PATH).",
        location=Location(field="model"),
        known_patterns=known_patterns(),
    )


def normalize_model_name(model: str) -> str:
    """Lower-case and drop a provider prefix such as ``openai/`` or ``meta-llama/``."""
    return model.strip().lower().rsplit("/", 1)[-1]


class LocalTokenizerRefused(UnknownModelError):
    """A model named a tokenizer directory on this machine where that is not allowed."""

    def __init__(self, model: str) -> None:
        super().__init__(
            f"{model!r} names a tokenizer directory on this machine, which is not allowed"
            " here: give a model name",
            location=Location(field="model"),
            known_patterns=known_patterns(),
        )


# A local tokenizer directory (hf:PATH or an existing path) is the user's own choice on the
# command line, but must never be reachable from a client of the service: it would read the
# server's files. The service turns it off for everything it runs (per request and per job).
_LOCAL_DIRECTORIES_ALLOWED: ContextVar[bool] = ContextVar(
    "cachecast_local_tokenizer_directories", default=True
)


@contextlib.contextmanager
def local_tokenizer_directories(allowed: bool) -> Iterator[None]:
    """Allow or refuse local tokenizer directories for the code run inside this block."""
    token = _LOCAL_DIRECTORIES_ALLOWED.set(allowed)
    try:
        yield
    finally:
        _LOCAL_DIRECTORIES_ALLOWED.reset(token)


def refuse_local_tokenizer_directories() -> None:
    """Refuse local tokenizer directories in the current context (e.g. a service thread)."""
    _LOCAL_DIRECTORIES_ALLOWED.set(False)


def _local_directory(model: str) -> Path | None:
    if model.startswith("hf:"):
        return Path(model[3:])
    if ("/" in model or model.startswith(".")) and Path(model).is_dir():
        return Path(model)
    return None


def tokenizer_key_for(model: str) -> str:
    """The registry key (``o200k_base``, ``hf:qwen``, ``hf-dir:/path``...) for ``model``."""
    directory = _local_directory(model)
    if directory is not None:
        if not _LOCAL_DIRECTORIES_ALLOWED.get():
            raise LocalTokenizerRefused(model)
        return "hf-dir:" + str(directory.resolve())
    key = _pattern_key(normalize_model_name(model))
    if key is None:
        raise unknown_model(model)
    return key


@functools.lru_cache(maxsize=1024)
def _pattern_key(name: str) -> str | None:
    """The key of the first pattern a normalized name matches, None if none does. A pure
    function of the name, so cached: the log reader asks once per line, and the scan over
    the patterns costs ~10 us for names matched late (claude-*, gemini-*)."""
    for pattern, key in MODEL_PATTERNS:
        if fnmatch.fnmatchcase(name, pattern):
            return key
    head, dot, rest = name.partition(".")
    if dot and rest and (head in DEPLOYMENT_PREFIXES or head in VENDOR_PREFIXES):
        return _pattern_key(rest)
    return None


_LOCK = threading.Lock()
_BY_KEY: dict[str, Tokenizer] = {}


def get_tokenizer(model: str) -> Tokenizer:
    """The tokenizer for ``model`` (loaded once per process)."""
    return tokenizer_for_key(tokenizer_key_for(model))


def tokenizer_for_key(key: str) -> Tokenizer:
    """Load (once) the tokenizer a registry key names."""
    with _LOCK:
        found = _BY_KEY.get(key)
    if found is not None:
        return found
    tokenizer = _load(key)
    with _LOCK:
        return _BY_KEY.setdefault(key, tokenizer)


def _load(key: str) -> Tokenizer:
    from cachecast.tokenizers.base import TiktokenTokenizer
    from cachecast.tokenizers.openai_data import load_openai_encoding

    if key in ("o200k_base", "cl100k_base"):
        return TiktokenTokenizer(load_openai_encoding(key), name=key, exact=True)
    if key.startswith("approx:"):
        base = key.removeprefix("approx:")
        return TiktokenTokenizer(load_openai_encoding(base), name=key, exact=False)
    if key.startswith(("hf:", "hf-dir:")):
        from cachecast.tokenizers.hf import load_hf_tokenizer

        return load_hf_tokenizer(key)
    raise KeyError(f"unknown tokenizer key {key!r}")


def unmapped_models(models: list[str]) -> list[str]:
    """The models (e.g. the contract store's) that no registry pattern covers."""
    missing = []
    for model in models:
        try:
            tokenizer_key_for(model)
        except UnknownModelError:
            missing.append(model)
    return missing
