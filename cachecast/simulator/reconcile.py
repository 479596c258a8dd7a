"""Reconciliation: predicted against observed cache reads and writes, request by request.

Where a log carries the usage the provider actually reported, the prediction can be checked.
Each row puts the predicted and observed read and written tokens side by side, and the bill of
each under the same contract; the summary gives the share of requests predicted exactly and
the mean absolute error in tokens and in dollars.

A request "matches exactly" when the predicted read tokens equal the observed ones and, where
the provider reported writes, the predicted written tokens equal them too. The token error of
a request is ``|read_pred - read_obs| + |write_pred - write_obs|`` (write term only where
writes were reported), so a token misfiled between read and write counts twice: once for
each bucket it is wrong in.

A usage that carries no cache-read field at all (a proxy or SDK that strips OpenAI's
``prompt_tokens_details``, a span without the attribute: docs/log-formats.md, "Absent cache
reads") reports no read, which is not a read of 0: under a contract that offers caching such a
request for which we predict a read is not judged on reads (``observed_read`` None, the read
term left out of its error, never an exact match), and the summary counts it apart
(``reads_not_reported``) and sums the reads of the others only. Where we predict no read, or the
contract offers no caching, the absent read is taken as 0: providers leave zero counters out,
and nothing the log shows contradicts a prediction of none.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction

from cachecast.contracts.batch_terms import BatchTerm
from cachecast.contracts.model import CacheMode, ContractTerms
from cachecast.logs.types import ObservedUsage
from cachecast.simulator.billing import (
    EXACT,
    bill_observed,
    bill_request,
    discounted,
    usage_from_observed,
)
from cachecast.simulator.types import Cost, RequestUsage, fraction_text


@dataclass(frozen=True, slots=True)
class ReconciledRequest:
    """One request's prediction next to what the provider reported."""

    request_id: str
    line: int
    predicted_read: int
    observed_read: int | None  # None: the provider did not report reads (module docstring)
    predicted_write: int
    observed_write: int | None  # None: the provider did not report writes
    predicted_cost: Decimal
    observed_cost: Decimal
    observed_input: int = 0  # the prompt length the provider reported (else ours)

    @property
    def reads_reported(self) -> bool:
        return self.observed_read is not None

    @property
    def token_error(self) -> int:
        """The read error where reads were reported plus the write error where writes were."""
        error = 0
        if self.observed_read is not None:
            error += abs(self.predicted_read - self.observed_read)
        if self.observed_write is not None:
            error += abs(self.predicted_write - self.observed_write)
        return error

    @property
    def exact_match(self) -> bool:
        """Predicted to the token; never where the reads were not reported (nothing held the
        prediction of reads)."""
        return self.reads_reported and self.token_error == 0

    @property
    def within_one_percent(self) -> bool:
        """The token error is at most 1% of the prompt (100 x error <= prompt); never where
        the reads were not reported."""
        return self.reads_reported and 100 * self.token_error <= self.observed_input

    @property
    def cost_error(self) -> Decimal:
        with localcontext(EXACT):
            return abs(self.predicted_cost - self.observed_cost)


def writes_billed_apart(contract: ContractTerms) -> bool:
    """Whether cache writes are a quantity of their own under ``contract``: explicit
    breakpoints, or a write price other than the input price. Not under a contract that
    offers no caching: nothing is written, every prompt token is input."""
    if not contract.offers_caching:
        return False
    if contract.mode is not CacheMode.AUTOMATIC:
        return True
    return any(option.write_multiplier != 1 for option in contract.ttl_options)


