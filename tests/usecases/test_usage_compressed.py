"""``usage`` reads compressed session files (gzip, bzip2, xz, zstd) as it reads the plain
ones: the client is told by the inflated head.

Expected totals are the shared sessions parsed with plain ``json`` (``claude_sums``,
``codex_sums`` of tests/usecases/test_usage.py: each Claude Code ``message.id`` once, each
Codex ``token_count`` once), never cachecast's readers.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

from cachecast.usecases.session_files import find_sessions
from tests.conftest import shared_data
from tests.usecases.test_usage import CODEX_FIXTURE, SONNET, claude_sums, codex_sums, report_of

COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "gz": gzip.compress,
    "bz2": bz2.compress,
    "xz": lzma.compress,
    "zst": zstandard.ZstdCompressor().compress,
}


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_compressed_sessions_give_the_totals_of_their_content(
    migrated_db_url: str, tmp_path: Path, suffix: str
) -> None:
    claude, codex = shared_data(SONNET), shared_data(CODEX_FIXTURE)
    packed = []
    for path in (claude, codex):
        target = tmp_path / f"{path.name}.{suffix}"
        target.write_bytes(COMPRESSORS[suffix](path.read_bytes()))
        packed.append(target)
    report = report_of(migrated_db_url, *packed)
    expected_claude, expected_codex = claude_sums([claude]), codex_sums([codex])
    assert report.issue_count == 0
    assert report.clients == {
        "claude-code": expected_claude["requests"],
        "codex": expected_codex["requests"],
    }
    totals = report.totals
    assert totals.prompt_tokens == expected_claude["prompt"] + expected_codex["prompt"]
    assert totals.cache_read_tokens == expected_claude["read"] + expected_codex["read"]
    assert totals.cache_write_5m_tokens == expected_claude["w5"]
    assert totals.output_tokens == expected_claude["output"] + expected_codex["output"]
    # The bill of the compressed files is the bill of the same files uncompressed.
    assert totals.cost == report_of(migrated_db_url, claude, codex).totals.cost


def test_a_compressed_file_that_does_not_inflate_is_named_and_the_run_goes_on(
    migrated_db_url: str, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(b'{"sessionId": "s"}\n' * 10)[:30])  # cut short
    report = report_of(migrated_db_url, broken, shared_data(SONNET))
    assert report.issue_count == 1
    assert report.issues[0].file == str(broken)
    assert "cannot decompress the gzip file" in report.issues[0].reason
    assert report.totals.requests == claude_sums([shared_data(SONNET)])["requests"]


def test_a_folder_names_its_compressed_session_files(tmp_path: Path) -> None:
    for name in ("a.jsonl", "b.jsonl.gz", "c.jsonl.xz", "d.jsonl.zst", "notes.txt", "e.json.gz"):
        (tmp_path / "project" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "project" / name).write_bytes(b"")
    found = find_sessions([tmp_path])
    assert [path.name for path in found] == ["a.jsonl", "b.jsonl.gz", "c.jsonl.xz", "d.jsonl.zst"]
