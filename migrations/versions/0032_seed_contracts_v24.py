"""Seed contracts-v24.json: OpenAI's InstructGPT completions models, shut down on 2024-01-04.

Revision ID: 0032_seed_contracts_v24
Revises: 0031_seed_contracts_v23
Create Date: 2026-12-05

Recordings of 2022-2023 call ``text-davinci-003`` (and its siblings) on the legacy
Completions endpoint, which the catalog did not know. This revision seeds, as mode none (no
prompt caching existed before 2024-10-01), ``text-davinci-003`` from 2022-11-28,
``text-davinci-002`` from 2022-03-15, and ``text-davinci-001``, ``text-curie-001``,
``text-babbage-001`` and ``text-ada-001`` from 2022-01-27, each to its shutdown on 2024-01-04
(OpenAI's deprecations page, '2023-07-06: GPT and embeddings'). Models served before OpenAI's
price cut of 2022-09-01 have two versions, the family's price before and after the cut;
the prices after it are those of the deprecations page's table. The base models ``davinci``,
``curie``, ``babbage`` and ``ada`` and ``code-davinci-002`` are not seeded (docs/contracts.md,
"contracts-v24"). Sources are in each version's notes and in docs/contracts.md.

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v24'; the
downgrade deletes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0032_seed_contracts_v24"
down_revision: str | None = "0031_seed_contracts_v23"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


def upgrade() -> None:
    run_path(SEEDING)["seed_file"]("contracts-v24.json", "seed:contracts-v24")


def downgrade() -> None:
    run_path(SEEDING)["unseed"]("seed:contracts-v24")
