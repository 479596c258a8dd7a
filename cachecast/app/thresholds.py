"""What counts as a regression: thresholds from the command line or ``[tool.cachecast]``.

``max-cost-increase`` is relative (``5%`` or ``0.05``) and compares cost per 1,000
requests, so a candidate log with more requests is not a regression by itself.
``max-hit-rate-drop`` is absolute, in percentage points (``2pp``; a bare number is points).
``min-hit-rate`` is the candidate's floor (``0.6`` or ``60%``). A command-line value wins
over pyproject.toml; a threshold set nowhere is not checked.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

PYPROJECT_TABLE = ("tool", "cachecast")
_KNOWN_KEYS = {
    "max-cost-increase",
    "max-hit-rate-drop",
    "min-hit-rate",
    "targets",
    "at",
    "block-size",
}


class ConfigError(ValueError):
    """A threshold or setting that cannot be understood (exit code 2)."""


def _decimal(text: str, what: str) -> Decimal:
    try:
        value = Decimal(text.strip())
    except InvalidOperation as error:
        raise ConfigError(f"{what}: {text!r} is not a number") from error
    if not value.is_finite():
        raise ConfigError(f"{what}: {text!r} is not a finite number")
    return value


def parse_relative(value: str | float | int, what: str = "max-cost-increase") -> Decimal:
    """'5%' -> 0.05; '0.05' -> 0.05. Negative values are refused (a required saving is not a
    threshold we know how to explain)."""
    text = str(value).strip()
    number = _decimal(text[:-1], what) / 100 if text.endswith("%") else _decimal(text, what)
    if number < 0:
        raise ConfigError(f"{what}: must not be negative, got {value!r}")
    return number


def parse_points(value: str | float | int, what: str = "max-hit-rate-drop") -> Decimal:
    """'2pp' -> 0.02 (a fraction of 1); a bare number is percentage points too."""
    text = str(value).strip().lower()
    if text.endswith("pp"):
        text = text[:-2]
    elif text.endswith("%"):
        raise ConfigError(f"{what}: write percentage points as '2pp', not {value!r}")
    number = _decimal(text, what) / 100
    if not 0 <= number <= 1:
        raise ConfigError(f"{what}: must be between 0pp and 100pp, got {value!r}")
    return number


def parse_rate(value: str | float | int, what: str = "min-hit-rate") -> Decimal:
    """'0.6' or '60%' -> 0.6."""
    text = str(value).strip()
    number = _decimal(text[:-1], what) / 100 if text.endswith("%") else _decimal(text, what)
    if not 0 <= number <= 1:
        raise ConfigError(f"{what}: must be a rate between 0 and 1, got {value!r}")
    return number


@dataclass(frozen=True, slots=True)
class Thresholds:
    max_cost_increase: Decimal | None = None
    max_hit_rate_drop: Decimal | None = None
    min_hit_rate: Decimal | None = None

    def to_json(self) -> dict[str, str | None]:
        return {
            "max_cost_increase": _str(self.max_cost_increase),
            "max_hit_rate_drop": _str(self.max_hit_rate_drop),
            "min_hit_rate": _str(self.min_hit_rate),
        }


def _str(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class CheckConfig:
    """Settings of ``cachecast check`` after merging pyproject.toml under the command line."""

    thresholds: Thresholds = field(default_factory=Thresholds)
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
    if pyproject is None:
        return CheckConfig()
    try:
        document = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{pyproject}: cannot read: {error}") from error
    table: Any = document
    for key in PYPROJECT_TABLE:
        table = table.get(key, {}) if isinstance(table, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.cachecast] must be a table")
    # Other cachecast commands may keep their own keys here; only ours are read, and only
    # a misspelling of ours (underscore for dash) is refused.
    settings = {key.replace("_", "-"): value for key, value in table.items()}
    where = f"{pyproject} [tool.cachecast]"
    misspelled = [k for k in table if k.replace("_", "-") in _KNOWN_KEYS and "_" in k]
    if misspelled:
        raise ConfigError(f"{where}: write {misspelled[0]!r} with dashes")

    thresholds = Thresholds(
        max_cost_increase=_maybe(settings, "max-cost-increase", parse_relative, where),
        max_hit_rate_drop=_maybe(settings, "max-hit-rate-drop", parse_points, where),
        min_hit_rate=_maybe(settings, "min-hit-rate", parse_rate, where),
    )
    targets = settings.get("targets", [])
    if isinstance(targets, str):
        targets = [targets]
    if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
        raise ConfigError(f"{where}: targets must be a list of strings")
    at = settings.get("at")
    if at is not None:
        at = str(at)
    block_size = settings.get("block-size")
    if block_size is not None and (not isinstance(block_size, int) or block_size < 1):
        raise ConfigError(f"{where}: block-size must be a positive integer")
    return CheckConfig(thresholds, tuple(targets), at, block_size, str(pyproject))


def _maybe(settings: dict[str, Any], key: str, parse: Any, where: str) -> Decimal | None:
    if key not in settings:
        return None
    value = settings[key]
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ConfigError(f"{where}: {key} must be a string or a number")
    result: Decimal = parse(value, f"{where} {key}")
    return result


def merge(config: CheckConfig, **command_line: Any) -> CheckConfig:
    """Command-line values (not None) replace the file's."""
    thresholds = config.thresholds
    for name in ("max_cost_increase", "max_hit_rate_drop", "min_hit_rate"):
        if command_line.get(name) is not None:
            thresholds = replace(thresholds, **{name: command_line[name]})
    targets = tuple(command_line.get("targets") or ()) or config.targets
    at = command_line.get("at") or config.at
    block_size = command_line.get("block_size") or config.block_size
    return CheckConfig(thresholds, targets, at, block_size, config.source)
