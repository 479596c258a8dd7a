"""Client profiles: how the agent that wrote a session log caches its prompts, as data.

A profile is chosen from the log's format (``profile_for_format``), or named by the user
(``--client NAME``, ``"client"`` in API bodies: ``profile_named``). Adding another agent's
logs is one new entry in :data:`PROFILES`. Every statement a profile makes is in
docs/clients.md, marked documented (with the page it comes from) or observed (with the
recording that shows it).
"""

from __future__ import annotations

from dataclasses import dataclass

from cachecast.core.errors import BadInputError

FIVE_MINUTES = 300.0
ONE_HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class ClientProfile:
    """The caching behaviour of one agent client (docs/clients.md)."""

    name: str
    title: str
    formats: tuple[str, ...]  # log formats this client writes (``logs.formats`` names)
    provider: str
    # "breakpoint_at_newest": the client marks cache_control on the newest message, so a
    # request writes its whole prompt but a short tail and the next one reads it back.
    # "automatic": the provider caches by itself, in steps of ``increment_tokens`` from
    # ``min_cached_tokens``, and reports reads only.
    caching: str
    default_ttl_seconds: float  # the lifetime assumed before the log shows which one is used
    # Where a provider documents a range of lifetimes for an idle prefix (OpenAI: 5 to 10
    # minutes), its shortest: an idle gap past it may lose the prefix (None: one lifetime).
    shortest_ttl_seconds: float | None = None
    # The longest lifetime it documents for an idle prefix (OpenAI: up to an hour off-peak).
    longest_ttl_seconds: float | None = None
    # The lifetime assumed for a prefix idle *within* one user turn (None: the default), where
    # the client pins a turn's requests to the machine that holds its prefix (Codex's
    # turn-scoped sticky routing): up to the longest lifetime documented, not the typical one.
    turn_ttl_seconds: float | None = None
    increment_tokens: int = 1
    min_cached_tokens: int = 0
    # Whether the provider's cache may keep a prefix past its lifetime or drop it early
    # (OpenAI documents its cache as best effort).
    best_effort: bool = False
    # Whether the generated output of a request is part of the next request's cached prefix
    # (observed on Codex: reads exceed the previous prompt by about its output).
    output_cached: bool = False
    # Whether the first request of a session reads a prefix common to all of this client's
    # sessions (its instructions and tool definitions), as earlier sessions in the log show.
    shared_session_start: bool = False
    # The rate of requests to one prefix and cache key past which the provider documents that
    # some overflow to other machines, which do not hold the conversation (OpenAI: about 15 a
    # minute; docs/clients.md). None: no such rate documented. Named in the causes of misses.
    overflow_per_minute: int | None = None
    # The first client version that sends back, within a user turn, the routing token the
    # server gave the turn's first response, so that the turn's requests go back to the
    # machine holding its prefix (Codex CLI: ``x-codex-turn-state`` from 0.88.0;
    # docs/clients.md). A best-effort miss in a log written by an older version names it:
    # the user can update. None: no such token known.
    turn_routing_since: str | None = None
    turn_routing_token: str = ""  # the token's name (Codex: the header it travels in)
    # Whether the client rebuilds an environment part of its hidden prefix (working
    # directory, git status, CLAUDE.md) at a prompt whose working directory differs from the
    # previous turn's, so that the provider reads only the stable part before it (tools and
    # the static system prompt). Observed on Claude Code (docs/clients.md).
    environment_per_directory: bool = False
    source: str = "docs/clients.md"


CLAUDE_CODE = ClientProfile(
    name="claude-code",
    title="Claude Code",
    formats=("claude-code", "claude-stream-json", "claude-json"),
    provider="anthropic",
    caching="breakpoint_at_newest",
    default_ttl_seconds=FIVE_MINUTES,
    environment_per_directory=True,
    source="docs/clients.md#claude-code",
)
CODEX_CLI = ClientProfile(
    name="codex",
    title="Codex CLI",
    formats=("codex", "codex-exec"),
    provider="openai",
    caching="automatic",
    default_ttl_seconds=600.0,
    shortest_ttl_seconds=FIVE_MINUTES,
    longest_ttl_seconds=ONE_HOUR,
    turn_ttl_seconds=ONE_HOUR,
    increment_tokens=128,
    min_cached_tokens=1024,
    best_effort=True,
    output_cached=True,
    shared_session_start=True,
    overflow_per_minute=15,
    turn_routing_since="0.88.0",
    turn_routing_token="x-codex-turn-state",
    source="docs/clients.md#codex-cli",
)

# Gemini CLI on the Gemini API's implicit caching (documented: ai.google.dev/gemini-api/docs/
# caching: on by default for 2.5 and newer models, reads reported as cachedContentTokenCount,
# "no cost saving guarantee", a minimum prompt per model: 1,024 to 4,096 tokens). How long
# an idle prefix lives is not documented [U]: five minutes is assumed; no step is documented
# and the public recordings read counts in no step (10,187; 17,077; 30,927): 1 token.
GEMINI_CLI = ClientProfile(
    name="gemini-cli",
    title="Gemini CLI",
    formats=("gemini-cli",),
    provider="google",
    caching="automatic",
    default_ttl_seconds=FIVE_MINUTES,
    increment_tokens=1,
    min_cached_tokens=1024,
    best_effort=True,
    source="docs/clients.md#gemini-cli",
)

PROFILES: dict[str, ClientProfile] = {p.name: p for p in (CLAUDE_CODE, CODEX_CLI, GEMINI_CLI)}


def older_version(version: str | None, than: str) -> bool:
    """Whether the client version ``version`` (``0.58.0``, ``0.104.0-alpha.3``) comes before
    ``than``, compared by its numbered parts; False where either is not a numbered version
    (nothing is claimed about a version that cannot be read)."""

    def numbers(text: str) -> tuple[int, ...] | None:
        parts = text.strip().split("-", 1)[0].split(".")
        if not parts or not all(part.isdigit() for part in parts):
            return None
        return tuple(int(part) for part in parts)

    mine, theirs = numbers(version or ""), numbers(than)
    return mine is not None and theirs is not None and mine < theirs


def profile_named(name: str) -> ClientProfile:
    """The profile called ``name`` (bad input naming the known ones otherwise)."""
    found = PROFILES.get(name.strip().lower())
    if found is None:
        known = ", ".join(sorted(PROFILES))
        raise BadInputError(f"client: unknown client {name!r}; known clients: {known}")
    return found


def profile_for_format(format_name: str | None) -> ClientProfile | None:
    """The profile of the client that writes logs of ``format_name`` (None: not a session)."""
    for profile in PROFILES.values():
        if format_name in profile.formats:
            return profile
    return None