def reconcile_request(
    predicted: RequestUsage,
    observed: ObservedUsage,
    contract: ContractTerms,
    predicted_cost: Cost | None = None,
    term: BatchTerm | None = None,
) -> ReconciledRequest:
    """Compare one prediction with the usage the provider reported for the same request.

    ``predicted_cost``: the prediction's bill under ``contract`` where the caller has it
    already (the replay bills every request anyway), else it is billed here. ``term``: the
    batch (or flex) term the request was billed under, if any: both bills are discounted by
    it (``billing.discounted``)."""
    observed_usage = usage_from_observed(
        observed,
        contract,
        request_id=predicted.request_id,
        line=predicted.line,
        timestamp=predicted.timestamp,
        scope=predicted.scope,
        fallback_input_tokens=predicted.input_tokens,
        fallback_output_tokens=predicted.output_tokens,
    )
    if predicted_cost is None:
        predicted_cost = discounted(bill_request(predicted, contract), term)
    writes_reported = observed.cache_write_tokens is not None or bool(observed.cache_write_by_ttl)
    if not writes_billed_apart(contract):
        # OpenAI's automatic cache (GPT-5.5 and before) reports cache_write_tokens: 0 on every
        # response: nothing is billed at a write price, while the prediction counts the
        # tokens the cache took in. The two are not the same quantity: not compared.
        writes_reported = False
    # A read the usage does not report is unknown, not 0 (module docstring), except where
    # the contract offers no caching (nothing can be read, the prediction is 0 whatever
    # the log says, and the bill is the same) and where we predict no read: providers leave
    # zero counters out (Anthropic's nullable cache counters, Mistral's usage without one),
    # so an absent field agrees with a prediction of none; only a predicted read can
    # disagree with a read the log does not show.
    reads_reported = (
        observed.cache_read_tokens is not None
        or not contract.offers_caching
        or predicted.cache_read_tokens == 0
    )
    return ReconciledRequest(
        request_id=predicted.request_id,
        line=predicted.line,
        predicted_read=predicted.cache_read_tokens,
        observed_read=observed_usage.cache_read_tokens if reads_reported else None,
        predicted_write=predicted.cache_write_total,
        observed_write=observed_usage.cache_write_total if writes_reported else None,
        predicted_cost=predicted_cost.total,
        observed_cost=discounted(bill_observed(observed, contract, observed_usage), term).total,
        observed_input=observed_usage.input_tokens,
    )


@dataclass(slots=True)
class ReconciliationSummary:
    """Running error statistics over reconciled requests; constant memory."""

    requests: int = 0
    exact_matches: int = 0
    token_error_sum: int = 0
    cost_error_sum: Decimal = Decimal(0)
    reads_not_reported: int = 0  # requests whose provider did not report reads
    predicted_read_sum: int = 0  # over the other requests only
    observed_read_sum: int = 0
    within_one_percent: int = 0
    writes_reported: int = 0  # requests whose provider reported writes
    predicted_write_sum: int = 0  # over those requests
    observed_write_sum: int = 0
    predicted_cost_sum: Decimal = Decimal(0)
    observed_cost_sum: Decimal = Decimal(0)

    def add(self, row: ReconciledRequest) -> None:
        self.requests += 1
        self.exact_matches += row.exact_match
        self.within_one_percent += row.within_one_percent
        self.token_error_sum += row.token_error
        with localcontext(EXACT):
            self.cost_error_sum += row.cost_error
            self.predicted_cost_sum += row.predicted_cost
            self.observed_cost_sum += row.observed_cost
        if row.observed_read is None:
            self.reads_not_reported += 1
        else:
            self.predicted_read_sum += row.predicted_read
            self.observed_read_sum += row.observed_read
        if row.observed_write is not None:
            self.writes_reported += 1
            self.predicted_write_sum += row.predicted_write
            self.observed_write_sum += row.observed_write

    @property
    def within_one_percent_share(self) -> Fraction:
        return Fraction(self.within_one_percent, self.requests) if self.requests else Fraction(0)

    @property
    def read_bias(self) -> Fraction:
        """Mean predicted minus observed read tokens (positive: we predict more reads), over
        the requests whose provider reported reads."""
        reported = self.requests - self.reads_not_reported
        if not reported:
            return Fraction(0)
        return Fraction(self.predicted_read_sum - self.observed_read_sum, reported)

    @property
    def write_bias(self) -> Fraction:
        """Mean predicted minus observed written tokens, over requests reporting writes."""
        if not self.writes_reported:
            return Fraction(0)
        return Fraction(self.predicted_write_sum - self.observed_write_sum, self.writes_reported)

    @property
    def cost_bias(self) -> Fraction:
        """Mean predicted minus observed bill (positive: we predict a higher bill)."""
        if not self.requests:
            return Fraction(0)
        return Fraction(self.predicted_cost_sum - self.observed_cost_sum) / self.requests

    @property
    def exact_match_share(self) -> Fraction:
        return Fraction(self.exact_matches, self.requests) if self.requests else Fraction(0)

    @property
    def mean_abs_error_tokens(self) -> Fraction:
        return Fraction(self.token_error_sum, self.requests) if self.requests else Fraction(0)

    @property
    def mean_abs_error_cost(self) -> Fraction:
        if not self.requests:
            return Fraction(0)
        return Fraction(self.cost_error_sum) / self.requests

    def to_json(self) -> dict[str, object]:
        return {
            "requests": self.requests,
            "exact_matches": self.exact_matches,
            "exact_match_share": fraction_text(self.exact_match_share),
            "mean_abs_error_tokens": fraction_text(self.mean_abs_error_tokens),
            "mean_abs_error_cost": fraction_text(self.mean_abs_error_cost),
            "predicted_cache_read_tokens": self.predicted_read_sum,
            "observed_cache_read_tokens": self.observed_read_sum,
            "reads_not_reported": self.reads_not_reported,
        }
