"""A call through Hugging Face's router is priced by the provider its model id names.

The router (https://router.huggingface.co/v1, OpenAI-compatible) takes a Hub id with the serving
provider after a colon and bills that provider's rates with no markup of its own
(docs/log-formats.md, "Provider names"); the cassette here is hand-built in vcrpy's layout.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.logs.helpers import vcr_cassette, vcr_interaction


def test_a_router_call_is_priced_by_the_provider_its_model_names(
    migrated_db_url: str, tmp_path: Path
) -> None:
    body = {
        "model": "openai/gpt-oss-20b:fireworks-ai",
        "messages": [{"role": "user", "content": "Name three primes."}],
    }
    reply = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_760_000_000,  # 2025-10-09
        "model": "accounts/fireworks/models/gpt-oss-20b",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "2, 3 and 5."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1_000, "completion_tokens": 200, "total_tokens": 1_200},
    }
    path = vcr_cassette(
        tmp_path / "hf_router.yaml",
        vcr_interaction("https://router.huggingface.co/v1/chat/completions", body, reply),
    )
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    assert report.unpriced == {}
    (target,) = report.targets
    assert (target.provider, target.model) == ("fireworks_ai", "gpt-oss-20b")
    # Fireworks' gpt-oss-20b at $0.07 in / $0.30 out per MTok (docs/contracts.md,
    # "contracts-v27"), nothing reported cached: 1,000 x 0.07 / 1e6 + 200 x 0.30 / 1e6
    # = 0.00007 + 0.00006.
    (row,) = report.requests
    assert Decimal(row.observed_cost) == Decimal("0.00013")
