"""Seed contracts-v22.json: models public recordings of 2025-2026 call that the catalog did not
price (Z.ai GLM-4.6 and GLM-4.5-Air, Qwen3-Next-80B-A3B-Instruct on Alibaba Cloud Model Studio),
Kimi K2 0905 under its open-weights name, and magistral-small-latest after 2026-07-31.

Revision ID: 0030_seed_contracts_v22
Revises: 0029_seed_contracts_v21
Create Date: 2026-12-05

Five held-out recordings read but left unpriced: ``zai:glm-4.6`` and ``zai:glm-4.5-air``
(charmbracelet/crush against api.z.ai), ``moonshot:kimi-k2-0905`` and
``alibaba:qwen3-next-80b-a3b-instruct`` (the same project through OpenRouter, whose slugs
``moonshotai/kimi-k2-0905`` and ``qwen/qwen3-next-80b-a3b-instruct`` name the vendor), and
``mistral:magistral-small-latest`` answering on 2026-10-06 although its stored version ended at
Magistral Small 1.2's retirement, 2026-07-31. This revision seeds the three models from their
release days, a version of magistral-small-latest from 2026-07-31 on, and gives the stored
``moonshot/kimi-k2-0905-preview`` version of contracts-v11 the alias ``kimi-k2-0905``: an
alias is a child row of one version, so, as revision 0029 did, that row (provider, model, start
and origin must all match) and its children are deleted and seeded again from contracts-v22.json
with the alias and the same terms. The downgrade deletes the seeded rows, gives the stored
magistral-small-latest version its end (2026-07-31) back, and writes the deleted row back from
contracts-v11.json. Sources are in each version's notes and in docs/contracts.md
("contracts-v22").
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

from alembic import op

revision: str = "0030_seed_contracts_v22"
down_revision: str | None = "0029_seed_contracts_v21"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))

# The stored version seeded again with an alias (docstring above): provider, model, start,
# origin, and the packaged file that seeded it (the downgrade reads it back).
REPLACED = (
    (
        "moonshot",
        "kimi-k2-0905-preview",
        dt.date(2025, 9, 4),
        "seed:contracts-v11",
        "contracts-v11.json",
    ),
)

# Stored versions that already ended where a seeded one begins: the upgrade leaves them as they
# are, while ``unseed`` reopens any version ending on a seeded start, so the downgrade writes
# their end back (provider, model, start, end).
ENDED = (("mistral", "magistral-small-latest", dt.date(2025, 6, 10), dt.date(2026, 7, 31)),)

Row = tuple[str, str, dt.date, str, str]


def upgrade() -> None:
    seeding = run_path(SEEDING)
    # Deleted first: the seeded version starts on the deleted one's day.
    for row in REPLACED:
        seeding["delete_version"](*row[:4])
    seeding["seed_file"]("contracts-v22.json", "seed:contracts-v22")


def downgrade() -> None:
    seeding = run_path(SEEDING)
    seeding["unseed"]("seed:contracts-v22")
    versions = seeding["versions_table"]
    for provider, model, start, end in ENDED:
        op.execute(
            versions.update()
            .where(
                versions.c.provider == provider,
                versions.c.model == model,
                versions.c.effective_from == start,
            )
            .values(effective_to=end)
        )
    for row in REPLACED:
        seeding["restore_version"](*row)
