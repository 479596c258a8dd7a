"""What every use case's request shares: immutable, no unknown fields; most read a log.

A request is a pydantic model the front ends build (the CLI from its options, a router from
its body, a job from the request stored as JSON); :class:`LogRequest` is one whose use case
reads a log, always as a :class:`~cachecast.passes.log_input.LogInput` (its first field).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from cachecast.passes.log_input import LogInput

R = TypeVar("R", bound=BaseModel)


class Request(BaseModel):
    """Base of every use case's request (and of the parts a request is built from)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class LogRequest(Request):
    """A request whose use case reads ``log``; ``client`` names the agent client whose
    sessions it is (docs/clients.md; default: from the log's format)."""

    log: LogInput
    client: str | None = None


def request_of(kind: type[R], given: Mapping[str, Any], **values: Any) -> R:
    """The request ``kind`` built from ``values`` and, for every other field of ``kind``, the
    value of the same name in ``given`` where it has one (an API body's fields, a command's
    options): a front end names only what it converts."""
    carried = {name: given[name] for name in kind.model_fields if name in given}
    return kind.model_validate({**carried, **values})
