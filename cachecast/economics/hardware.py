"""Accelerators: a dated, sourced table (``hardware.json``); the price is always the user's.

Units are exact: memory and bandwidth as integers of bytes and bytes/s, the peak as a
Fraction of FLOP/s (the vendors print decimals such as 989.4 TFLOPS).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import cache
from importlib import resources
from typing import Any

GIGA = 10**9
TERA = 10**12


class UnknownAcceleratorError(ValueError):
    """Raised for a name that is not in the table; the message lists the known names."""


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

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "vendor": self.vendor,
            "memory_bytes": self.memory_bytes,
            "memory_bandwidth_bytes_s": self.memory_bandwidth_bytes_s,
            "bf16_dense_flops": float(self.bf16_dense_flops),
            "host_link_bytes_s": self.host_link_bytes_s,
            "host_link": self.host_link,
            "source": self.source,
            "checked_on": self.checked_on,
            "check": self.check,
        }


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


def get_accelerator(name: str) -> Accelerator:
    by_name, aliases = _table()
    key = name.strip().lower()
    key = aliases.get(key, key)
    if key not in by_name:
        raise UnknownAcceleratorError(
            f"unknown accelerator {name!r}; known: {', '.join(accelerator_names())}"
        )
    return by_name[key]
