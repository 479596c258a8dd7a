"""No prompt caching: the policy of a contract version whose mode is ``none``.

Providers that offered no caching (gpt-4-turbo, gpt-4o before OpenAI's automatic caching of
2024-10-01, Claude 3 before Anthropic's prompt caching of 2024-08-14) read nothing and write
nothing: every prompt token is billed at the input price (docs/contracts.md, "Versions without
caching"). The prediction is exact whatever the prompts are, so this policy reads no tokens,
keys and remembers nothing.
"""

from __future__ import annotations

from cachecast.logs.types import ObservedUsage
from cachecast.simulator.misses import NO_CACHING_OFFERED, MissSpan, Sight, add_span
from cachecast.simulator.policies.base import CachePolicy, make_usage
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import TokenizedRequest


class NoCache(CachePolicy):
    """Reads and writes nothing: every prompt token is uncached input."""

    name = "none"

    def process(self, request: TokenizedRequest) -> RequestUsage:
        return make_usage(request, 0, {})

    def explain(
        self, request: TokenizedRequest, usage: RequestUsage, sight: Sight
    ) -> list[MissSpan]:
        """The whole prompt: the contract offers no caching, whatever earlier prompts shared."""
        spans: list[MissSpan] = []
        add_span(spans, NO_CACHING_OFFERED, 0, request.input_tokens)
        return spans

    def learn(self, request: TokenizedRequest, observed: ObservedUsage) -> None:
        """Nothing: cached tokens a log shows on such a day dispute the contract
        (``simulator.reconcile``), they do not make later reads likely."""
        return None
