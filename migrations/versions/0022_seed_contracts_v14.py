"""Seed contracts-v14.json: models that served long before their first stored version.

Revision ID: 0022_seed_contracts_v14
Revises: 0021_seed_contracts_v13
Create Date: 2026-12-05

About 270 stored models start on 2026-10-01 or 2026-12-03, the days price maps were read, not
their launches, so a recording of 2024-2026 that names one of them met no contract. This adds
dated versions from each launch to the stored first version (each ends exactly where that
version starts, or at a shutdown whose later days ``data/lifecycle.json`` declares not served)
for the models most likely to appear in recordings:

- Bedrock's Amazon Nova Micro, Lite and Pro (``amazon.``, with their ``us.`` aliases, and the
  ``apac.`` and ``eu.`` profiles) from re:Invent 2024 without caching until Bedrock prompt
  caching's general availability in April 2025, then explicit cachePoint caching; Nova Premier
  (alias ``us.amazon.nova-premier-v1:0``) from 2025-04-30 to its end of life, 2026-09-14;
- Claude 3 Haiku and Claude 3 Opus on Vertex AI (with their ``@`` ids) from the Anthropic API
  launch, without caching until 2025-02-24; Claude Opus 4.6, Sonnet 4.6, Opus 4.7 on Bedrock
  (``anthropic.`` and ``us.``) and Vertex, Fable 5.2 on Bedrock (``global.``, ``regional.``)
  and Vertex, back to the Anthropic API launch;
- ``xai/grok-code-fast-1-0825``; DeepSeek's ``deepseek-v3``, ``deepseek-r1``,
  ``deepseek-v3.1-terminus``, ``deepseek-v3.2`` (each generation while DeepSeek's API served
  it) and ``deepseek-coder``; Moonshot's ``kimi-k2-thinking-turbo`` and ``kimi-k2.5``;
  ``openai/gpt-image-1``; Vertex's ``gemini-2.5-flash-preview-09-2025``,
  ``gemini-2.5-flash-lite-preview-09-2025``, ``gemini-3.1-pro-preview``,
  ``gemini-3.1-flash-lite-preview``; the gateway names ``google/gemini-flash-1.5``,
  ``gemini-pro-1.5``, ``gemini-flash-1.5-8b`` (copies of the Gemini API models' histories).

Sources are in each version's notes and in docs/contracts.md ("contracts-v14").

Rows, and the off-peak prices of the DeepSeek-V3 and R1 versions of 2025-02-26, are added
exactly as revision 0009 adds its own (its upgrade, run with this seed's file and origin, as
revision 0014 does), with origin 'seed:contracts-v14'; the downgrade deletes them.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

revision: str = "0022_seed_contracts_v14"
down_revision: str | None = "0021_seed_contracts_v13"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEED_FILE = "contracts-v14.json"
ORIGIN = "seed:contracts-v14"


def _seeding_with_off_peak() -> ModuleType:
    """Revision 0009 (its file name is not an importable module name), set to seed this
    revision's file under this revision's origin."""
    path = Path(__file__).with_name("0009_seed_contracts_v3.py")
    spec = importlib.util.spec_from_file_location("cachecast_migration_0009", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.SEED_FILE = SEED_FILE
    module.ORIGIN = ORIGIN
    return module


def upgrade() -> None:
    _seeding_with_off_peak().upgrade()


def downgrade() -> None:
    _seeding_with_off_peak().downgrade()
