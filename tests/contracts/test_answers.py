"""``contracts.answers.RememberedAnswers``: the store's answers, kept while the database
file is unchanged, and asked again once it changes."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

import cachecast.contracts
from cachecast.contracts import ContractStore
from cachecast.contracts.answers import RememberedAnswers
from cachecast.core.errors import UnknownContractError

DAY = dt.date(2026, 2, 10)


class CountingStore:
    """The real store, counting how often it is opened."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.opened = 0

    def __call__(self) -> ContractStore:
        self.opened += 1
        return ContractStore(self.url)


def test_answers_are_the_stores_and_are_remembered(migrated_db_url: str, tmp_path: Path) -> None:
    expected = ContractStore(migrated_db_url).as_of("anthropic", "claude-opus-4-6", DAY)
    opener = CountingStore(migrated_db_url)
    first = RememberedAnswers(migrated_db_url, opener, tmp_path)
    assert first.as_of("anthropic", "claude-opus-4-6", DAY) == expected
    with pytest.raises(UnknownContractError) as raised:
        first.as_of("openai", "no-such-model", DAY)
    first.save()
    assert opener.opened == 1
    second = RememberedAnswers(migrated_db_url, opener, tmp_path)
    assert second.as_of("anthropic", "claude-opus-4-6", DAY) == expected
    with pytest.raises(UnknownContractError) as again:
        second.as_of("openai", "no-such-model", DAY)
    assert again.value.message == raised.value.message
    assert opener.opened == 1  # answered from the file
    # The database changes (a write moves its modification time): asked again.
    database = Path(migrated_db_url.removeprefix("sqlite:///"))
    database.touch()
    third = RememberedAnswers(migrated_db_url, opener, tmp_path)
    assert third.as_of("anthropic", "claude-opus-4-6", DAY) == expected
    assert opener.opened == 2


def test_other_databases_are_asked_every_time(migrated_db_url: str, tmp_path: Path) -> None:
    opener = CountingStore(migrated_db_url)
    url = migrated_db_url + "?timeout=5"  # not a plain SQLite path: not remembered
    for _ in range(2):
        answers = RememberedAnswers(url, opener, tmp_path)
        answers.as_of("anthropic", "claude-opus-4-6", DAY)
        answers.save()
    assert opener.opened == 2
    assert not (tmp_path / "contract-answers.json").exists()


@pytest.mark.parametrize(
    ("name", "field", "change"),
    [
        # An editable install keeps its version number when a rule in cachecast/contracts
        # changes: as if saved before served.py was last written.
        ("served.py", 2, -1),
        # lifecycle.json decides a served request's note or refusal (launch dates,
        # client-only days, reasons no price exists): as if saved under one of another size.
        ("lifecycle.json", 1, 1),
    ],
)
def test_answers_saved_under_other_contract_code_or_data_are_asked_again(
    migrated_db_url: str, tmp_path: Path, name: str, field: int, change: int
) -> None:
    opener = CountingStore(migrated_db_url)
    first = RememberedAnswers(migrated_db_url, opener, tmp_path)
    first.as_of("anthropic", "claude-opus-4-6", DAY)
    first.save()
    saved = tmp_path / "contract-answers.json"
    data = json.loads(saved.read_text())
    entry = next(entry for entry in data["identity"]["code"] if entry[0] == name)
    folder = Path(cachecast.contracts.__file__).parent
    stat = (folder / name if name.endswith(".py") else folder / "data" / name).stat()
    assert entry[1:] == [stat.st_size, stat.st_mtime_ns]
    entry[field] += change
    saved.write_text(json.dumps(data))
    second = RememberedAnswers(migrated_db_url, opener, tmp_path)
    second.as_of("anthropic", "claude-opus-4-6", DAY)
    assert opener.opened == 2
