"""``cachecast check``: compare a candidate prompt layout (or log) against a baseline.

Both sides are replayed under every target; the candidate regresses when, for any target,
its cost per 1,000 requests rises more than ``max_cost_increase``, its hit rate falls more
than ``max_hit_rate_drop``, or its hit rate is under ``min_hit_rate``. The report also names
where the candidate's prompts first stop sharing a prefix with the baseline's.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from cachecast.contracts import ContractStore
from cachecast.layouts.divergence import Divergence, find_divergence
from cachecast.layouts.evaluate import (
    PER_REQUESTS,
    SideMetrics,
    TargetSpec,
    evaluate,
    tokenize,
)
from cachecast.layouts.sources import PromptSet
from cachecast.layouts.thresholds import Thresholds

# Used when neither the command line nor pyproject.toml sets any threshold: a check that
# can never fail would be worse than an opinionated default.
DEFAULT_THRESHOLDS = Thresholds(
    max_cost_increase=Decimal("0.05"), max_hit_rate_drop=Decimal("0.02"), min_hit_rate=None
)

EXIT_PASS = 0
EXIT_REGRESSION = 1
EXIT_BAD_INPUT = 2


@dataclass(frozen=True, slots=True)
class TargetComparison:
    target: TargetSpec
    baseline: SideMetrics
    candidate: SideMetrics
    violations: tuple[str, ...]

    @property
    def hit_rate_change(self) -> Decimal:
        return self.candidate.hit_rate - self.baseline.hit_rate

    @property
    def cost_change_per_1k(self) -> Decimal | None:
        before, after = self.baseline.cost_per_1k, self.candidate.cost_per_1k
        return None if before is None or after is None else after - before

    @property
    def cost_change_ratio(self) -> Decimal | None:
        before, after = self.baseline.cost_per_1k, self.candidate.cost_per_1k
        if before is None or after is None or before == 0:
            return None
        return (after - before) / before

    def to_json(self) -> dict[str, Any]:
        change = self.cost_change_per_1k
        ratio = self.cost_change_ratio
        return {
            "target": self.target.name,
            "kind": self.target.kind,
            "passed": not self.violations,
            "violations": list(self.violations),
            "baseline": self.baseline.to_json(),
            "candidate": self.candidate.to_json(),
            "hit_rate_change_pp": float(self.hit_rate_change * 100),
            "cost_change_per_1k_requests": None if change is None else str(change),
            "cost_change_ratio": None
            if ratio is None
            else str(ratio.quantize(Decimal("0.000001"))),
        }


def judge(baseline: SideMetrics, candidate: SideMetrics, thresholds: Thresholds) -> tuple[str, ...]:
    """Every threshold the candidate breaks, in words."""
    violations: list[str] = []
    limit = thresholds.max_cost_increase
    before, after = baseline.cost_per_1k, candidate.cost_per_1k
    if limit is not None and before is not None and after is not None:
        if before == 0:
            if after > 0:
                violations.append(f"cost per {PER_REQUESTS:,} requests rose from 0 to ${after:.4f}")
        elif (after - before) / before > limit:
            violations.append(
                f"cost per {PER_REQUESTS:,} requests +{(after - before) / before:.2%}"
                f" (${before:.4f} -> ${after:.4f}) exceeds +{limit:.2%}"
            )
    drop = baseline.hit_rate - candidate.hit_rate
    if thresholds.max_hit_rate_drop is not None and drop > thresholds.max_hit_rate_drop:
        violations.append(
            f"hit rate fell {drop * 100:.2f}pp"
            f" ({baseline.hit_rate:.2%} -> {candidate.hit_rate:.2%}),"
            f" more than {thresholds.max_hit_rate_drop * 100:g}pp"
        )
    if thresholds.min_hit_rate is not None and candidate.hit_rate < thresholds.min_hit_rate:
        violations.append(
            f"hit rate {candidate.hit_rate:.2%} is under the minimum {thresholds.min_hit_rate:.2%}"
        )
    return tuple(violations)


@dataclass(slots=True)
class CheckReport:
    baseline_label: str
    candidate_label: str
    at: dt.date
    thresholds: Thresholds
    comparisons: list[TargetComparison]
    divergence: Divergence | None
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(not comparison.violations for comparison in self.comparisons)

    @property
    def exit_code(self) -> int:
        return EXIT_PASS if self.passed else EXIT_REGRESSION

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "baseline": self.baseline_label,
            "candidate": self.candidate_label,
            "at": self.at.isoformat(),
            "thresholds": self.thresholds.to_json(),
            "targets": [comparison.to_json() for comparison in self.comparisons],
            "divergence": None if self.divergence is None else self.divergence.to_json(),
            "notes": self.notes,
        }

    def summary_lines(self) -> list[str]:
        verdict = "PASS" if self.passed else "REGRESSION"
        lines = [f"cachecast check: {verdict}  ({self.baseline_label} -> {self.candidate_label})"]
        for comparison in self.comparisons:
            base, cand = comparison.baseline, comparison.candidate
            line = (
                f"  {comparison.target.name}: hit rate {base.hit_rate:.2%} -> {cand.hit_rate:.2%}"
                f" ({comparison.hit_rate_change * 100:+.2f}pp)"
            )
            change = comparison.cost_change_per_1k
            if change is not None and base.cost_per_1k is not None:
                line += (
                    f"; per {PER_REQUESTS:,} requests ${base.cost_per_1k:.4f} ->"
                    f" ${cand.cost_per_1k:.4f} ({'+' if change >= 0 else '-'}${abs(change):.4f})"
                )
            lines.append(line)
            lines.extend(f"    ✗ {violation}" for violation in comparison.violations)
        lines.append(_divergence_sentence(self.divergence))
        lines.extend(f"  note: {note}" for note in self.notes)
        return lines

    def to_markdown(self) -> str:
        verdict = "✅ passed" if self.passed else "❌ regression"
        out = [
            f"### cachecast check: {verdict}",
            "",
            f"Baseline `{self.baseline_label}` → candidate `{self.candidate_label}`;"
            f" contracts as of {self.at.isoformat()}.",
            "",
            "| target | hit rate (baseline → candidate) | change | cost / 1k requests"
            " (baseline → candidate) | change | result |",
            "|---|---|---|---|---|---|",
        ]
        for comparison in self.comparisons:
            base, cand = comparison.baseline, comparison.candidate
            change = comparison.cost_change_per_1k
            cost = (
                "n/a (self-hosted)"
                if base.cost_per_1k is None or cand.cost_per_1k is None
                else f"${base.cost_per_1k:.4f} → ${cand.cost_per_1k:.4f}"
            )
            cost_change = (
                "" if change is None else f"{'+' if change >= 0 else '-'}${abs(change):.4f}"
            )
            result = "ok" if not comparison.violations else "<br>".join(comparison.violations)
            out.append(
                f"| `{comparison.target.name}` | {base.hit_rate:.2%} → {cand.hit_rate:.2%} |"
                f" {comparison.hit_rate_change * 100:+.2f}pp | {cost} | {cost_change} | {result} |"
            )
        out += ["", _divergence_sentence(self.divergence).strip()]
        if self.divergence is not None:
            out += ["", "```diff"]
            out += [f"- {line}" for line in self.divergence.baseline_excerpt.splitlines()]
            out += [f"+ {line}" for line in self.divergence.candidate_excerpt.splitlines()]
            out += ["```"]
        for comparison in self.comparisons:
            if comparison.candidate.contract:
                contract = comparison.candidate.contract
                out.append(
                    f"\n`{comparison.target.name}`: contract {contract.get('version')},"
                    f" verified {contract.get('verified_on')}, source {contract.get('source')}"
                )
        out.extend(f"\n_{note}_" for note in self.notes)
        return "\n".join(out) + "\n"


def _divergence_sentence(divergence: Divergence | None) -> str:
    if divergence is None:
        return "  prompts are identical: no divergence"
    where = (
        f"token {divergence.token_position}"
        if divergence.token_position is not None
        else "the text"
    )
    if divergence.segment_label is not None:
        where += f" in {divergence.segment_kind} `{divergence.segment_label}`"
    return (
        f"  first divergence at {where}"
        f" of request {divergence.request_id} ({divergence.differing_requests} of"
        f" {divergence.compared_requests} requests differ): {divergence.candidate_excerpt!r}"
    )


def run_check(
    baseline: PromptSet,
    candidate: PromptSet,
    targets: Sequence[TargetSpec],
    thresholds: Thresholds,
    *,
    at: dt.date,
    store: ContractStore | None,
    model: str | None = None,
) -> CheckReport:
    """Replay both sides under every target and judge the candidate.

    ``model`` tokenizes self-hosted targets and the divergence finder (default: the first
    PROVIDER:MODEL target's model, else each record's own model).
    """
    contract_models = [t.model for t in targets if t.kind == "contract"]
    token_model = model or (contract_models[0] if contract_models else None)
    baseline_tokens = tokenize(baseline.log_path, token_model, None)
    candidate_tokens = tokenize(candidate.log_path, token_model, None)
    baseline_cache = {token_model: baseline_tokens}
    candidate_cache = {token_model: candidate_tokens}
    before = evaluate(
        baseline.log_path,
        targets,
        at=at,
        store=store,
        vllm_model=token_model,
        requests_by_model=baseline_cache,
    )
    after = evaluate(
        candidate.log_path,
        targets,
        at=at,
        store=store,
        vllm_model=token_model,
        requests_by_model=candidate_cache,
    )
    comparisons = [
        TargetComparison(target, base, cand, judge(base, cand, thresholds))
        for target, base, cand in zip(targets, before, after, strict=True)
    ]
    divergence = find_divergence(
        baseline.records,
        candidate.records,
        _in_record_order(baseline, baseline_tokens),
        _in_record_order(candidate, candidate_tokens),
    )
    notes: list[str] = []
    for side in (baseline, candidate):
        if side.layout is not None:
            notes.append(f"{side.label} expanded as {side.layout.arrival.describe()}")
    return CheckReport(
        baseline.label, candidate.label, at, thresholds, comparisons, divergence, notes
    )


def _in_record_order(side: PromptSet, requests: list[Any]) -> list[Any] | None:
    """Tokenized requests aligned with ``side.records`` (the log's line order), or None when
    the counts differ (a record the tokenizer refused would misalign every later pair)."""
    if len(requests) != len(side.records):
        return None
    return sorted(requests, key=lambda request: request.line)
