"""What a contract version must be to be stored, and what adding one may do to a history.

Keys (docs/contracts.md, "Keys and aliases"):

* a provider or model id is lower-case letters, digits and ``. _ - : @`` (starting with a
  letter or digit, at most 128 characters): every such id is a valid URL path segment as it
  is (RFC 3986 ``pchar``), so every stored contract can be read back at
  ``/v1/contracts/{provider}/{model}`` without any encoding;
* an alias is the same characters plus ``/`` (ARN-style ids) and the ``fnmatch`` wildcards
  ``* ? [ ] !``; a pattern must keep at least :data:`MIN_ALIAS_LITERAL` literal characters
  in a row (``claude-sonnet-4-5*``, ``*amazon.nova-pro-v1*``), so that no pattern (``*``,
  ``?*``, ``gpt-*``, ``[a-z]*``) can capture every unknown model of a provider;
* no text field holds a control character (NUL cannot even be stored by PostgreSQL).

History (docs/contracts.md, "Adding a version"): adding versions never takes a day away from
a contract: every day some version was in force before the write still has one after it. A
version that starts inside the open version closes it at its start; when the new version is
itself bounded, the contract would end at its ``effective_to``, so that write is refused
unless the same import also adds the version that follows.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator

from cachecast.contracts.model import ContractTerms

MAX_KEY_LENGTH = 128
MIN_ALIAS_LITERAL = 6
KEY_PATTERN = re.compile(r"[a-z0-9][a-z0-9._:@-]*")
ALIAS_PATTERN = re.compile(r"[a-z0-9._:@/*?\[\]!-]+")
# For the OpenAPI document of a write: what the fields accept as sent (they are stripped and
# lower-cased before the rule above applies).
KEY_SCHEMA_PATTERN = r"^\s*[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}\s*$"
_WILDCARDS = re.compile(r"\*|\?|\[[^\]]*\]?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def key_problems(terms: ContractTerms) -> Iterator[tuple[str, str]]:
    """(field, why) for every rule of the module docstring that ``terms`` breaks."""
    for name in ("provider", "model"):
        value: str = getattr(terms, name)
        if len(value) > MAX_KEY_LENGTH:
            yield name, f"at most {MAX_KEY_LENGTH} characters, got {len(value)}"
        elif not KEY_PATTERN.fullmatch(value):
            yield (
                name,
                f"{value!r}: only lower-case letters, digits and . _ - : @ (starting with a"
                " letter or digit), so that the contract is addressable as a URL path segment",
            )
    for index, alias in enumerate(terms.aliases):
        problem = alias_problem(alias)
        if problem is not None:
            yield f"aliases[{index}]", problem
    for name, text in _texts(terms):
        if _CONTROL.search(text):
            yield name, "must not contain control characters (NUL, newline ...)"


def alias_problem(alias: str) -> str | None:
    """Why ``alias`` may not be stored, or None."""
    lowered = alias.strip().lower()
    if not lowered or len(lowered) > MAX_KEY_LENGTH or not ALIAS_PATTERN.fullmatch(lowered):
        return (
            f"{alias!r}: an alias is a model id or an fnmatch pattern of lower-case letters,"
            f" digits, . _ - : @ / and * ? [ ] ! (at most {MAX_KEY_LENGTH} characters)"
        )
    if _WILDCARDS.search(lowered):
        longest = max((len(run) for run in _WILDCARDS.split(lowered)), default=0)
        if longest < MIN_ALIAS_LITERAL:
            return (
                f"{alias!r} would match every model of the provider it is not meant for: a"
                f" pattern needs at least {MIN_ALIAS_LITERAL} literal characters in a row"
                " (e.g. 'claude-sonnet-4-5*')"
            )
    return None


def _texts(terms: ContractTerms) -> Iterator[tuple[str, str]]:
    yield "source", terms.source
    for index, option in enumerate(terms.ttl_options):
        yield f"ttl_options[{index}].name", option.name
    yield "scope", terms.scope


Span = tuple[dt.date, dt.date]  # [from, to), dt.date.max standing for "open"


def coverage(versions: Iterable[ContractTerms]) -> list[Span]:
    """The days some version is in force, as sorted, merged half-open spans."""
    spans = sorted((v.effective_from, v.effective_to or dt.date.max) for v in versions)
    merged: list[Span] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def first_lost_span(before: list[Span], after: list[Span]) -> Span | None:
    """The first span of days covered ``before`` but not ``after`` (None: nothing lost)."""
    for start, end in before:
        cursor = start
        for after_start, after_end in after:
            if after_end <= cursor:
                continue
            if after_start > cursor:
                return cursor, min(after_start, end)
            cursor = after_end
            if cursor >= end:
                break
        if cursor < end:
            return cursor, end
    return None


def span_text(span: Span) -> str:
    end = "open" if span[1] == dt.date.max else span[1].isoformat()
    return f"[{span[0].isoformat()}, {end})"


_LATEST_GEMINI = re.compile(r"gemini-.+-latest")
_CLAUDE_SNAPSHOT = re.compile(r"(claude-.+)-20\d{6}")
_GROK_BARE = re.compile(r"grok-.+")
_GROK_MODES = ("-reasoning", "-non-reasoning", "-latest")
_VERSION_DOT = re.compile(r"(?<=\d)\.(?=\d)")
_GEMINI_STABLE = re.compile(r"(gemini-.+)-\d{3}")
_AZURE_GPT_35 = "gpt-35-turbo"
# A Bedrock base model id (``anthropic.claude-3-sonnet-20240229-v1:0``): a vendor, a dot, the
# model; an id that starts with an inference profile's zone is no base id.
_BEDROCK_BASE = re.compile(r"([a-z][a-z0-9]*)\.[a-z].*")
_BEDROCK_ZONES = frozenset(
    {"us", "eu", "apac", "us-gov", "global", "regional", "in", "jp", "au", "ca"}
)


def fallback_names(model_id: str) -> tuple[str, ...]:
    """Names tried, in order, for a model id the store holds neither as an id nor as an
    alias (docs/contracts.md, "Keys and aliases"): a Gemini ``<model>-latest`` is the newest
    version of ``<model>`` (Google's version name patterns); an Anthropic snapshot
    ``<model>-YYYYMMDD`` is a dated version of ``<model>``, whose ``<model>-latest`` alias
    points at the newest snapshot (Anthropic's models overview); an xAI ``grok-...`` name
    without a mode suffix is the alias of its ``-reasoning`` model (xAI's model pages list
    the bare name among the reasoning model's aliases, docs/contracts.md; the response of a
    request for ``grok-4-fast`` names ``grok-4-fast-reasoning``), and a dotted version that
    xAI writes with a dash is tried with it. A Gemini stable version ``<model>-001`` is
    ``<model>`` (Google's version name patterns); Azure's ``gpt-35-turbo...`` is OpenAI's
    ``gpt-3.5-turbo...``; a Bedrock base model id ``<vendor>.<model>`` is tried as the
    ``regional.`` id price maps give the in-region price under (a base model id runs in
    the one region it is sent to). Empty for every other name."""
    if _LATEST_GEMINI.fullmatch(model_id):
        return (model_id.removesuffix("-latest"),)
    stable = _GEMINI_STABLE.fullmatch(model_id)
    if stable is not None:
        return (stable.group(1),)
    if model_id.startswith(_AZURE_GPT_35):
        return ("gpt-3.5-turbo" + model_id.removeprefix(_AZURE_GPT_35),)
    base = _BEDROCK_BASE.fullmatch(model_id)
    if base is not None and base.group(1) not in _BEDROCK_ZONES:
        return ("regional." + model_id,)
    snapshot = _CLAUDE_SNAPSHOT.fullmatch(model_id)
    if snapshot is not None:
        return (snapshot.group(1), snapshot.group(1) + "-latest")
    if _GROK_BARE.fullmatch(model_id):
        return _grok_names(model_id)
    return ()


# The version suffix a Bedrock base model id or inference profile id ends in: a snapshot date
# and ``-v1:0`` (``anthropic.claude-haiku-4-5-20251001-v1:0``) or a bare ``-1:0``
# (``openai.gpt-oss-120b-1:0``).
_BEDROCK_VERSION = r"(?:-(?P<date>\d{8}))?-v?\d+:\d+"
_BEDROCK_VERSIONED = re.compile(r".*" + _BEDROCK_VERSION)


def versioned_names(model_id: str, names: Iterable[str]) -> tuple[str, ...]:
    """The stored Bedrock ids that ``model_id`` names without their version suffix, newest
    snapshot first: Bedrock's OpenAI- and Anthropic-compatible APIs (the Mantle host
    ``bedrock-mantle.<region>.api.aws``, bedrock-runtime's ``/openai/v1`` and
    ``/anthropic/v1``) take ids with no ``-v1:0`` / ``-1:0`` suffix (``anthropic.claude-haiku-4-5``
    for ``anthropic.claude-haiku-4-5-20251001-v1:0``, ``openai.gpt-oss-120b`` for
    ``openai.gpt-oss-120b-1:0``; docs/contracts.md, "Bedrock Mantle ids"). A base id names
    the in-region model, so the ``regional.`` id price maps use for it counts too; an id
    with a zone prefix (``eu.anthropic....``) names that inference profile only. Empty for an
    id that already ends in a version suffix."""
    if _BEDROCK_VERSIONED.fullmatch(model_id):
        return ()
    base = _BEDROCK_BASE.fullmatch(model_id)
    if base is None:
        return ()
    prefix = r"(?:regional\.)?" if base.group(1) not in _BEDROCK_ZONES else ""
    pattern = re.compile(prefix + re.escape(model_id) + _BEDROCK_VERSION)
    found = [
        (match.group("date") or "", not name.startswith("regional."), name)
        for name in names
        if (match := pattern.fullmatch(name))
    ]
    found.sort(reverse=True)
    return tuple(name for _, _, name in found)


def _grok_names(model_id: str) -> tuple[str, ...]:
    """xAI writes some versions with a dot (``grok-4.20``) and some with a dash
    (``grok-4-1-fast-reasoning``) while gateways write them all with dots (OpenRouter's
    ``x-ai/grok-4.1-fast``): the dashed name is tried after the dotted one, each bare name
    followed by its ``-reasoning`` model."""
    names: list[str] = []
    dashed = _VERSION_DOT.sub("-", model_id)
    for name in (model_id, dashed):
        if name not in names:
            names.append(name)
        if not name.endswith(_GROK_MODES) and name + "-reasoning" not in names:
            names.append(name + "-reasoning")
    return tuple(name for name in names if name != model_id)
