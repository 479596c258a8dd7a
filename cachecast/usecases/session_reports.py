"""What a report that reads an agent session says about the client and each session file."""

from __future__ import annotations

from pydantic import Field

from cachecast.sessions.profiles import ClientProfile
from cachecast.usecases.reports import Report


class ClientReport(Report):
    """The client whose caching profile the session was predicted with."""

    name: str = Field(examples=["claude-code"])
    title: str
    versions: list[str] = Field(description="client versions the log names")
    chosen_by: str = Field(description="'log format' or 'client option'")
    source: str = Field(description="where the profile's terms are written down")


class SessionFileReport(Report):
    """One session file's reconciliation figures."""

    source: str
    client: str
    requests: int
    within_tolerance: int
    exact: int
    causes: dict[str, int] = Field(description="requests outside tolerance, by cause")


def client_report(profile: ClientProfile, versions: set[str], chosen_by: str) -> ClientReport:
    return ClientReport(
        name=profile.name,
        title=profile.title,
        versions=sorted(versions),
        chosen_by=chosen_by,
        source=profile.source,
    )
