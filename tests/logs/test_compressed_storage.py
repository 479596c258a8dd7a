"""A compressed log is inflated into the temporary folder (``logs.compressed``); when that
folder has no room (a full disk, a quota, a file-size limit) the run is refused with
``insufficient-storage`` (exit 2, HTTP 507; docs/errors.md) naming the file and the folder,
not taken for a malformed log, and no partial copy is left behind.

The lack of room is real: the command runs in a child process whose file-size limit
(``RLIMIT_FSIZE``) is 1 MiB, so the kernel refuses the write past it (``EFBIG``), as a full
disk refuses it with ``ENOSPC``.
"""

from __future__ import annotations

import gzip
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

LIMIT = 1 << 20


def limit_file_size() -> None:
    # Past the limit the kernel sends SIGXFSZ (which kills by default); ignored, the write
    # fails with EFBIG instead, which is what a program sees on a full disk (ENOSPC).
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def test_no_room_to_inflate_is_a_storage_error_naming_file_and_folder(
    migrated_db_url: str, tmp_path: Path
) -> None:
    record = b'{"timestamp": 1, "model": "gpt-4o", "prompt": "%s", "output_tokens": 1}\n'
    log = tmp_path / "big.jsonl.gz"
    # 4 MiB inflated (four times the limit), a few KiB compressed.
    log.write_bytes(gzip.compress(record % (b"a" * (4 * LIMIT))))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    clean = {key: value for key, value in os.environ.items() if not key.startswith("CACHECAST_")}
    env = {
        **clean,
        "PYTHONPATH": str(REPO_ROOT),
        "TMPDIR": str(scratch),
        "CACHECAST_DATABASE_URL": migrated_db_url,
    }
    done = subprocess.run(
        [sys.executable, "-m", "cachecast", "estimate", str(log), "--target", "openai:gpt-4o"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit_file_size,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert str(log) in done.stderr
    assert f"no room left in the temporary folder {scratch}" in done.stderr
    assert "File too large" in done.stderr  # the kernel's reason, as the OS words it
    assert "Malformed" not in done.stderr and "cannot decompress" not in done.stderr
    assert list(scratch.iterdir()) == []  # the partial copy is removed
