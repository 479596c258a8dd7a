"""transformers' "PyTorch was not found" notice never reaches a command's stderr (issue 29):
cachecast uses transformers' tokenizers only, which need no PyTorch."""

from __future__ import annotations

import logging
import subprocess
import sys

from tests.conftest import REPO_ROOT


def test_the_notice_is_filtered_and_other_warnings_are_not() -> None:
    import cachecast.tokenizers.hf  # noqa: F401  (installs the filter)

    logger = logging.getLogger("transformers")

    def record(message: str) -> logging.LogRecord:
        return logger.makeRecord("transformers", logging.WARNING, __file__, 1, message, (), None)

    notice = (
        "PyTorch was not found. Models won't be available and only tokenizers, configuration"
        " and file/data utilities can be used."
    )  # transformers' own words (transformers/__init__.py)
    assert not logger.filter(record(notice))
    assert logger.filter(record("something else went wrong"))


def test_importing_transformers_without_torch_prints_nothing() -> None:
    # A child where torch cannot be imported, as on a CPU-only install.
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import cachecast.tokenizers.hf\n"
        "import transformers\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "PyTorch was not found" not in done.stderr
