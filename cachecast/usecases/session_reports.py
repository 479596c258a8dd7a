"""What a report that reads an agent session says about the client and each session file."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from cachecast.logs.errors import LogFileError
from cachecast.passes.log_input import LogFile, LogInput
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


@dataclass(frozen=True, slots=True)
class FileGroup:
    """Files of one log read the same way: the sessions of one client profile, or (profile
    None) logs of requests, replayed as they are."""

    profile: ClientProfile | None
    files: tuple[LogFile, ...]


def file_groups(log: LogInput) -> list[FileGroup]:
    """The log's files grouped by the client profile each one's format belongs to (None: no
    agent session), in the order of each group's first file; none for inline records.

    A file no format reads joins the group of plain logs, else the first group: the pass that
    reads that group reports it (named, after the report of the files it could read;
    docs/errors.md), and a session folder's manifest does not make a group of its own."""
    if log.inline:
        return []
    grouped: dict[ClientProfile | None, list[LogFile]] = {}
    unreadable: list[LogFile] = []
    for file in log.files:
        try:
            profile = profile_for_format(log_format(file.path, file.format))
        except LogFileError:
            unreadable.append(file)
            continue
        grouped.setdefault(profile, []).append(file)
    if unreadable:
        if not grouped:
            return [FileGroup(None, tuple(unreadable))]
        home = None if None in grouped else next(iter(grouped))
        grouped[home] = grouped[home] + unreadable
    return [FileGroup(profile, tuple(files)) for profile, files in grouped.items()]


def session_profile(request: LogRequest) -> tuple[ClientProfile, str] | None:
    """The client profile a log's sessions are read with, and what chose it (None: the log
    is not the sessions of one client): the request's ``client``, else the files' one client
    (a log that mixes clients, or sessions with other logs, has several groups:
    :func:`file_groups`)."""
    if request.client is not None:
        return profile_named(request.client), "client option"
    groups = file_groups(request.log)
    if len(groups) == 1 and (profile := groups[0].profile) is not None:
        return profile, "log format"
    return None


def client_of(request: LogRequest) -> ClientReport | None:
    """The client a report that reads ``request``'s log names (versions: not read here)."""
    chosen = session_profile(request)
    return None if chosen is None else client_report(chosen[0], set(), chosen[1])
