"""The usage report's self-hosted what-if: the same session requests served by a vLLM
deployment of the user's choice, figured by :func:`cachecast.usecases.compare.compare` on
them (the requests already read and predicted, replayed as ``compare`` replays agent
sessions: observed prompt lengths and lineages, no tokenizer; docs/economics.md).

The option reads ``MODEL@GPU[xN][:PRICE]`` (``llama-3.3-70b@h200x4:2.50``: a model preset or,
on the command line, a ``config.json``; an accelerator; GPUs per replica; US$ per GPU-hour).
This module is imported by every usage report: the self-hosted machinery (numpy, the model
geometry) is imported only where the option is given.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal, localcontext
from typing import TYPE_CHECKING

from pydantic import Field

from cachecast.core.errors import BadInputError, Location
from cachecast.sessions.replay import PredictedRequest
from cachecast.simulator.billing import EXACT
from cachecast.usecases.reports import DecimalNumber, Money, Report
from cachecast.usecases.request_base import Request

if TYPE_CHECKING:
    from cachecast.usecases.compare import CompareRequest

FIELD = "self_hosted"
_SPEC = re.compile(r"^(?P<gpu>.+?)(?:x(?P<gpus>[0-9]+))?(?::(?P<price>[^:]*))?$")


class SelfHostedOption(Request):
    """A vLLM deployment to serve the sessions: ``compare``'s deployment options."""

    model: str = Field(
        min_length=1, max_length=500, description="a model preset (command line: or a config.json)"
    )
    gpu: str = Field(min_length=1, max_length=100, examples=["h200"])
    gpus: int = Field(1, ge=1, le=64, description="GPUs per replica (tensor parallel)")
    gpu_price: Decimal | None = Field(None, description="US$ per GPU-hour; without it GPU-hours")
    files: bool = Field(False, description="whether ``model`` may name a config.json file")

    @classmethod
    def of_text(cls, text: str, *, files: bool = True) -> SelfHostedOption:
        """``MODEL@GPU[xN][:PRICE]``; ``files``: MODEL may be a config.json path (the command
        line), else only a preset (a server reads no file of its own for a client)."""
        model, at, rest = text.strip().rpartition("@")
        found = _SPEC.match(rest)
        if not at or not model or found is None:
            raise BadInputError(
                f"expected MODEL@GPU[xN][:PRICE] (e.g. llama-3.3-70b@h200x4:2.50), got {text!r}",
                location=Location(field=FIELD),
            )
        price = found["price"]
        if price is not None:
            from cachecast.usecases.compare import parse_price

            checked = parse_price(price, FIELD)
        return cls(
            model=model,
            gpu=found["gpu"],
            gpus=int(found["gpus"] or 1),
            gpu_price=checked if price is not None else None,
            files=files,
        )

    def compare_request(self) -> CompareRequest:
        """``compare``'s request for this deployment (its log: the sessions given apart)."""
        from cachecast.economics.geometry import preset_names
        from cachecast.passes.log_input import LogInput
        from cachecast.usecases.capacity import ModelReference
        from cachecast.usecases.compare import CompareRequest, parse_price

        if not self.files and self.model not in preset_names():
            raise BadInputError(
                f"{self.model!r} is no model preset (choose one of {', '.join(preset_names())})",
                location=Location(field=FIELD),
            )
        if self.gpu_price is not None:
            parse_price(str(self.gpu_price), FIELD)
        return CompareRequest(
            log=LogInput(),  # the sessions are given to ``compare`` apart
            model=ModelReference.of_text(self.model),
            gpu=self.gpu,
            gpus=self.gpus,
            gpu_price=self.gpu_price,
        )

    def check(self) -> None:
        """Refuse an unknown model, accelerator or price before any file is read."""
        from cachecast.usecases.capacity import resolve_deployment

        resolve_deployment(self.compare_request())


class SelfHostedWhatIf(Report):
    """The sessions' requests served by one vLLM deployment (``compare`` on them)."""

    scenario: str
    model: str = Field(description="the model served (compare's deployment)")
    accelerator: str = Field(description="its accelerator, as the hardware table names it")
    gpus: int = Field(description="GPUs per replica")
    kv_capacity_tokens: int = Field(description="one replica's KV cache, in tokens")
    requests: int
    prompt_tokens: int
    hit_rate: float = Field(description="self-hosted: the vLLM prefix cache's, from cold")
    observed_hit_rate: DecimalNumber = Field(description="the provider's, on the same requests")
    gpu_hours_full_utilization: Decimal = Field(description="busy time only (marginal cost)")
    gpu_hours_at_arrival_rate: Decimal | None = Field(
        description="replicas kept up for the sessions' whole span at their own rate"
    )
    gpu_price_per_hour: Decimal | None
    cost_full_utilization: Money | None
    cost_at_arrival_rate: Money | None
    observed_cost: Money = Field(description="the bill of the same requests (priced ones)")
    complete_bill: bool = Field(description="false: observed_cost leaves unpriced requests out")
    difference_full_utilization: Money | None = Field(
        description="cost_full_utilization - observed_cost; None without a price, or where"
        " the observed bill is not complete (it would set all requests against some)"
    )
    timing_source: str
    assumptions: list[str]


def self_hosted_what_if(
    option: SelfHostedOption,
    requests: Sequence[PredictedRequest],
    observed_hit_rate: Decimal,
    observed_cost: Decimal,
    complete_bill: bool,
) -> SelfHostedWhatIf | None:
    """``compare`` of ``option`` on ``requests`` (None: no request to serve)."""
    if not requests:
        return None
    from cachecast.usecases.compare import compare

    report = compare(option.compare_request(), sessions=requests)
    shown = report.self_hosted
    cost = shown.cost
    difference = None
    if cost is not None and complete_bill:
        with localcontext(EXACT):
            difference = cost.full_utilization - observed_cost
    deployment = report.deployment
    return SelfHostedWhatIf(
        scenario=f"self-hosted {deployment.model.name} on {deployment.gpus} x"
        f" {deployment.accelerator.label}",
        model=deployment.model.name,
        accelerator=deployment.accelerator.label,
        gpus=deployment.gpus,
        kv_capacity_tokens=shown.kv_capacity_tokens,
        requests=report.log.requests,
        prompt_tokens=report.log.input_tokens,
        hit_rate=shown.hit_rate,
        observed_hit_rate=observed_hit_rate,
        gpu_hours_full_utilization=shown.full_utilization.gpu_hours,
        gpu_hours_at_arrival_rate=(
            None if shown.at_arrival_rate is None else shown.at_arrival_rate.gpu_hours
        ),
        gpu_price_per_hour=option.gpu_price,
        cost_full_utilization=None if cost is None else cost.full_utilization,
        cost_at_arrival_rate=None if cost is None else cost.at_arrival_rate,
        observed_cost=observed_cost,
        complete_bill=complete_bill,
        difference_full_utilization=difference,
        timing_source=report.timing_source,
        assumptions=report.assumptions,
    )
