"""``estimate`` on agent sessions (Claude Code transcripts, Codex CLI rollouts): priced from
what the provider reported for each request, not from the visible messages tokenized.

A transcript omits the system prompt and tools its client adds and says nothing of where the
client put its cache breakpoints, so tokenizing what it shows prices a fraction of each
prompt with nothing cached (a flat 0% hit rate). Here, per request (docs/predictions.md):

* **observed**: the prompt total (uncached + cache reads + writes), its split into cache
  reads, writes per TTL and uncached tokens, and the output, from the usage the log carries;
  each target's bill is that usage under the target's contract in force on ``at`` (writes
  under the option of the same TTL name, else the contract's default). On a target of
  another provider or model the split is carried over as it is: a what-if, said in its notes;
* **predicted**: what the client profile (docs/clients.md) says each request should have
  read, from the requests before it and its own length (``sessions.predictor``); set against
  the observation in each target's ``reconciliation``.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path

from cachecast.contracts.answers import ContractLookup
from cachecast.core.errors import LogRecordError
from cachecast.logs.errors import bad_line_count
from cachecast.passes.progress import Progress
from cachecast.passes.targets import ResolvedTarget
from cachecast.sessions.reading import TTL_5M, ModelDefaults
from cachecast.sessions.replay import PredictedRequest
from cachecast.simulator.billing import EXACT, add_costs, bill_request, bill_without_cache
from cachecast.simulator.types import Cost
from cachecast.usecases.estimate import (
    EstimateReport,
    EstimateRequest,
    ReconciliationReport,
    TargetEstimate,
)
from cachecast.usecases.reports import ContractReference, CostBreakdown, issues_of
from cachecast.usecases.session_prompts import read_predicted
from cachecast.usecases.session_reports import client_report, session_profile
from cachecast.usecases.usage_pricing import ContractCache, usage_of, writes_of, writes_on

TOKENIZER = "none: the provider's reported usage (agent session)"
ZERO_COST = Cost(Decimal(0), Decimal(0), Decimal(0), Decimal(0), Decimal(0))


def session_estimate(
    request: EstimateRequest,
    paths: list[tuple[Path, str]],
    day: dt.date,
    resolved: list[ResolvedTarget],
    store: ContractLookup,
    progress: Progress,
) -> EstimateReport:
    """The report of :func:`cachecast.usecases.estimate.estimate` for session files;
    ``progress`` counts the requests priced (read and predicted first: their total known)."""
    errors: list[LogRecordError] = []
    defaults = ModelDefaults(request.log.default_model, request.log.default_provider)
    predicted = read_predicted(paths, request.log.on_bad_record, errors, request.client, defaults)
    progress.start("pricing requests", len(predicted))
    chosen = session_profile(request)
    versions = {
        each.request.client_version for each in predicted if each.request.client_version is not None
    }
    report = EstimateReport(
        client=None if chosen is None else client_report(chosen[0], versions, chosen[1]),
        at=day,
        sources=[name for _, name in paths],
        skipped_lines=bad_line_count(errors),
        errors=issues_of(errors),
        targets=[_target(predicted, target, ContractCache(store), day) for target in resolved],
    )
    progress.advance(len(predicted))
    return report


def _target(
    predicted: list[PredictedRequest],
    target: ResolvedTarget,
    contracts: ContractCache,
    day: dt.date,
) -> TargetEstimate:
    contract = target.contract
    cost = plain = ZERO_COST
    prompt = read = uncached = output = breakpoints = exact = 0
    writes: dict[str, int] = {}
    predicted_read = error_tokens = 0
    error_cost = Decimal(0)
    logged: set[tuple[str, str]] = set()  # (provider, model) as the log names them
    for each in predicted:
        call = each.request
        observed = call.observed
        guess = each.predicted
        if contract.offers_caching:
            usage = usage_of(call, observed.read, writes_on(contract, writes_of(call)))
            guessed = usage_of(
                call, guess.read, writes_on(contract, {guess.ttl or TTL_5M: guess.write})
            )
        else:
            # No caching offered (mode none): the whole prompt is input, observed or not.
            usage = guessed = usage_of(call, 0, {})
        with localcontext(EXACT):
            billed = bill_request(usage, contract)
            cost = add_costs(cost, billed)
            plain = add_costs(plain, bill_without_cache(usage, contract))
            error_cost += abs(bill_request(guessed, contract).total - billed.total)
        prompt += usage.input_tokens
        read += usage.cache_read_tokens
        uncached += usage.uncached_input_tokens
        output += usage.output_tokens
        for name, tokens in usage.cache_write_tokens.items():
            writes[name] = writes.get(name, 0) + tokens
        # Only a breakpoint provider reports writes: a read or write there means a breakpoint.
        breakpoints += observed.writes_reported and bool(observed.read or observed.write)
        predicted_read += guess.read
        error_tokens += abs(guess.read - observed.read)
        exact += guess.read == observed.read
        logged.add((call.provider or "", call.facts.model))
    requests = len(predicted)
    notes = [
        f"prompt lengths and their split into cache reads, writes and uncached tokens are the"
        f" usage the provider reported ({requests} requests, observed); what the client"
        " profile predicts from the requests before each is under reconciliation"
    ]
    own = (contract.provider, contract.model)
    others = sorted(
        model
        for provider, model in logged
        if (found := contracts.get(provider, model, day)) is None
        or isinstance(found, str)
        or (found.provider, found.model) != own
    )
    if not contract.offers_caching:
        notes.append(
            f"{contract.provider}:{contract.model} offers no prompt caching on {day}: every"
            " prompt token is priced as input, whatever the log read or wrote"
        )
    elif others:
        notes.append(
            f"the sessions ran on {', '.join(others)}: their observed split is carried"
            f" over to {contract.provider}:{contract.model} unchanged (a what-if; cachecast"
            " usage --target prices it on each request's own date)"
        )
    with localcontext(EXACT):
        savings = plain.total - cost.total
    return TargetEstimate(
        provider=target.target.provider,
        model=target.target.model,
        contract=ContractReference.of(contract),
        tokenizer=TOKENIZER,
        requests=requests,
        input_tokens=prompt,
        cache_read_tokens=read,
        cache_write_tokens=sum(writes.values()),
        cache_write_tokens_by_ttl=dict(sorted(writes.items())),
        uncached_input_tokens=uncached,
        output_tokens=output,
        hit_rate=read / prompt if prompt else 0.0,
        exact_tokens=True,
        requests_with_breakpoints=breakpoints,
        assumed_breakpoint=None,
        cost=CostBreakdown.of(cost),
        cost_without_cache=plain.total,
        savings=savings,
        reconciliation=ReconciliationReport(
            requests=requests,
            exact_matches=exact,
            exact_match_share=Fraction(exact, requests or 1),
            mean_abs_error_tokens=Fraction(error_tokens, requests or 1),
            mean_abs_error_cost=Fraction(error_cost) / (requests or 1),
            predicted_cache_read_tokens=predicted_read,
            observed_cache_read_tokens=read,
        )
        if requests
        else None,
        notes=notes,
    )
