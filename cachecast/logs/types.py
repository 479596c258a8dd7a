"""What the log stage hands on besides the request body: the usage the provider reported."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal


@dataclass(frozen=True, slots=True)
class ObservedUsage:
    """Usage the provider reported for this request, normalised; None where not reported.

    ``input_tokens`` is the *total* prompt length (cached tokens included), whatever the
    provider's own convention was; ``cache_write_by_ttl`` maps TTL option names to tokens;
    ``output_tokens`` includes reasoning tokens the provider bills as output. ``cost`` is the
    charge a gateway reported for the request (OpenRouter's ``usage.cost``, USD), never an
    estimate from a price table. ``contradiction`` says why the observation contradicts
    itself where it does (cache reads and writes above the prompt they are parts of: OpenRouter's
    overlapping read and write,
    an Azure deployment's ``cached_tokens`` above ``prompt_tokens``): the counts are kept as
    reported, but no bill or reconciliation is made from them (docs/log-formats.md).
    """

    input_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cache_write_by_ttl: dict[str, int] = field(default_factory=dict)
    output_tokens: int | None = None
    cost: Decimal | None = None
    contradiction: str | None = None
    # Anthropic compaction (``usage.iterations``): each sampling iteration is its own request
    # to the model and is billed on its own; the fields above are then their sums.
    iterations: tuple[ObservedUsage, ...] = ()
    # Anthropic server tools (``usage.server_tool_use``: web searches, web fetches...): the
    # calls the API ran inside the request. Each adds a sampling iteration, and the counts
    # above sum every iteration's prompt, the tool's results included.
    server_tool_calls: int = 0
    # Optional usage fields of a shape the convention does not know, left out: each
    # "field: why" (docs/log-formats.md, "Optional fields"). The request is read without
    # them, never dropped for them; commands note them with the first file and line.
    ignored: tuple[str, ...] = ()
