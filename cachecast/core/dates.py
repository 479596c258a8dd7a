"""Dates as clients write them: ``YYYY-MM-DD`` and nothing else.

pydantic reads a date from more than that: the number ``0``, the string ``"0"`` or
``"86400"`` (seconds since 1970), even in strict mode. A client that sends ``at=0`` means no
day at all, so every date a client gives (query parameters, body fields, contract documents)
is an :data:`IsoDate`: a calendar date in ISO 8601's extended form, or a ``date`` object.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any

from pydantic import BeforeValidator

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_iso_date(value: Any) -> dt.date:
    """``value`` as a date: a ``date`` (not a ``datetime``) or a ``YYYY-MM-DD`` string."""
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value
    if isinstance(value, str) and _ISO_DATE.fullmatch(value):
        return dt.date.fromisoformat(value)  # a ValueError (2026-02-30) is pydantic's error
    raise ValueError(f"expected a date as YYYY-MM-DD, got {value!r}")


IsoDate = Annotated[dt.date, BeforeValidator(parse_iso_date)]
