"""Local tokenizer directories: the user's choice on the CLI, refused where the caller says."""

from __future__ import annotations

from pathlib import Path

import pytest

from cachecast.tokenizers import LocalTokenizerRefused, local_tokenizer_directories
from cachecast.tokenizers.registry import tokenizer_key_for


def test_a_directory_is_a_local_tokenizer_by_default(tmp_path: Path) -> None:
    assert tokenizer_key_for(str(tmp_path)) == f"hf-dir:{tmp_path.resolve()}"
    assert tokenizer_key_for(f"hf:{tmp_path}") == f"hf-dir:{tmp_path.resolve()}"


def test_refused_inside_the_block_and_allowed_again_after(tmp_path: Path) -> None:
    with local_tokenizer_directories(False):
        for name in (str(tmp_path), f"hf:{tmp_path}"):
            with pytest.raises(LocalTokenizerRefused, match="not allowed"):
                tokenizer_key_for(name)
        # Model names are unaffected.
        assert tokenizer_key_for("gpt-4o") == "o200k_base"
    assert tokenizer_key_for(str(tmp_path)).startswith("hf-dir:")
