"""Schemathesis against the OpenAPI schema with every check (schemathesis' ``--checks all``):
no 5xx, every status, content type, header and body as documented, schema-violating input
refused, schema-valid input accepted, and every client error a problem document. Every
operation is fuzzed, with a bounded number of examples (CI time: about a minute).

One check is narrowed, where no schema can say what is valid: ``positive_data_acceptance``
(schema-valid input must not be a 422) does not run on the operations that read a log or a
layout. Their records follow the union of shapes the document gives, but whether a record's
model has a tokenizer, a usage object follows its convention, a layout renders or a model fits
the GPU is the reader's to say, and a 422 naming the field is then the right answer. Writes
are fuzzed without the admin key (401); their bodies are covered by test_hardening and
test_api.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import positive_data_acceptance

from cachecast.core import db
from cachecast.service.app import create_app
from tests.service.conftest import make_settings

# The schema is read from the app at import time (schemathesis parametrizes by operation);
# building the app touches no database, and the fixture below migrates the file before any
# request is made.
_DB_DIR = Path(tempfile.mkdtemp(prefix="cachecast-fuzz-"))
atexit.register(shutil.rmtree, _DB_DIR, True)  # also when collected but not run
_DB_URL = f"sqlite:///{_DB_DIR / 'cachecast.db'}"
# No job runner: a fuzzed log over the threshold is queued, not run.
_APP = create_app(make_settings(_DB_URL, job_runners=0, max_body_bytes=200_000))
schema = schemathesis.openapi.from_asgi("/openapi.json", _APP)


@pytest.fixture(scope="module", autouse=True)
def migrated_fuzz_db() -> Iterator[None]:
    db.upgrade(_DB_URL)
    yield
    db.get_engine(_DB_URL).dispose()


@schemathesis.check
def client_errors_are_problems(ctx: Any, response: Any, case: Any) -> bool | None:
    if 400 <= response.status_code < 500:
        content_type = response.headers.get("content-type", [""])
        if isinstance(content_type, list):
            content_type = content_type[0] if content_type else ""
        assert content_type.startswith("application/problem+json"), (
            f"{response.status_code} answered as {content_type!r}"
        )
    return None


# Operations whose input is a document to interpret (a log, a layout, a model to size,
# agent sessions and the time zone their days are counted in).
_INTERPRETED = {
    "/v1/estimates",
    "/v1/simulations",
    "/v1/layout-checks",
    "/v1/comparisons",
    "/v1/inspections",
    "/v1/reconciliations",
    "/v1/usage-reports",
    # A usage priced under a contract: its TTL option names are the contract's own.
    "/v1/prices",
}


@schema.parametrize()
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_every_check_holds(case: Any) -> None:
    interpreted = case.operation.path in _INTERPRETED
    case.call_and_validate(
        additional_checks=[client_errors_are_problems],
        excluded_checks=[positive_data_acceptance] if interpreted else [],
    )
