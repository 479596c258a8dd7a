"""The OpenAPI document, made true to what the service answers.

FastAPI documents every error response twice (``application/json`` from the response model,
plus the media type given) and adds its own ``422`` with its ``HTTPValidationError`` shape.
The service answers every error as ``application/problem+json`` in one shape (``Problem``,
``service.problems``), so after FastAPI has built the document, every response of status 400
or more is rewritten to exactly that, and a ``429`` says it carries ``Retry-After``.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from cachecast.service.problems import PROBLEM_MEDIA_TYPE

_PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
_FASTAPI_ERROR_SCHEMAS = ("HTTPValidationError", "ValidationError")


def _hoist_definitions(document: dict[str, Any]) -> None:
    """Request bodies documented from ``model_json_schema()`` carry their own ``$defs`` with
    ``#/$defs/...`` references, which resolve against the document's root, where there are
    none: move them into ``components/schemas`` (renamed where a different schema has the
    name already) and point the references there."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})

    def rewrite(node: Any, names: dict[str, str]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return {**node, "$ref": "#/components/schemas/" + names[ref[len("#/$defs/") :]]}
            return {key: rewrite(value, names) for key, value in node.items()}
        if isinstance(node, list):
            return [rewrite(item, names) for item in node]
        return node

    def visit(node: Any) -> Any:
        if isinstance(node, dict):
            if isinstance(node.get("$defs"), dict):
                definitions: dict[str, Any] = node.pop("$defs")
                names = {}
                for name, schema in definitions.items():
                    chosen = name
                    while chosen in schemas and schemas[chosen] != schema:
                        chosen += "Input"
                    names[name] = chosen
                for name, schema in definitions.items():
                    schemas[names[name]] = rewrite(schema, names)
                node = rewrite(node, names)
            return {key: visit(value) for key, value in node.items()}
        if isinstance(node, list):
            return [visit(item) for item in node]
        return node

    document["paths"] = visit(document.get("paths", {}))


def truthful(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with every error response as the problem documents actually sent, and
    every request body's schema resolvable."""
    _hoist_definitions(document)
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            for status, response in operation.get("responses", {}).items():
                if not str(status).isdigit() or int(status) < 400:
                    continue
                response["content"] = {PROBLEM_MEDIA_TYPE: {"schema": _PROBLEM_REF}}
                if int(status) == 422:
                    response["description"] = "Invalid request: the problem names each field"
                if int(status) == 429:
                    response["headers"] = {
                        "Retry-After": {
                            "description": "seconds to wait before submitting again",
                            "schema": {"type": "integer", "minimum": 1},
                        }
                    }
    schemas = document.get("components", {}).get("schemas", {})
    text = str(document.get("paths"))
    for name in _FASTAPI_ERROR_SCHEMAS:
        if f"#/components/schemas/{name}'" not in text:
            schemas.pop(name, None)
    return document


def install(app: FastAPI) -> None:
    """Serve the rewritten document at ``/openapi.json`` (built once, on first request)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = truthful(
                get_openapi(
                    title=app.title,
                    version=app.version,
                    description=app.description,
                    routes=app.routes,
                )
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
