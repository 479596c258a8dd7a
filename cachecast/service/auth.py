"""Admin authentication for contract changes: a bearer key compared in constant time."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from cachecast.service.problems import ProblemError
from cachecast.service.settings import ServiceSettings

bearer_scheme = HTTPBearer(
    auto_error=False,
    scheme_name="AdminKey",
    description="An admin key from the service settings (admin_keys), sent as a bearer token.",
)


def key_is_valid(presented: str, settings: ServiceSettings) -> bool:
    """Compare against every configured key, never stopping early, so timing tells nothing."""
    presented_bytes = presented.encode()
    matched = False
    for key in settings.admin_keys:
        matched |= hmac.compare_digest(presented_bytes, key.get_secret_value().encode())
    return matched


def require_admin(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
) -> None:
    settings: ServiceSettings = request.app.state.settings
    if not settings.writes_enabled:
        raise ProblemError(
            403,
            "Writes disabled",
            "no admin key is configured (setting admin_keys / CACHECAST_ADMIN_KEYS), "
            "so contract changes are disabled on this server",
            slug="writes-disabled",
        )
    challenge = {"WWW-Authenticate": 'Bearer realm="cachecast"'}
    if credentials is None:
        raise ProblemError(
            401,
            "Unauthorized",
            "this endpoint needs an admin key in 'Authorization: Bearer KEY'",
            slug="unauthorized",
            headers=challenge,
        )
    if not key_is_valid(credentials.credentials, settings):
        raise ProblemError(
            401,
            "Unauthorized",
            "the bearer key is not an admin key of this server",
            slug="unauthorized",
            headers={"WWW-Authenticate": 'Bearer realm="cachecast", error="invalid_token"'},
        )


AdminRequired = Depends(require_admin)
