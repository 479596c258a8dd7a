"""Seed contracts-v15.json: Perplexity's Sonar models, Cerebras's models and the Gemini API's
Gemini 3 Pro Preview, which recordings name and the catalog could not price.

Revision ID: 0023_seed_contracts_v15
Revises: 0022_seed_contracts_v14
Create Date: 2026-12-05

Public recordings of 2025-2026 call Perplexity (``api.perplexity.ai``: ``sonar``,
``sonar-pro``, ``sonar-reasoning``, ``sonar-reasoning-pro``, ``sonar-deep-research``) and
Cerebras (``api.cerebras.ai``: ``llama3.1-8b``, ``llama-3.3-70b``, ``qwen-3-32b``,
``gpt-oss-120b``), two providers the catalog had no contract for, and Gemini 3 Pro Preview on
the Gemini API, stored only for Vertex AI (as was the September 2025 Gemini 2.5 Flash-Lite
preview, also added for the Gemini API). Each gets dated versions from its launch to its
shutdown or to today. Perplexity documents no prompt caching and Cerebras's documented
caching states no price for cached tokens, so their versions are of mode ``none``;
Perplexity's per-request search fee has no field in a contract version and is not billed.
Launch dates are in ``data/lifecycle.json``; prices and sources are in each version's notes
and in docs/contracts.md ("contracts-v15").

One correction: six retired models came back in the price-map import of 2026-12-03 (origin
'seed:contracts-v3'): ``anthropic/claude-3-haiku`` (retired 2026-04-20),
``anthropic/claude-3-opus-latest`` (2026-01-05), ``anthropic/claude-3-sonnet`` (2025-07-21),
``openai/gpt-5.2-chat-latest`` (shut down 2026-08-10), ``openai/o1-mini`` (2025-10-27) and
``openai/o1-preview`` (2025-07-28), each stored from 2026-12-03 with no end although its
stored history ends at the provider's retirement date (``lifecycle.json`` declares the span
between as not served). No later version can end such a row without pricing days on which
the model did not serve, so this revision deletes exactly those rows and their children
(provider, model, start and origin must all match), as revision 0021 deleted
``gemini-1.5-flash``'s; no other row changes. The downgrade writes them back from
contracts-v3.json.

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v15'; the
downgrade deletes them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0023_seed_contracts_v15"
down_revision: str | None = "0022_seed_contracts_v14"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


# The stored versions that brought a retired model back (docstring above): provider, model,
# start, origin. Each is in RETIRED_RETURNS_FILE as seeded.
RETIRED_RETURNS = tuple(
    (provider, model, dt.date(2026, 12, 3), "seed:contracts-v3")
    for provider, model in (
        ("anthropic", "claude-3-haiku"),
        ("anthropic", "claude-3-opus-latest"),
        ("anthropic", "claude-3-sonnet"),
        ("openai", "gpt-5.2-chat-latest"),
        ("openai", "o1-mini"),
        ("openai", "o1-preview"),
    )
)
RETIRED_RETURNS_FILE = "contracts-v3.json"


def upgrade() -> None:
    seeding = run_path(SEEDING)
    seeding["seed_file"]("contracts-v15.json", "seed:contracts-v15")
    for row in RETIRED_RETURNS:
        seeding["delete_version"](*row)


def downgrade() -> None:
    seeding = run_path(SEEDING)
    seeding["unseed"]("seed:contracts-v15")
    for row in RETIRED_RETURNS:
        seeding["restore_version"](*row, RETIRED_RETURNS_FILE)
