"""What every request handler reaches through ``request.app.state.service``."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from fastapi import Request

from cachecast.service.jobs import JobRunner, JobStore
from cachecast.service.metrics import ServiceMetrics
from cachecast.service.settings import ServiceSettings

if TYPE_CHECKING:
    from cachecast.contracts import ContractStore


@dataclass
class ServiceState:
    settings: ServiceSettings
    database_url: str
    jobs: JobStore
    metrics: ServiceMetrics
    runner: JobRunner | None = None

    @cached_property
    def contracts(self) -> ContractStore:
        from cachecast.contracts import ContractStore

        return ContractStore(self.database_url)


def service_state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state
