"""The base of every use case's request, and how a front end builds one from what it was
given (``usecases.requests`` adds :class:`~cachecast.usecases.requests.LogRequest`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

R = TypeVar("R", bound=BaseModel)


class Request(BaseModel):
    """Base of every use case's request (and of the parts a request is built from).

    Built on first use (``defer_build``), as reports are (``usecases.reports.Report``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


def request_of(kind: type[R], given: Mapping[str, Any], **values: Any) -> R:
    """The request ``kind`` built from ``values`` and, for every other field of ``kind``, the
    value of the same name in ``given`` where it has one (an API body's fields, a command's
    options): a front end names only what it converts."""
    carried = {name: given[name] for name in kind.model_fields if name in given}
    return kind.model_validate({**carried, **values})
