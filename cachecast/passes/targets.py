"""Targets: ``PROVIDER:MODEL`` parsed, resolved to the contract in force, grouped by tokenizer.

This is the one place where a use case turns the targets a user named into work: every
target's contract is looked up before any log is read (an unknown one fails at once, with
close matches), and targets whose models share a tokenizer share one pass over the log
(gpt-4o and gpt-5.x both tokenize as o200k_base).
"""

from __future__ import annotations

import datetime as dt
import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from cachecast.contracts import ContractStore
from cachecast.contracts.model import ContractTerms
from cachecast.core.errors import (
    BadInputError,
    ContractNotYetInForceError,
    Location,
    UnknownContractError,
    UnknownModelError,
)
from cachecast.simulator.pricing import Target
from cachecast.tokenizers import get_tokenizer


def parse_target(text: str, field: str = "target") -> Target:
    """``openai:gpt-4o`` -> Target; anything else is bad input naming ``field``."""
    provider, sep, model = text.strip().partition(":")
    if not sep or not provider.strip() or not model.strip():
        raise BadInputError(
            f"{text!r} is not PROVIDER:MODEL (e.g. openai:gpt-4o)", location=Location(field=field)
        )
    return Target(provider.strip().lower(), model.strip().lower())


def parse_targets(texts: Sequence[str], field: str = "targets") -> list[Target]:
    """Every target parsed; the first malformed one is named by its index."""
    if not texts:
        raise BadInputError(
            "give at least one target PROVIDER:MODEL", location=Location(field=field)
        )
    return [parse_target(text, f"{field}[{index}]") for index, text in enumerate(texts)]


@dataclass(frozen=True, slots=True)
class ResolvedTarget:
    """A target with the contract in force and the model its pass tokenizes the log as."""

    target: Target
    contract: ContractTerms
    tokenize_as: str
    tokenizer: str


@dataclass(frozen=True, slots=True)
class TokenizerPass:
    """Targets sharing a tokenizer: one pass over the log serves them all."""

    tokenizer: str
    tokenize_as: str  # the model the pass tokenizes as (its first target's)
    members: tuple[int, ...]  # indices into the resolved targets, in the user's order


def resolve_targets(
    targets: Sequence[Target], store: ContractStore, day: dt.date, field: str = "targets"
) -> list[ResolvedTarget]:
    """The contract in force on ``day`` and the tokenizer of every target, before any work."""
    return [
        resolve_target(target, store, day, Location(field=f"{field}[{index}]"))
        for index, target in enumerate(targets)
    ]


def resolve_target(
    target: Target, store: ContractStore, day: dt.date, where: Location
) -> ResolvedTarget:
    """One target's contract in force on ``day`` and its tokenizer; errors are at ``where``."""
    contract = contract_in_force(target, store, day, where)
    tokenize_as, tokenizer = _tokenizer_for(target, contract, where)
    return ResolvedTarget(target, contract, tokenize_as, tokenizer)


def contract_in_force(
    target: Target, store: ContractStore, day: dt.date, where: Location
) -> ContractTerms:
    """The contract in force for ``target`` on ``day``; an unknown one is an error at
    ``where`` with close matches."""
    try:
        return store.as_of(target.provider, target.model, day)
    except UnknownContractError as error:
        close = list(error.close_matches)
        # Before the first version the target is right and its date is wrong: a list of
        # "close matches" would only repeat the target.
        if not close and not isinstance(error, ContractNotYetInForceError):
            known = [f"{p}:{m}" for p, m in store.known_models()]
            close = difflib.get_close_matches(str(target), known, n=5, cutoff=0.4)
        raise type(error)(
            f"{target}: {error.message}", location=where, close_matches=close
        ) from None


def _tokenizer_for(target: Target, contract: ContractTerms, where: Location) -> tuple[str, str]:
    """The model name to tokenize the log with for ``target``, and its tokenizer's name.

    The target's own id comes first, then the contract's canonical id and plain aliases (a
    target may name a dated alias the tokenizer registry does not list)."""
    candidates = [target.model, contract.model]
    candidates += [alias for alias in contract.aliases if not any(c in alias for c in "*?[")]
    patterns: list[str] = []
    for candidate in candidates:
        try:
            return candidate, get_tokenizer(candidate).name
        except UnknownModelError as error:
            patterns = error.known_patterns
    raise UnknownModelError(
        f"{target}: no tokenizer is known for {' or '.join(dict.fromkeys(candidates))};"
        f" known model patterns: {', '.join(patterns)}",
        location=where,
    )


def tokenizer_passes(resolved: Sequence[ResolvedTarget]) -> list[TokenizerPass]:
    """The targets grouped by tokenizer, groups in first-seen order."""
    groups: dict[str, tuple[str, list[int]]] = {}
    for index, item in enumerate(resolved):
        groups.setdefault(item.tokenizer, (item.tokenize_as, []))[1].append(index)
    return [
        TokenizerPass(tokenizer, tokenize_as, tuple(members))
        for tokenizer, (tokenize_as, members) in groups.items()
    ]
