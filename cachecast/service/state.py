"""What every request handler reaches through ``request.app.state.service``."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import Request

from cachecast.contracts import ContractStore
from cachecast.service.jobs import JobRunner, JobStore
from cachecast.service.metrics import ServiceMetrics
from cachecast.service.settings import ServiceSettings


@dataclass
class ServiceState:
    settings: ServiceSettings
    database_url: str
    jobs: JobStore
    metrics: ServiceMetrics
    runner: JobRunner | None = None
    # Built without touching the database; it checks the schema on first use.
    contracts: ContractStore = field(init=False)

    def __post_init__(self) -> None:
        self.contracts = ContractStore(self.database_url)


def service_state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state
