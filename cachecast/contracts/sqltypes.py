"""A column type that keeps ``Decimal`` money exact on every backend.

SQLAlchemy's ``Numeric`` on SQLite converts values to binary floats (SQLite has no decimal
type), so ``0.1`` would be stored inexactly. ``ExactDecimal`` is ``NUMERIC(18, 10)`` on
servers that have it (PostgreSQL) and canonical decimal text on SQLite; either way a value
reads back equal to what was written, or the write is refused.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

PRECISION = 18
SCALE = 10
_QUANTUM = Decimal(1).scaleb(-SCALE)
_LIMIT = Decimal(10) ** (PRECISION - SCALE)


def canonical_decimal(value: Decimal) -> Decimal:
    """The shortest exact form: ``Decimal('1.2500000000')`` -> ``Decimal('1.25')``."""
    if value == value.to_integral_value():
        return value.quantize(Decimal(1))
    return value.normalize()


def decimal_text(value: Decimal) -> str:
    """Plain notation without exponent or trailing zeros: '1.25', '0.0000028', '2'."""
    return format(canonical_decimal(value), "f")


def check_storable(value: Decimal) -> Decimal:
    """Refuse values the column cannot hold exactly instead of rounding them silently."""
    if not value.is_finite():
        raise ValueError(f"{value} is not a finite number")
    if abs(value) >= _LIMIT:
        raise ValueError(f"{value} has more than {PRECISION - SCALE} digits before the point")
    try:
        if value.quantize(_QUANTUM) != value:
            raise ValueError(f"{value} has more than {SCALE} digits after the point")
    except InvalidOperation as error:
        raise ValueError(f"{value} cannot be stored exactly") from error
    return value


class ExactDecimal(TypeDecorator[Decimal]):
    """Money and multipliers: exact ``Decimal`` in, the same ``Decimal`` out."""

    impl = sa.Numeric(PRECISION, SCALE, asdecimal=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(sa.String(40))
        return dialect.type_descriptor(sa.Numeric(PRECISION, SCALE, asdecimal=True))

    def process_bind_param(self, value: Decimal | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if not isinstance(value, Decimal):
            # Floats are how money goes wrong; insist on Decimal at the boundary.
            raise TypeError(f"expected Decimal, got {type(value).__name__} {value!r}")
        check_storable(value)
        if dialect.name == "sqlite":
            return decimal_text(value)
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        if value is None:
            return None
        if isinstance(value, float):
            # Only reachable if someone wrote a REAL into the column by hand.
            raise TypeError(f"float {value!r} found in an exact-decimal column")
        return canonical_decimal(Decimal(str(value)))
