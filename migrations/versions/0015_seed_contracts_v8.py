"""Seed contracts-v8.json: Anthropic's fast mode, priced as models of their own.

Revision ID: 0015_seed_contracts_v8
Revises: 0014_seed_contracts_v7
Create Date: 2026-12-04

A Claude Code response served in fast mode says ``"speed": "fast"`` in its usage and is read
as ``<model>-fast`` (docs/clients.md, "Format variants"). Fast mode bills a multiple of the
standard prices, so each ``<model>-fast`` gets dated versions of its own, from the day fast
mode became available for the model to its removal where documented: Opus 4.6 (launch
promotion, then 6x with a long-context tier, then 6x flat), Opus 4.7 (6x, removed
2026-07-24), Opus 4.8 (2x, removed 2026-11-30), Opus 5, Opus 5.5, Fable 5.2 and Mythos
5.2 (2x). Sources are in each version's notes and in docs/contracts.md ("contracts-v8");
launch dates in ``data/lifecycle.json``.

The same document gives models Codex and Claude Code run a dated history: gpt-5.2-codex from
its API launch (2026-01-15), Claude Code's Vertex ids (claude-opus-4-1, Opus 4 and Sonnet 4
from their launch, @-aliases of Claude 3.5 Haiku and 3.7 Sonnet), and codex-mini's API id
codex-mini-latest as an alias. Alias-only corrections start 2026-12-04 and close the open
version they correct, as any later version does.

Rows are added exactly as revision 0006 adds its own (same overlap check, and an open version
of the same contract closed where a seeded one begins), with origin 'seed:contracts-v8'; the
downgrade deletes them and reopens what they closed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0015_seed_contracts_v8"
down_revision: str | None = "0014_seed_contracts_v7"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


def upgrade() -> None:
    run_path(SEEDING)["seed_file"]("contracts-v8.json", "seed:contracts-v8")


def downgrade() -> None:
    run_path(SEEDING)["unseed"]("seed:contracts-v8")
