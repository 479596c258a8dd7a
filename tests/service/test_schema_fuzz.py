"""Schemathesis against the OpenAPI schema: whatever a client sends, never a 5xx, and every
client error is a problem document. Every operation is fuzzed, layout checks and
comparisons included.
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
from schemathesis.checks import not_a_server_error

from cachecast import db
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


@schema.parametrize()
@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_server_errors(case: Any) -> None:
    case.call_and_validate(checks=[not_a_server_error, client_errors_are_problems])
