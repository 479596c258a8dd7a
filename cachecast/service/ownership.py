"""Jobs belong to who submitted them.

A submission that becomes a background job is answered with a random owner token (256 bits,
``secrets.token_urlsafe``); only its SHA-256 digest is stored with the job. Reading or
cancelling the job needs the token in the ``X-Job-Token`` header, or an admin key of the
server as ``Authorization: Bearer KEY`` (admins see every job). Without either, or with a
wrong one, the job answers 404 exactly as an unknown id does: a job id alone tells nobody
whether the job exists (docs/architecture.md, docs/limits.md "Jobs").
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from cachecast.service.auth import key_is_valid
from cachecast.service.jobs import JobView
from cachecast.service.settings import ServiceSettings

JOB_TOKEN_HEADER = "X-Job-Token"


def new_owner_token() -> tuple[str, str]:
    """A fresh owner token and the digest stored in its place."""
    token = secrets.token_urlsafe(32)
    return token, token_digest(token)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def may_see(
    job: JobView, owner_token: str | None, bearer: str | None, settings: ServiceSettings
) -> bool:
    """Whether a client presenting ``owner_token`` (X-Job-Token) and ``bearer``
    (Authorization) may read or cancel ``job``: its owner, or an admin."""
    if bearer is not None and settings.admin_keys and key_is_valid(bearer, settings):
        return True
    if owner_token is None or job.owner_digest is None:
        return False
    return hmac.compare_digest(token_digest(owner_token), job.owner_digest)
