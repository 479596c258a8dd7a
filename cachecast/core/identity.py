"""Identity fields hashed before they reach any output.

A log record may name who sent it (``api_key``, ``org``, ``user`` ...): cachecast uses these
as the cache's isolation scope (two requests share a cached prefix only within one scope), so
they must stay distinct, but their values must never be written anywhere: a key in a
``--per-request`` table, a report, a job's stored result or a miss cause's words is a leaked
secret. :func:`hashed` replaces each value by a keyed hash (HMAC-SHA-256, 64 bits shown), the
same for the same value within a run, so scopes stay told apart while no value can be read
back or guessed from a list of likely names.

The key is ``CACHECAST_SCOPE_KEY`` when set (to compare hashed scopes across runs), else a
random one drawn once per run and put in this process's environment so that the worker
processes it starts (a local Ray cluster) hash alike; a remote cluster is handed it
explicitly (``passes.ray.executor.connect``). docs/limits.md ("Identity fields").
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from functools import lru_cache

SCOPE_KEY_ENV = "CACHECAST_SCOPE_KEY"
# Shown hex digits of the hash: 64 bits, no collision among any realistic number of scopes.
_SHOWN_HEX = 16


def scope_key() -> str:
    """The run's key (set in the environment on first use, for the workers started later)."""
    key = os.environ.get(SCOPE_KEY_ENV)
    if not key:
        key = secrets.token_hex(32)
        os.environ[SCOPE_KEY_ENV] = key
    return key


def hashed(value: str) -> str:
    """``value`` as ``#`` and 16 hex digits of its keyed hash."""
    return _hashed(scope_key(), value)


@lru_cache(maxsize=4096)
def _hashed(key: str, value: str) -> str:
    digest = hmac.new(key.encode(), value.encode(), hashlib.sha256).hexdigest()
    return "#" + digest[:_SHOWN_HEX]
