"""The tokenize command, the model registry (against the contract store) and local HF dirs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from cachecast.cli import tokenize as tokenizers_cli
from cachecast.contracts import ContractStore
from cachecast.tokenizers import UnknownModelError, get_tokenizer
from cachecast.tokenizers.registry import tokenizer_key_for, unmapped_models


def app() -> typer.Typer:
    # Only our command, so this test does not depend on other packages' CLI modules.
    root = typer.Typer()
    tokenizers_cli.register(root)

    @root.callback()
    def _root() -> None:
        pass

    return root


def write_log(tmp_path: Path) -> Path:
    log = tmp_path / "log.jsonl"
    log.write_text(
        json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hello world"}]})
        + "\n{broken\n"
        + json.dumps({"input_length": 10, "output_length": 2, "hash_ids": [7]})
        + "\n"
    )
    return log


def test_tokenize_json_reports_and_skips_bad_lines(tmp_path: Path) -> None:
    result = CliRunner().invoke(app(), ["tokenize", str(write_log(tmp_path)), "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    # 3 framing + "user" + "hello world" (2) + 3 priming = 9 (OpenAI's counting rule).
    assert rows[0]["input_tokens"] == 9 and rows[0]["exact"] is True
    assert [s["label"] for s in rows[0]["segments"]] == ["messages[0]", "reply_priming"]
    assert rows[1]["input_tokens"] == 10 and rows[1]["blocks"] == 1
    assert f"{tmp_path / 'log.jsonl'}:2: <line>: invalid JSON" in result.stderr
    assert "1 bad lines skipped" in result.stderr


def test_tokenize_strict_stops_with_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app(), ["tokenize", str(write_log(tmp_path)), "--strict"])
    assert result.exit_code == 2
    assert ":2: <line>: invalid JSON" in result.stderr


def test_tokenize_unknown_model_option(tmp_path: Path) -> None:
    result = CliRunner().invoke(app(), ["tokenize", str(write_log(tmp_path)), "--model", "zz-1"])
    assert result.exit_code == 2
    assert "gpt-4o*" in result.stderr


def test_registry_patterns() -> None:
    assert tokenizer_key_for("gpt-4o-2024-08-06") == "o200k_base"
    assert tokenizer_key_for("openai/gpt-4.1-mini") == "o200k_base"
    assert tokenizer_key_for("o3-mini") == "o200k_base"
    assert tokenizer_key_for("gpt-4") == "cl100k_base"
    assert tokenizer_key_for("gpt-3.5-turbo-0125") == "cl100k_base"
    # The legacy Completions models: cl100k_base in tiktoken's model map
    # (tiktoken.model: "davinci-002": "cl100k_base", "babbage-002": "cl100k_base", and the
    # "gpt-3.5-turbo-" prefix).
    assert tokenizer_key_for("gpt-3.5-turbo-instruct") == "cl100k_base"
    assert tokenizer_key_for("gpt-3.5-turbo-instruct-0914") == "cl100k_base"
    assert tokenizer_key_for("davinci-002") == "cl100k_base"
    assert tokenizer_key_for("babbage-002") == "cl100k_base"
    assert tokenizer_key_for("claude-opus-4-5") == "approx:o200k_base"
    assert tokenizer_key_for("gemini-2.5-pro") == "approx:o200k_base"
    # A cloud's deployment and vendor prefixes name where the model runs, not its vocabulary.
    assert tokenizer_key_for("eu.gpt-4.1-mini") == "o200k_base"
    assert tokenizer_key_for("global-standard.gpt-4o-2024-11-20") == "o200k_base"
    assert tokenizer_key_for("us.openai.gpt-5.4") == "o200k_base"
    assert tokenizer_key_for("global.moonshotai.kimi-k3") == "approx:o200k_base"
    with pytest.raises(UnknownModelError):
        get_tokenizer("us.acme-1")
    with pytest.raises(UnknownModelError) as raised:
        get_tokenizer("gpt-2-xl")
    assert "claude-*" in str(raised.value) and "cl100k" not in raised.value.known_patterns


def test_every_contract_model_has_a_tokenizer(migrated_db_url: str) -> None:
    models = [model for _, model in ContractStore(migrated_db_url).known_models()]
    assert models, "the seeded contract store lists models"
    assert unmapped_models(models) == []


def test_local_tokenizer_directory_uses_its_chat_template(tmp_path: Path) -> None:
    from cachecast.tokenizers.hf import HFTokenizer

    registry_built = get_tokenizer("mistral-nemo")
    assert isinstance(registry_built, HFTokenizer)
    folder = tmp_path / "tok"
    registry_built.tokenizer.chat_template = (
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}</s>{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    try:
        registry_built.tokenizer.save_pretrained(folder)
    finally:
        from cachecast.tokenizers.hf import TEKKEN_CHAT_TEMPLATE

        registry_built.tokenizer.chat_template = TEKKEN_CHAT_TEMPLATE
    local = get_tokenizer(str(folder))
    assert isinstance(local, HFTokenizer) and local.name == "hf:tok"
    assert local.encode("hello world") == registry_built.encode("hello world")
    messages = [{"role": "user", "content": "hello world"}, {"role": "assistant", "content": "Hi"}]
    ids, segments = local.encode_chat(messages, ["m0", "m1"], ["message", "message"])
    # The template renders "<|user|>hello world</s><|assistant|>Hi</s><|assistant|>": "</s>" is
    # the eos special (id 2); the rest is ordinary text, split where the messages end.
    expected = [*local.encode("<|user|>hello world"), 2]
    assert ids[segments[0].start : segments[0].end] == expected
    assert ids[segments[1].start : segments[1].end] == [*local.encode("<|assistant|>Hi"), 2]
    assert ids[segments[2].start :] == local.encode("<|assistant|>")
