"""How a use case reports progress: the CLI draws a bar, a service job updates its row."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Receives a unit of work's size once, then increments as it is done."""

    def start(self, label: str, total: int | None) -> None: ...

    def advance(self, count: int) -> None: ...


class NoProgress:
    """Progress nobody watches."""

    def start(self, label: str, total: int | None) -> None:
        return None

    def advance(self, count: int) -> None:
        return None
