"""What a report that reads an agent session says about the client and each session file."""

from __future__ import annotations

from pydantic import Field

from cachecast.logs.errors import LogFileError
from cachecast.sessions.profiles import ClientProfile, profile_for_format, profile_named
from cachecast.sessions.reading import log_format
from cachecast.usecases.reports import Report
from cachecast.usecases.requests import LogRequest


class ClientReport(Report):
    """The client whose caching profile the session was predicted with."""

    name: str = Field(examples=["claude-code"])
    title: str
    versions: list[str] = Field(description="client versions the log names")
    chosen_by: str = Field(description="'log format' or 'client option'")
    source: str = Field(description="where the profile's terms are written down")


class SessionFileReport(Report):
    """One session file's figures: every request predicted, priced or not."""

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


def session_profile(request: LogRequest) -> tuple[ClientProfile, str] | None:
    """The client profile a log's sessions are read with, and what chose it (None: the log
    is not an agent session): the request's ``client``, else the files' one format."""
    if request.client is not None:
        return profile_named(request.client), "client option"
    if request.log.inline or not request.log.files:
        return None
    found: set[ClientProfile | None] = set()
    for file in request.log.files:
        try:
            found.add(profile_for_format(log_format(file.path, file.format)))
        except LogFileError:
            # A file no format reads is reported by the pass that reads the log (named, after
            # the report of the files it could read; docs/errors.md); the client is the one
            # of the files that are read (a session folder's manifest does not hide it).
            continue
    if len(found) == 1 and (profile := found.pop()) is not None:
        return profile, "log format"
    return None


def client_of(request: LogRequest) -> ClientReport | None:
    """The client a report that reads ``request``'s log names (versions: not read here)."""
    chosen = session_profile(request)
    return None if chosen is None else client_report(chosen[0], set(), chosen[1])
