"""What counts as a regression: thresholds from the command line, a body or ``[tool.cachecast]``.

``max-cost-increase`` is relative (``5%`` or ``0.05``) and compares cost per 1,000
requests, so a candidate log with more requests is not a regression by itself.
``max-hit-rate-drop`` is absolute, in percentage points (``2pp``; a bare number is points).
``min-hit-rate`` is the candidate's floor (``0.6`` or ``60%``). ``max-ttft-increase`` is
relative (``25%``) and compares the median time to first token measured on a real engine
(``vllm-engine:URL`` targets only). A command-line value wins
over pyproject.toml; a threshold set nowhere is not checked; none set anywhere means the
defaults (docs/layouts.md has the formulas).
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from cachecast.core.errors import (
    BadInputError,
    CachecastError,
    ConfigurationError,
    Location,
    input_errors,
)
from cachecast.usecases.reports import Ratio, Report

PYPROJECT_TABLE = ("tool", "cachecast")
_KNOWN_KEYS = {
    "max-cost-increase",
    "max-hit-rate-drop",
    "min-hit-rate",
    "max-ttft-increase",
    "targets",
    "at",
    "block-size",
}


class ThresholdError(BadInputError):
    """A threshold that cannot be understood; names the option, body field or setting."""

    title = "Invalid threshold"


def _decimal(text: str, where: Location) -> Decimal:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise ThresholdError(f"{text!r} is not a number", location=where) from None
    if not value.is_finite():
        raise ThresholdError(f"{text!r} is not a finite number", location=where)
    return value


def _where(what: str | Location) -> Location:
    return what if isinstance(what, Location) else Location(field=what)


def _percent_or_fraction(text: str, where: Location) -> Decimal:
    """'5%' -> 0.05, '0.05' -> 0.05."""
    return _decimal(text[:-1], where) / 100 if text.endswith("%") else _decimal(text, where)


def parse_relative(
    value: str | float | int | Decimal, what: str | Location = "max_cost_increase"
) -> Decimal:
    """'5%' -> 0.05; '0.05' -> 0.05. Negative values are refused (a required saving is not a
    threshold we know how to explain). ``what`` names the option or field in errors."""
    where = _where(what)
    number = _percent_or_fraction(str(value).strip(), where)
    if number < 0:
        raise ThresholdError(f"must not be negative, got {value!r}", location=where)
    return number


def parse_points(
    value: str | float | int | Decimal, what: str | Location = "max_hit_rate_drop"
) -> Decimal:
    """'2pp' -> 0.02 (a fraction of 1); a bare number is percentage points too."""
    where = _where(what)
    text = str(value).strip().lower()
    if text.endswith("pp"):
        text = text[:-2]
    elif text.endswith("%"):
        raise ThresholdError(f"write percentage points as '2pp', not {value!r}", location=where)
    number = _decimal(text, where) / 100
    if not 0 <= number <= 1:
        raise ThresholdError(f"must be between 0pp and 100pp, got {value!r}", location=where)
    return number


def parse_rate(
    value: str | float | int | Decimal, what: str | Location = "min_hit_rate"
) -> Decimal:
    """'0.6' or '60%' -> 0.6."""
    where = _where(what)
    number = _percent_or_fraction(str(value).strip(), where)
    if not 0 <= number <= 1:
        raise ThresholdError(f"must be a rate between 0 and 1, got {value!r}", location=where)
    return number


class Thresholds(Report):
    """The limits a candidate must keep, as fractions (0.05 is 5%, 0.02 is 2pp); a limit
    that is None is not checked. :func:`parse_thresholds` reads them as people write them."""

    max_cost_increase: Ratio | None = None
    max_hit_rate_drop: Ratio | None = None
    min_hit_rate: Ratio | None = None
    max_ttft_increase: Ratio | None = None

    @property
    def is_empty(self) -> bool:
        return self == Thresholds()


_PARSERS: dict[str, Callable[[str | float | int | Decimal, str | Location], Decimal]] = {
    "max_cost_increase": parse_relative,
    "max_hit_rate_drop": parse_points,
    "min_hit_rate": parse_rate,
    "max_ttft_increase": parse_relative,
}


def parse_thresholds(
    texts: Mapping[str, str | None], name_of: Callable[[str], str] = lambda name: name
) -> Thresholds:
    """Thresholds written as on the command line ('5%', '2pp', '60%'; None: not set), keyed
    by :class:`Thresholds`' field names; ``name_of(name)`` names each in errors, and every bad
    one is listed."""
    values: dict[str, Decimal] = {}
    errors: list[CachecastError] = []
    for name, parse in _PARSERS.items():
        text = texts.get(name)
        if text is None:
            continue
        try:
            values[name] = parse(text, name_of(name))
        except ThresholdError as error:
            errors.append(error)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise input_errors(errors, "invalid thresholds")
    return Thresholds(**values)


# Used when neither the command line nor pyproject.toml nor a body sets any threshold: a
# check that can never fail would be worse than an opinionated default. The TTFT limit is
# wider than the others because it is a measurement: replaying one log twice on a CPU engine
# moved its median TTFT by about 10% (docs/layouts.md), and a lost prefix costs far more.
DEFAULT_THRESHOLDS = Thresholds(
    max_cost_increase=Decimal("0.05"),
    max_hit_rate_drop=Decimal("0.02"),
    min_hit_rate=None,
    max_ttft_increase=Decimal("0.25"),
)


@dataclass(frozen=True, slots=True)
class CheckConfig:
    """Settings of ``check`` and ``suggest`` after merging pyproject.toml under the command
    line."""

    thresholds: Thresholds = field(default_factory=lambda: Thresholds())
    targets: tuple[str, ...] = ()
    at: str | None = None
    block_size: int | None = None
    source: str | None = None  # the pyproject.toml the defaults came from


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start``."""
    for directory in (start.resolve(), *start.resolve().parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(pyproject: Path | None) -> CheckConfig:
    """The ``[tool.cachecast]`` settings of ``pyproject`` (None: nothing set)."""
    if pyproject is None:
        return CheckConfig()
    file = str(pyproject)
    try:
        document = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigurationError(
            f"cannot read: {error.strerror or error}", location=Location(source=file)
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigurationError(
            f"not valid TOML: {error}", location=Location(source=file)
        ) from None
    table: Any = document
    for key in PYPROJECT_TABLE:
        table = table.get(key, {}) if isinstance(table, dict) else {}
    if not isinstance(table, dict):
        raise ConfigurationError(
            "must be a table", location=Location(source=file, field="tool.cachecast")
        )
    # Other cachecast commands may keep their own keys here; only ours are read, and only
    # a misspelling of ours (underscore for dash) is refused.
    settings = {key.replace("_", "-"): value for key, value in table.items()}
    misspelled = [k for k in table if k.replace("_", "-") in _KNOWN_KEYS and "_" in k]
    if misspelled:
        raise ConfigurationError(
            f"write {misspelled[0]!r} with dashes",
            location=Location(source=file, field=f"tool.cachecast.{misspelled[0]}"),
        )

    def where(key: str) -> Location:
        return Location(source=file, field=f"tool.cachecast.{key}")

    thresholds = Thresholds(
        max_cost_increase=_maybe(settings, "max-cost-increase", parse_relative, where),
        max_hit_rate_drop=_maybe(settings, "max-hit-rate-drop", parse_points, where),
        min_hit_rate=_maybe(settings, "min-hit-rate", parse_rate, where),
        max_ttft_increase=_maybe(settings, "max-ttft-increase", parse_relative, where),
    )
    targets = settings.get("targets", [])
    if isinstance(targets, str):
        targets = [targets]
    if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
        raise ConfigurationError("must be a list of strings", location=where("targets"))
    at = settings.get("at")
    if at is not None:
        at = str(at)
    block_size = settings.get("block-size")
    if block_size is not None and (
        isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1
    ):
        raise ConfigurationError("must be a positive integer", location=where("block-size"))
    return CheckConfig(thresholds, tuple(targets), at, block_size, file)


def _maybe(
    settings: dict[str, Any],
    key: str,
    parse: Callable[[Any, Location], Decimal],
    where: Callable[[str], Location],
) -> Decimal | None:
    if key not in settings:
        return None
    value = settings[key]
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ThresholdError("must be a string or a number", location=where(key))
    return parse(value, where(key))


def merge(
    config: CheckConfig,
    *,
    thresholds: Thresholds | None = None,
    targets: list[str] | None = None,
    at: str | None = None,
    block_size: int | None = None,
) -> CheckConfig:
    """Command-line values (those not None) replace the file's."""
    merged = config.thresholds
    if thresholds is not None:
        given = {name: value for name, value in thresholds if value is not None}
        merged = merged.model_copy(update=given)
    return CheckConfig(
        merged,
        tuple(targets or ()) or config.targets,
        at or config.at,
        block_size or config.block_size,
        config.source,
    )
