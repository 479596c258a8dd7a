"""Seed contracts-v28.json: the Gemini API's caching minimums on the days its caching page
stated them, for Gemini 2.5 Flash, 2.5 Pro, its three preview snapshots, and 3.5 Flash.

Revision ID: 0038_seed_contracts_v28
Revises: 0037_seed_contracts_v27
Create Date: 2026-12-05

Google's caching page (https://ai.google.dev/gemini-api/docs/caching) moved its per-model
minimum input token counts three times; the stored versions followed only the page of
2026-02-26 and R2's of 2026-10-01:

- 2025-05-08, implicit caching's launch: 2.5 Flash 1,024 and 2.5 Pro 2,048 (4,096 before); the
  2.5 Pro previews kept 4,096 to their shutdown and 2.5 Pro kept it from its GA day;
- by 2025-09-10: 2.5 Pro 4,096 (the last page with 2,048 is dated 2025-08-22);
- by 2026-06-26: 2.5 Flash 2,048, 2.5 Pro 2,048, 3.5 Flash 4,096 (the last pages with 1,024,
  4,096 and 1,024 are dated 2026-05-07 and 2026-05-28); the stored versions changed only on
  2026-10-01, and 3.5 Flash carried 4,096 back to its launch of 2026-05-19.

The two versions of contracts-v1 from 2026-02-26 (2.5 Flash, 2.5 Pro) are right on their first
days: each is shortened to end on 2026-06-26, where its successor in contracts-v28.json starts,
as revision 0012 shortens a corrected version. A later version cannot end a wrong version on its
first day, so, as revision 0029 does, this revision deletes exactly the five other stored
versions that are wrong from their first day (provider, model, start and origin must all match),
and contracts-v28.json gives the same terms over the same spans, split where the page changed,
with the page's minimum on each side. Prices are not changed. Which page shows which figure on
which day is in each version's notes and in docs/contracts.md ("contracts-v28"). The downgrade
deletes the seeded rows (not with 0006's unseed, which would reopen their neighbours), gives the
shortened versions their end back and writes the deleted ones back from their files.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

import sqlalchemy as sa
from alembic import op

revision: str = "0038_seed_contracts_v28"
down_revision: str | None = "0037_seed_contracts_v27"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))
SEED_FILE = "contracts-v28.json"
ORIGIN = "seed:contracts-v28"

# The day the page's figures of June 2026 are first seen (docs/contracts.md, "contracts-v28"),
# and the end the shortened versions had.
CHANGE_2026 = dt.date(2026, 6, 26)
R2_DAY = dt.date(2026, 10, 1)

# Stored versions right on their first day and wrong from CHANGE_2026 (docstring above):
# provider, model, start, origin.
SHORTENED = (
    ("google", "gemini-2.5-flash", dt.date(2026, 2, 26), "seed:contracts-v1"),
    ("google", "gemini-2.5-pro", dt.date(2026, 2, 26), "seed:contracts-v1"),
)

# Stored versions wrong from their first day (docstring above): provider, model, start,
# origin, and the packaged file that seeded each (the downgrade reads it back).
REPLACED = (
    ("google", "gemini-2.5-pro", dt.date(2025, 6, 17), "seed:contracts-v3", "contracts-v3.json"),
    ("google", "gemini-3.5-flash", dt.date(2026, 5, 19), "seed:contracts-v3", "contracts-v3.json"),
    *(
        ("google", model, start, "seed:contracts-v26", "contracts-v26.json")
        for model, start in (
            ("gemini-2.5-pro-preview-03-25", dt.date(2025, 3, 3)),
            ("gemini-2.5-pro-preview-05-06", dt.date(2025, 5, 6)),
            ("gemini-2.5-pro-preview-06-05", dt.date(2025, 6, 5)),
        )
    ),
)


def _set_end(
    versions: sa.TableClause, row: tuple[str, str, dt.date, str], old: dt.date, new: dt.date
) -> None:
    provider, model, start, origin = row
    op.execute(
        versions.update()
        .where(
            versions.c.provider == provider,
            versions.c.model == model,
            versions.c.effective_from == start,
            versions.c.origin == origin,
            versions.c.effective_to == old,
        )
        .values(effective_to=new)
    )


def upgrade() -> None:
    seeding = run_path(SEEDING)
    # Deleted and shortened first: the seeded versions take those days.
    for row in REPLACED:
        seeding["delete_version"](*row[:4])
    for shortened in SHORTENED:
        _set_end(seeding["versions_table"], shortened, R2_DAY, CHANGE_2026)
    seeding["seed_file"](SEED_FILE, ORIGIN)


def downgrade() -> None:
    seeding = run_path(SEEDING)
    # Not revision 0006's unseed: it would stretch the version before each seeded one (its end
    # is that seeded start) up to the next remaining version, over the span the restored row
    # takes back. The seeded versions closed nothing (each ends where the row it splits ends).
    for terms in seeding["_read_seed"](SEED_FILE):
        seeding["delete_version"](terms.provider, terms.model, terms.effective_from, ORIGIN)
    for shortened in SHORTENED:
        _set_end(seeding["versions_table"], shortened, CHANGE_2026, R2_DAY)
    for row in REPLACED:
        seeding["restore_version"](*row)
