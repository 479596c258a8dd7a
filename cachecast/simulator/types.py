"""What the simulator produces per request and in total; input to billing and reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from enum import StrEnum
from fractions import Fraction

# Mean errors are exact fractions, shown as Decimal rounded to this many places (display only).
MEAN_PLACES = Decimal("1e-9")

TOLERANCE_TOKENS = 8
"""How many tokens (or 1% of the prompt, the larger) an approximated tokenizer's count may
be off the provider's and still agree with it: the reconciliation's tolerance, and how far
a learned prefix may sit from the boundary it is placed at."""


@dataclass(slots=True)
class RequestUsage:
    """Where each prompt token of one request went under one cache policy.

    Invariant: ``input_tokens == cache_read_tokens + sum(cache_write_tokens.values())
    + uncached_input_tokens``. Written tokens are those this request stored in the cache
    (billed at the TTL option's write multiplier; 1.0 where writes are free).
    """

    request_id: str
    line: int
    timestamp: float
    scope: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: dict[str, int] = field(default_factory=dict)
    uncached_input_tokens: int = 0
    # Explicit cached content billed for storage (Gemini-style): token-seconds stored.
    storage_token_seconds: int = 0

    @property
    def cache_write_total(self) -> int:
        return sum(self.cache_write_tokens.values())

    def check(self) -> None:
        total = self.cache_read_tokens + self.cache_write_total + self.uncached_input_tokens
        if total != self.input_tokens:
            raise AssertionError(
                f"request {self.request_id}: read+write+uncached={total}"
                f" != input={self.input_tokens}"
            )


@dataclass(frozen=True, slots=True)
class Cost:
    """A bill split by what it pays for; all amounts in US dollars, exact."""

    input: Decimal
    cache_write: Decimal
    cache_read: Decimal
    output: Decimal
    storage: Decimal

    @property
    def total(self) -> Decimal:
        return self.input + self.cache_write + self.cache_read + self.output + self.storage

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.input + other.input,
            self.cache_write + other.cache_write,
            self.cache_read + other.cache_read,
            self.output + other.output,
            self.storage + other.storage,
        )

    @classmethod
    def zero(cls) -> Cost:
        nothing = Decimal(0)
        return cls(nothing, nothing, nothing, nothing, nothing)

    def as_strings(self) -> dict[str, str]:
        return {
            "input": str(self.input),
            "cache_write": str(self.cache_write),
            "cache_read": str(self.cache_read),
            "output": str(self.output),
            "storage": str(self.storage),
            "total": str(self.total),
        }


# The names of policies and routings live here, with no code behind them, so that a command
# line declaring its options does not import the policies themselves (start-up time).


class PolicyKind(StrEnum):
    """The cache models ``simulate`` replays through (``simulator.policies``)."""

    vllm = "vllm"
    radix = "radix"
    automatic = "automatic"
    explicit = "explicit"
    gemini = "gemini"


class Routing(StrEnum):
    """How requests are routed to replicas (``simulator.routing``)."""

    round_robin = "round-robin"
    least_loaded = "least-loaded"
    session_sticky = "session-sticky"
    prefix_hash = "prefix-hash"
    cache_aware = "cache-aware"


def fraction_text(value: Fraction) -> str:
    """An exact fraction as a plain decimal string, rounded half-even to ``MEAN_PLACES``.

    Rounding here is for display only; the sums behind it are exact.
    """
    with localcontext() as context:
        context.prec = 60
        quotient = Decimal(value.numerator) / Decimal(value.denominator)
        return format(quotient.quantize(MEAN_PLACES).normalize(), "f")
