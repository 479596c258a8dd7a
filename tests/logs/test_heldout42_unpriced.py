"""Hand-built recordings modelled on held-out files cachecast read but left unpriced: a call
to OpenRouter's ``:free`` variant of a model whose slug names no vendor we price, now priced
under OpenRouter's own contract (docs/contracts.md, "contracts-v25": free of charge, no
caching); the same slug dated before that contract's first day, whose reason names it; and a
``:free`` slug OpenRouter has no stored contract for, which keeps asking for ``--provider``.
Each expected figure is a count written into the recording, with the arithmetic beside it."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileRequest, reconcile

URI = "https://openrouter.ai/api/v1/chat/completions"
FREE = "meta-llama/llama-3.3-8b-instruct:free"
# The contract id: the slug without its "/" (ids are URL path segments); the slug is its alias.
STORED = "llama-3.3-8b-instruct:free"


def _interaction(model: str, date: str, usage: dict[str, int], uri: str = URI) -> Any:
    """One vcrpy interaction: a chat completion answered as OpenRouter answers it (the
    upstream ``provider`` named in the body), dated by its ``Date`` header."""
    request = {"model": model, "messages": [{"role": "user", "content": "What is life?"}]}
    response: dict[str, Any] = {
        "id": "gen-1",
        "provider": "Meta",
        "model": model,
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "A question."},
            }
        ],
        "usage": usage,
    }
    interaction = {
        "request": {
            "body": json.dumps(request),
            "headers": {"Content-Type": ["application/json"]},
            "method": "POST",
            "uri": uri,
        },
        "response": {
            "body": {"string": json.dumps(response)},
            "headers": {"Content-Type": ["application/json"], "Date": [date]},
            "status": {"code": 200, "message": "OK"},
        },
    }
    return interaction


def _cassette(path: Path, *interactions: Any) -> Path:
    path.write_text(yaml.safe_dump({"interactions": list(interactions), "version": 1}))
    return path


# A request OpenAI's own API priced, so that a file whose other request is unpriced still has
# something to reconcile (a file of unpriced requests only is refused as a whole).
OPENAI = _interaction(
    "gpt-4o-2024-08-06",
    "Sat, 31 May 2025 16:13:31 GMT",
    {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14},
    "https://api.openai.com/v1/chat/completions",
)


def test_an_openrouter_free_variant_is_priced_at_zero_under_openrouter_s_contract(
    tmp_path: Path, migrated_db_url: str
) -> None:
    path = _cassette(
        tmp_path / "free.yaml",
        _interaction(
            FREE,
            "Sat, 31 May 2025 16:13:31 GMT",
            {"prompt_tokens": 17, "completion_tokens": 420, "total_tokens": 437},
        ),
    )
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    assert report.unpriced == {}
    [target] = report.targets
    assert (target.provider, target.model) == ("openrouter", STORED)
    assert target.contract.version == f"openrouter/{STORED}@2025-05-14"
    # One request, none of its 17 prompt tokens cached (mode none: nothing is read from a
    # cache, and the usage reports no cached_tokens).
    assert target.requests == 1
    assert (target.cache_read_tokens, target.summary.observed_cache_read_tokens) == (0, 0)
    # 17 x $0 + 420 x $0 per MTok = $0, predicted and observed alike.
    assert target.cost == Decimal(0)
    assert (target.summary.predicted_cost, target.summary.observed_cost) == (0, 0)


def test_a_free_variant_before_its_first_day_names_that_day(
    tmp_path: Path, migrated_db_url: str
) -> None:
    path = _cassette(
        tmp_path / "early.yaml",
        OPENAI,
        _interaction(
            FREE,
            "Tue, 13 May 2025 10:00:00 GMT",
            {"prompt_tokens": 17, "completion_tokens": 3, "total_tokens": 20},
        ),
    )
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    [(reason, count)] = report.unpriced.items()
    assert count == 1
    assert reason.startswith(
        f"openrouter:{FREE}: openrouter/{STORED} (alias '{FREE}') has no contract before"
        " 2025-05-14, its first version (asked for 2025-05-13)"
    )


def test_a_free_variant_openrouter_has_no_contract_for_still_asks_for_the_provider(
    tmp_path: Path, migrated_db_url: str
) -> None:
    # Meta's Llama 3.1 405B (a Llama 3 tokenizer), whose free variant no contract states.
    model = "meta-llama/llama-3.1-405b-instruct:free"
    path = _cassette(
        tmp_path / "other.yaml",
        OPENAI,
        _interaction(
            model,
            "Sat, 31 May 2025 16:13:31 GMT",
            {"prompt_tokens": 17, "completion_tokens": 3, "total_tokens": 20},
        ),
    )
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    [(reason, count)] = report.unpriced.items()
    assert count == 1
    assert reason == (
        f"openrouter:{model}: sent through openrouter, and neither the model's name nor the"
        " record says which vendor serves it; no contract prices it (give --provider to price"
        " it as a vendor's model)"
    )
