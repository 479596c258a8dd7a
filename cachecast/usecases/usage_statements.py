"""What a Claude Code headless run states about itself, set beside the usage report's figures
(``usecases.usage``): the result message's ``total_cost_usd`` (the client's own estimate,
never used to bill) and its usage totals, checked against the responses the output holds
(docs/clients.md, "Headless output"). A difference is said, not mended: the bill is of the
responses."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal, localcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from cachecast.core.errors import LogRecordError
from cachecast.logs.headless_names import CLAUDE_RESULT, CLAUDE_STREAM
from cachecast.sessions.reading import SessionRequest, session_format
from cachecast.simulator.billing import EXACT
from cachecast.usecases.reports import DecimalNumber, Money, Report

if TYPE_CHECKING:
    from cachecast.logs.headless import Statement

# The counters compared, as (our name, Messages API usage key, modelUsage key).
COUNTERS = (
    ("uncached input", "input_tokens", "inputTokens"),
    ("cache reads", "cache_read_input_tokens", "cacheReadInputTokens"),
    ("cache writes", "cache_creation_input_tokens", "cacheCreationInputTokens"),
    ("output", "output_tokens", "outputTokens"),
)


class ClientStatement(Report):
    """A Claude Code headless run's result message beside our figures for the same file."""

    source: str
    line: int
    session: str
    stated_cost_usd: DecimalNumber | None = Field(description="the result's total_cost_usd")
    cost: Money = Field(description="our bill of the run's usage, under the contracts")
    num_turns: int | None = Field(description="as the result states it (not a request count)")
    usage_check: str = Field(description="the usage read against the result's own totals")
    usage_matches: bool | None = Field(description="None: nothing to compare")


def client_statements(
    paths: Sequence[tuple[Path, str]],
    by_client: dict[str, list[SessionRequest]],
    costs: dict[tuple[str, str], Decimal],
) -> list[ClientStatement]:
    """One entry per result message of the Claude Code headless files in ``paths`` (several
    where runs were appended to one file), each beside our bill of its session's requests
    (``costs`` by file and session)."""
    found: list[ClientStatement] = []
    for path, name in paths:
        try:
            kind = session_format(path)
        except LogRecordError:  # a file that cannot be read: reported where it was read
            continue
        if kind not in (CLAUDE_STREAM, CLAUDE_RESULT):
            continue
        # The parser is imported for a headless file only (a client's own logs need none).
        from cachecast.logs.headless import statements

        requests = [r for r in by_client.get("claude-code", []) if r.facts.source == name]
        for statement in statements(path, name):
            mine = [r for r in requests if r.session == statement.session]
            check, matches = _check(statement, mine, kind)
            found.append(
                ClientStatement(
                    source=name,
                    line=statement.line,
                    session=statement.session,
                    stated_cost_usd=None
                    if statement.total_cost_usd is None
                    else Decimal(statement.total_cost_usd),
                    cost=costs.get((name, statement.session), Decimal(0)),
                    num_turns=statement.num_turns,
                    usage_check=check,
                    usage_matches=matches,
                )
            )
    return found


def _check(
    statement: Statement, requests: list[SessionRequest], kind: str
) -> tuple[str, bool | None]:
    """The read usage summed against the result's totals: per model (``modelUsage``) where
    it states them, else its aggregate ``usage``. A ``claude-json`` file's usage *is* its
    ``modelUsage``: that is checked against the aggregate ``usage`` instead."""
    if kind == CLAUDE_RESULT:
        if statement.usage is None or not statement.model_usage:
            return "nothing to compare: the result states one set of totals", None
        ours = _summed(statement.model_usage.values(), model_keys=True)
        theirs = _counts(statement.usage, model_keys=False)
        what = "modelUsage summed", "the result's usage"
    elif statement.model_usage:
        ours = _from_requests(requests)
        theirs = _summed(statement.model_usage.values(), model_keys=True)
        what = f"{len(requests)} responses summed", "the result's modelUsage"
    elif statement.usage is not None:
        ours = _from_requests(requests)
        theirs = _counts(statement.usage, model_keys=False)
        what = f"{len(requests)} responses summed", "the result's usage"
    else:
        return "nothing to compare: the result states no usage", None
    differences = [
        f"{label} {ours[label]:,} vs {theirs[label]:,}"
        for label, _, _ in COUNTERS
        if ours[label] != theirs[label]
    ]
    if not differences:
        return f"{what[0]} match {what[1]}", True
    return f"{what[0]} differ from {what[1]}: " + "; ".join(differences), False


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _counts(usage: dict[str, Any], *, model_keys: bool) -> dict[str, int]:
    return {
        label: _count(usage.get(camel if model_keys else snake)) for label, snake, camel in COUNTERS
    }


def _summed(entries: Any, *, model_keys: bool) -> dict[str, int]:
    total = {label: 0 for label, _, _ in COUNTERS}
    for entry in entries:
        for label, value in _counts(entry, model_keys=model_keys).items():
            total[label] += value
    return total


def _from_requests(requests: list[SessionRequest]) -> dict[str, int]:
    with localcontext(EXACT):
        return {
            "uncached input": sum(r.observed.uncached for r in requests),
            "cache reads": sum(r.observed.read for r in requests),
            "cache writes": sum(r.observed.write for r in requests),
            "output": sum(r.observed.output for r in requests),
        }
