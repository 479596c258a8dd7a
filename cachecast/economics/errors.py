"""The error of the self-hosting comparisons (``compare``, ``fleet``): one family of bad input."""

from __future__ import annotations

from cachecast.core.errors import BadInputError


class ComparisonError(BadInputError):
    """The comparison cannot be made (empty log, model does not fit...); says why."""

    title = "Comparison not possible"
