"""Model names from a client that would make the tokenizer registry read the server's files.

On the command line ``hf:PATH`` or an existing directory is the user's own tokenizer; from a
client of the service it must be refused before any work, as a 422 naming the field (the
registry also refuses it inside the service, see ``NoLocalTokenizersMiddleware``, but there
the error cannot say which field of the body named it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cachecast.service.problems import FieldError, validation_problem
from cachecast.tokenizers import (
    LocalTokenizerRefused,
    UnknownModelError,
    local_tokenizer_directories,
)
from cachecast.tokenizers.registry import tokenizer_key_for


def _names_server_files(model: str) -> bool:
    """Whether the tokenizer registry would read this model name as a local directory
    (``hf:PATH``, or a path that exists): fine on the command line, not from a client. The
    registry itself decides, so the service and the tokenizers agree on what a path is."""
    with local_tokenizer_directories(False):
        try:
            tokenizer_key_for(model)
        except LocalTokenizerRefused:
            return True
        except UnknownModelError:
            return False  # not a path: an unknown name, which the tokenizers report later
    return False


def refuse_server_paths(names: Sequence[tuple[str, object]]) -> None:
    """422 for every (field, value) whose string value names a tokenizer on the server's
    disk; other values are left to the tokenizers to judge."""
    errors = [
        FieldError(field=field, message="a model name, not a path on the server")
        for field, value in names
        if isinstance(value, str) and _names_server_files(value)
    ]
    if errors:
        raise validation_problem(errors)


def record_models(records: Sequence[dict[str, Any]], prefix: str) -> list[tuple[str, object]]:
    """Every ``model`` a record names, at the top or nested in objects (``request.model``,
    ``body.model``: the log formats differ), each with its field path."""
    found: list[tuple[str, object]] = []

    def visit(value: dict[str, Any], path: str, depth: int) -> None:
        for key, item in value.items():
            if key == "model":
                found.append((f"{path}.model", item))
            elif isinstance(item, dict) and depth < 4:
                visit(item, f"{path}.{key}", depth + 1)

    for index, record in enumerate(records):
        visit(record, f"{prefix}[{index}]", 0)
    return found
