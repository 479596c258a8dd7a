"""Reading a request body's fields, each error naming the field's path in the body.

Shared by every API's renderer: the typed accessors, compact JSON (the text a tool
definition, a tool call or a structured result is rendered as) and the digest that names a
non-text input.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from cachecast.core.errors import RecordFieldError


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def digest(value: Any) -> bytes:
    return hashlib.blake2b(compact_json(value).encode(), digest_size=16).digest()


def require(obj: dict[str, Any], key: str, path: str) -> Any:
    if key not in obj:
        raise RecordFieldError(f"{path}.{key}" if path else key, "missing")
    return obj[key]


def as_list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise RecordFieldError(path, f"expected a list, got {type(value).__name__}")
    return value


def as_dict(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise RecordFieldError(path, f"expected an object, got {type(value).__name__}")
    return value


def as_str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise RecordFieldError(path, f"expected a string, got {type(value).__name__}")
    return value
