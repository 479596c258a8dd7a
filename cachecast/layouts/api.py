"""In-memory entry points for callers that hold documents, not files (the HTTP service).

``check_documents`` takes each side as a layout's text (plus an optional values text) or as
log records, and returns the same ``CheckReport`` as ``cachecast check``. Errors are the
command's: ``LayoutError``, ``InputError``, ``ConfigError``, ``TargetError`` (all
``ValueError``: bad input, HTTP 400/422), ``UnknownContractError``, and the tokenizers'
``LogError`` naming the side as the file.
"""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cachecast.contracts import ContractStore
from cachecast.layouts.check import DEFAULT_THRESHOLDS, CheckReport, run_check
from cachecast.layouts.evaluate import parse_target
from cachecast.layouts.sources import InputError, PromptSet, load_prompt_set
from cachecast.layouts.spec import LayoutError
from cachecast.layouts.thresholds import Thresholds


@dataclass(frozen=True, slots=True)
class SideDocument:
    """One side of a check: a layout (YAML text, ``jinja`` for a whole-file Jinja2 layout)
    with an optional values text, or log records."""

    name: str  # shown in the report, e.g. 'baseline'
    layout: str | None = None
    values: str | None = None
    jinja: bool = False
    records: list[dict[str, Any]] = field(default_factory=list)


def _materialize(side: SideDocument, workdir: Path, model: str | None) -> PromptSet:
    """The side as a PromptSet labelled by its name; errors name the side, not a temp file."""
    try:
        return replace(_load(side, workdir, model), label=side.name)
    except LayoutError as error:
        raise LayoutError(side.name, error.field, error.reason) from error
    except InputError as error:
        raise InputError(str(error).replace(str(workdir) + "/", "")) from error


def _load(side: SideDocument, workdir: Path, model: str | None) -> PromptSet:
    if (side.layout is None) == (not side.records):
        raise InputError(f"{side.name}: give either a layout or log records, not both or neither")
    if side.layout is not None:
        path = workdir / f"{side.name}.yaml{'.j2' if side.jinja else ''}"
        path.write_text(side.layout, encoding="utf-8")
        values = None
        if side.values is not None:
            values = workdir / f"{side.name}-values.yaml"
            values.write_text(side.values, encoding="utf-8")
        return load_prompt_set(path, workdir / "out", values=values, model=model, name=side.name)
    path = workdir / f"{side.name}.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for record in side.records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return load_prompt_set(path, workdir / "out", model=model, name=side.name)


def check_documents(
    baseline: SideDocument,
    candidate: SideDocument,
    targets: Sequence[str],
    store: ContractStore | None,
    *,
    thresholds: Thresholds | None = None,
    at: dt.date | None = None,
    model: str | None = None,
    block_size: int | None = None,
) -> CheckReport:
    """``cachecast check`` on in-memory documents. ``thresholds`` None: the defaults."""
    if not targets:
        raise InputError("give at least one target")
    specs = [parse_target(text, default_block_size=block_size) for text in targets]
    day = at or dt.datetime.now(dt.UTC).date()
    with tempfile.TemporaryDirectory(prefix="cachecast-check-") as directory:
        workdir = Path(directory)
        before = _materialize(baseline, workdir, model)
        after = _materialize(candidate, workdir, model)
        return run_check(
            before,
            after,
            specs,
            thresholds or DEFAULT_THRESHOLDS,
            at=day,
            store=store,
            model=model,
        )
