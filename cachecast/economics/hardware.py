"""Accelerators: a dated, sourced table (``hardware.json``); the price is always the user's.

Units are exact: memory and bandwidth as integers of bytes and bytes/s, the peak as a
Fraction of FLOP/s (the vendors print decimals such as 989.4 TFLOPS).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import cache
from importlib import resources
from typing import Any

from cachecast.core.errors import Location, NotFoundError

GIGA = 10**9
TERA = 10**12


class UnknownAcceleratorError(NotFoundError):
    """A name that is not in the table; the message lists the known names."""

    title = "Unknown accelerator"


@dataclass(frozen=True, slots=True)
class Accelerator:
    name: str
    label: str
    vendor: str
    memory_bytes: int
    memory_bandwidth_bytes_s: int
    bf16_dense_flops: Fraction
    host_link_bytes_s: int
    host_link: str
    source: str
    checked_on: str
    check: str


def _exact(value: Any) -> Fraction:
    # Through Decimal(str(...)) so that 989.4 becomes 9894/10, not the nearest binary float.
    return Fraction(Decimal(str(value)))


@cache
def _table() -> tuple[dict[str, Accelerator], dict[str, str]]:
    text = resources.files(__package__).joinpath("hardware.json").read_text("utf-8")
    rows = json.loads(text)["accelerators"]
    by_name: dict[str, Accelerator] = {}
    aliases: dict[str, str] = {}
    for row in rows:
        accelerator = Accelerator(
            name=row["name"],
            label=row["label"],
            vendor=row["vendor"],
            memory_bytes=int(_exact(row["memory_gb"]) * GIGA),
            memory_bandwidth_bytes_s=int(_exact(row["memory_bandwidth_gb_s"]) * GIGA),
            bf16_dense_flops=_exact(row["bf16_dense_tflops"]) * TERA,
            host_link_bytes_s=int(_exact(row["host_link_gb_s"]) * GIGA),
            host_link=row["host_link"],
            source=row["source"],
            checked_on=row["checked_on"],
            check=row["check"],
        )
        by_name[accelerator.name] = accelerator
        for alias in row.get("aliases", []):
            aliases[alias] = accelerator.name
    return by_name, aliases


def accelerator_names() -> list[str]:
    return sorted(_table()[0])


def get_accelerator(name: str, field: str = "gpu") -> Accelerator:
    """The accelerator called ``name`` (or one of its aliases, any case); an unknown name is
    not found at ``field``, with the close matches."""
    by_name, aliases = _table()
    key = name.strip().lower()
    key = aliases.get(key, key)
    if key not in by_name:
        raise UnknownAcceleratorError(
            f"unknown accelerator {name!r}; known: {', '.join(accelerator_names())}",
            location=Location(field=field),
            close_matches=difflib.get_close_matches(key, [*by_name, *aliases], n=3, cutoff=0.5),
        )
    return by_name[key]
