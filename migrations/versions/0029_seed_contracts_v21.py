"""Seed contracts-v21.json: Claude on Bedrock is cached only from Bedrock's caching launch,
and only for the models AWS lists; Azure's Grok 3 and Grok 3 mini.

Revision ID: 0029_seed_contracts_v21
Revises: 0028_seed_contracts_v20
Create Date: 2026-12-05

Seven stored Bedrock Claude versions claimed explicit prompt caching from each model's first
day: six of contracts-v2 (Claude 3 Opus, Claude 3.5 Sonnet v1 and v2, Claude 3.5 Haiku,
Claude 3.7 Sonnet and an id no Bedrock model has, ``anthropic.claude-3-7-sonnet-20240620-v1:0``)
and ``regional.anthropic.claude-3-sonnet-20240229-v1:0`` of contracts-v3. Bedrock's
prompt-caching page (https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html)
makes caching generally available with Claude 3.7 Sonnet, Claude 3.5 Haiku and Amazon Nova
(from 2025-04-07, the day the stored Nova contracts use), keeps Claude 3.5 Sonnet v2's caching
for the customers of the December 2024 preview only, and lists neither Claude 3 Opus, Claude 3
Sonnet nor Claude 3.5 Sonnet v1.

A later version cannot end a wrong version on its first day, so this revision deletes exactly
those rows and their children (provider, model, start and origin must all match), as
revision 0023 deleted six retired models' rows, then seeds contracts-v21.json: mode ``none``
from each model's stored first day, at the stored prices; Claude 3.5 Haiku and 3.5 Sonnet v2
keep the stored caching terms from the preview's first day (2024-12-04: a stored recording of
2025-03-18 shows Bedrock caching 3.5 Haiku; the page keeps 3.5 Sonnet v2's caching for the
preview's customers) and Claude 3.7 Sonnet from general availability (first stated 2025-04-02);
the others have no end. The id ``anthropic.claude-3-7-sonnet-20240620-v1:0`` (Claude 3.7 Sonnet
was released in February 2025; 20240620 is Claude 3.5 Sonnet's snapshot date) is deleted and not
replaced. The file also adds Azure AI Foundry's ``grok-3`` and ``grok-3-mini`` (mode ``none``,
from Microsoft Build 2025 on 2025-05-19 to their retirement on 2026-05-01).
The downgrade deletes the seeded rows and writes the deleted ones back from their files.
Sources are in each version's notes and in docs/contracts.md ("contracts-v21").
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0029_seed_contracts_v21"
down_revision: str | None = "0028_seed_contracts_v20"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))

# The stored versions that claimed caching Bedrock did not offer (docstring above): provider,
# model, start, origin, and the packaged file that seeded each (the downgrade reads it back).
WRONGLY_CACHED = (
    *(
        ("bedrock", model, start, "seed:contracts-v2", "contracts-v2.json")
        for model, start in (
            ("anthropic.claude-3-opus-20240229-v1:0", dt.date(2024, 2, 29)),
            ("anthropic.claude-3-5-sonnet-20240620-v1:0", dt.date(2024, 6, 20)),
            ("anthropic.claude-3-5-sonnet-20241022-v2:0", dt.date(2024, 10, 22)),
            ("anthropic.claude-3-5-haiku-20241022-v1:0", dt.date(2024, 10, 22)),
            ("anthropic.claude-3-7-sonnet-20250219-v1:0", dt.date(2025, 2, 19)),
            ("anthropic.claude-3-7-sonnet-20240620-v1:0", dt.date(2024, 6, 20)),
        )
    ),
    (
        "bedrock",
        "regional.anthropic.claude-3-sonnet-20240229-v1:0",
        dt.date(2024, 2, 29),
        "seed:contracts-v3",
        "contracts-v3.json",
    ),
)

Row = tuple[str, str, dt.date, str, str]


def upgrade() -> None:
    seeding = run_path(SEEDING)
    # Deleted first: the seeded versions start on the deleted ones' days.
    for row in WRONGLY_CACHED:
        seeding["delete_version"](*row[:4])
    seeding["seed_file"]("contracts-v21.json", "seed:contracts-v21")


def downgrade() -> None:
    seeding = run_path(SEEDING)
    seeding["unseed"]("seed:contracts-v21")
    for row in WRONGLY_CACHED:
        seeding["restore_version"](*row)
