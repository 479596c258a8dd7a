"""What every use case's request shares: immutable, no unknown fields; most read a log.

A request is a pydantic model the front ends build (the CLI from its options, a router from
its body, a job from the request stored as JSON); :class:`LogRequest` is one whose use case
reads a log, always as a :class:`~cachecast.passes.log_input.LogInput` (its first field).
"""

from __future__ import annotations

from cachecast.passes.log_input import LogInput

# The base lives in ``request_base`` (a use case that reads no LogInput need not load it).
from cachecast.usecases.request_base import Request as Request
from cachecast.usecases.request_base import request_of as request_of


class LogRequest(Request):
    """A request whose use case reads ``log``; ``client`` names the agent client whose
    sessions it is (docs/clients.md; default: from the log's format)."""

    log: LogInput
    client: str | None = None
