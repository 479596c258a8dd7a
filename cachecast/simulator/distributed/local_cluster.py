"""Keep a local Ray cluster on 127.0.0.1.

Ray gives a node the machine's outward address unless it believes the cluster is
single-machine; it reads that from the environment when ``ray`` is *imported*, and every Ray
process it starts inherits it. So this must run before the first ``import ray``, and only when
the cluster is local (a driver joining a remote cluster needs its real address).
"""

from __future__ import annotations

import os
import sys

LOOPBACK_ONLY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def bind_local_cluster_to_loopback() -> None:
    """Set the environment so that a local cluster started afterwards binds to loopback."""
    if "ray" in sys.modules and os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") != "0":
        raise RuntimeError(
            "Ray was imported before the local cluster was configured for loopback; call"
            " bind_local_cluster_to_loopback() before importing ray"
        )
    os.environ.update(LOOPBACK_ONLY_ENV)
