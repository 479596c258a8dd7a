"""Fixtures of the prediction tests: one migrated contract store per module."""

from __future__ import annotations

import pytest

from cachecast.contracts import ContractStore
from cachecast.core import db


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'cachecast.db'}"
    db.upgrade(url)
    return url


@pytest.fixture(scope="module")
def store(store_url: str) -> ContractStore:
    return ContractStore(store_url)
