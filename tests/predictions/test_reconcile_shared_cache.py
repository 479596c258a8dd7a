"""Caches shared between the cassettes of one test run (docs/log-formats.md, "Request time
and shared caches").

Two cassettes, as VCR test suites record them: file A writes a long system prompt, file B
(another test, same prompt, another question) reads it. Each request's time is its
response's ``Date`` header (vcrpy) or its ``recorded_at`` (Ruby VCR without one); files
share one cache in time order, within the organization their responses name.

Expected figures, by hand. Claude's tokenizer is approximated by o200k_base with the chat
framing tests/predictions/test_calibration.py documents (a block: 4 framing tokens around
its text; the reply primed with 3), and each recording reports exactly what that
approximation counts (calibration ratio 1), so the system block through its breakpoint is
``SYSTEM_BLOCK = 4 + len(o200k(SYSTEM))`` tokens, above claude-sonnet-4-5's minimum of 1,024
cacheable tokens, with Anthropic's one-token granularity (contracts: anthropic
claude-sonnet-4-5). B reads all of it when A's write is alive (5-minute TTL, the default of
``cache_control: ephemeral``), else nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput, LogReading
from cachecast.tokenizers.openai_data import load_openai_encoding
from cachecast.usecases.reconcile import ReconcileRequest, reconcile

ENCODING = load_openai_encoding("o200k_base")
SONNET = "claude-sonnet-4-5-20250929"
MINIMUM = 1024  # claude-sonnet-4-5's minimum cacheable prompt (docs/contracts.md)
SYSTEM = (
    "Warehouse handbook: every pallet is scanned on arrival, weighed, photographed and"
    " shelved by the aisle its barcode names; damaged goods go to bay 9 for inspection. "
) * 40
QUESTION_A = "Where do damaged goods go?"
QUESTION_B = "What happens to a pallet when it arrives at the warehouse?"


def tokens(text: str) -> int:
    return len(ENCODING.encode_ordinary(text))


SYSTEM_BLOCK = 4 + tokens(SYSTEM)
FRESH_A = 4 + tokens(QUESTION_A) + 3
FRESH_B = 4 + tokens(QUESTION_B) + 3

ORG_1 = "4257e925-0000-4000-8000-000000000001"
ORG_2 = "4257e925-0000-4000-8000-000000000002"
JULY_3 = "Thu, 03 Jul 2025 18:17:28 GMT"
JULY_3_PLUS_5_S = "Thu, 03 Jul 2025 18:17:33 GMT"
JULY_3_MINUS_5_S = "Thu, 03 Jul 2025 18:17:23 GMT"
JULY_5 = "Sat, 05 Jul 2025 18:17:33 GMT"


def bodies(question: str, read: int, written: int, fresh: int) -> tuple[str, str]:
    request = {
        "model": SONNET,
        "max_tokens": 50,
        "system": [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": question}],
    }
    response = {
        "id": f"msg_{fresh}",
        "type": "message",
        "role": "assistant",
        "model": SONNET,
        "content": [{"type": "text", "text": "Bay 9."}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": fresh,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "output_tokens": 4,
        },
    }
    return json.dumps(request), json.dumps(response)


def headers_yaml(date: str | None, organization: str | None, indent: str) -> str:
    lines = [f"{indent}Content-Type:", f"{indent}- application/json"]
    if date is not None:
        lines += [f"{indent}Date:", f"{indent}- {date}"]
    if organization is not None:
        lines += [f"{indent}anthropic-organization-id:", f"{indent}- {organization}"]
    return "\n".join(lines)


def vcrpy_cassette(
    path: Path, question: str, usage: tuple[int, int, int], date: str | None, org: str | None
) -> Path:
    """A vcrpy cassette (https://vcrpy.readthedocs.io/en/latest/advanced.html) of one call."""
    request, response = bodies(question, *usage)
    path.write_text(
        f"""interactions:
- request:
    body: {json.dumps(request)}
    headers:
      Content-Type:
      - application/json
    method: POST
    uri: https://api.anthropic.com/v1/messages
  response:
    body:
      string: {json.dumps(response)}
    headers:
{headers_yaml(date, org, "      ")}
    status:
      code: 200
      message: OK
version: 1
""",
        "utf-8",
    )
    return path


def ruby_cassette(
    path: Path, question: str, usage: tuple[int, int, int], recorded_at: str, org: str
) -> Path:
    """A Ruby VCR cassette (https://benoittgt.github.io/vcr/#/cassettes/format) of one call,
    its response without a ``Date`` header: ``recorded_at`` dates it."""
    request, response = bodies(question, *usage)
    path.write_text(
        f"""---
http_interactions:
- request:
    method: post
    uri: https://api.anthropic.com/v1/messages
    body:
      encoding: UTF-8
      string: {json.dumps(request)}
    headers:
      Content-Type:
      - application/json
  response:
    status:
      code: 200
      message: OK
    headers:
{headers_yaml(None, org, "      ")}
    body:
      encoding: UTF-8
      string: {json.dumps(response)}
  recorded_at: {recorded_at}
recorded_with: VCR 6.2.0
""",
        "utf-8",
    )
    return path


WRITES = (0, SYSTEM_BLOCK, FRESH_A)  # (read, written, fresh) as A's response reports them
READS = (SYSTEM_BLOCK, 0, FRESH_B)


def predicted(store: ContractStore, *paths: Path) -> dict[str, tuple[int, int]]:
    """Each file's (predicted read, predicted write), reconciled as one run."""
    report = reconcile(ReconcileRequest(log=LogInput.of_paths(list(paths))), store)
    return {
        Path(row.source).name: (row.predicted_cache_read_tokens, row.predicted_cache_write_tokens)
        for row in report.requests
    }


def test_the_figures_are_cacheable() -> None:
    assert SYSTEM_BLOCK >= MINIMUM


def test_a_cassette_reads_what_another_of_its_run_wrote(
    store: ContractStore, tmp_path: Path
) -> None:
    a = vcrpy_cassette(tmp_path / "a_cache_write.yaml", QUESTION_A, WRITES, JULY_3, ORG_1)
    b = vcrpy_cassette(tmp_path / "b_cache_read.yaml", QUESTION_B, READS, JULY_3_PLUS_5_S, ORG_1)
    assert predicted(store, a, b) == {a.name: (0, SYSTEM_BLOCK), b.name: (SYSTEM_BLOCK, 0)}
    # Alone, B's cache was warm before its file began: nothing to read from.
    assert predicted(store, b) == {b.name: (0, SYSTEM_BLOCK)}


def test_files_share_a_cache_in_time_order_not_name_order(
    store: ContractStore, tmp_path: Path
) -> None:
    """B's response is dated 5 s before A's: B wrote the prompt and A, named first, read it."""
    a = vcrpy_cassette(tmp_path / "a.yaml", QUESTION_A, WRITES, JULY_3, ORG_1)
    b = vcrpy_cassette(tmp_path / "b.yaml", QUESTION_B, READS, JULY_3_MINUS_5_S, ORG_1)
    assert predicted(store, a, b) == {a.name: (SYSTEM_BLOCK, 0), b.name: (0, SYSTEM_BLOCK)}


def test_no_cache_is_shared_between_organizations(store: ContractStore, tmp_path: Path) -> None:
    a = vcrpy_cassette(tmp_path / "a.yaml", QUESTION_A, WRITES, JULY_3, ORG_1)
    b = vcrpy_cassette(tmp_path / "b.yaml", QUESTION_B, READS, JULY_3_PLUS_5_S, ORG_2)
    assert predicted(store, a, b) == {a.name: (0, SYSTEM_BLOCK), b.name: (0, SYSTEM_BLOCK)}


def test_no_cache_is_shared_between_files_recorded_days_apart(
    store: ContractStore, tmp_path: Path
) -> None:
    a = vcrpy_cassette(tmp_path / "a.yaml", QUESTION_A, WRITES, JULY_3, ORG_1)
    b = vcrpy_cassette(tmp_path / "b.yaml", QUESTION_B, READS, JULY_5, ORG_1)
    assert predicted(store, a, b) == {a.name: (0, SYSTEM_BLOCK), b.name: (0, SYSTEM_BLOCK)}


def test_files_without_a_time_keep_caches_of_their_own(
    store: ContractStore, tmp_path: Path
) -> None:
    a = vcrpy_cassette(tmp_path / "a.yaml", QUESTION_A, WRITES, None, ORG_1)
    b = vcrpy_cassette(tmp_path / "b.yaml", QUESTION_B, READS, None, ORG_1)
    assert predicted(store, a, b) == {a.name: (0, SYSTEM_BLOCK), b.name: (0, SYSTEM_BLOCK)}


def test_ruby_vcr_cassettes_share_by_recorded_at(store: ContractStore, tmp_path: Path) -> None:
    a = ruby_cassette(tmp_path / "a.yml", QUESTION_A, WRITES, JULY_3, ORG_1)
    b = ruby_cassette(tmp_path / "b.yml", QUESTION_B, READS, JULY_3_PLUS_5_S, ORG_1)
    assert predicted(store, a, b) == {a.name: (0, SYSTEM_BLOCK), b.name: (SYSTEM_BLOCK, 0)}
    c = ruby_cassette(tmp_path / "c.yml", QUESTION_B, READS, JULY_3_PLUS_5_S, ORG_2)
    assert predicted(store, a, c) == {a.name: (0, SYSTEM_BLOCK), c.name: (0, SYSTEM_BLOCK)}


def scopes(path: Path) -> list[str]:
    return [request.scope for request in LogReading(LogInput.of_paths([path]), None).requests()]


def test_a_response_without_the_header_keeps_its_recording_s_organization(
    tmp_path: Path,
) -> None:
    """One recording, one organization: a response whose header a filter dropped takes the
    organization the recording's other responses name, so the file stays one scope."""
    request, response = bodies(QUESTION_A, *WRITES)
    interaction = """- request:
    body: {request}
    headers:
      Content-Type:
      - application/json
    method: POST
    uri: https://api.anthropic.com/v1/messages
  response:
    body:
      string: {response}
    headers:
{headers}
    status:
      code: 200
      message: OK
"""
    path = tmp_path / "mixed.yaml"
    path.write_text(
        "interactions:\n"
        + interaction.format(
            request=json.dumps(request),
            response=json.dumps(response),
            headers=headers_yaml(JULY_3, None, "      "),
        )
        + interaction.format(
            request=json.dumps(request),
            response=json.dumps(response),
            headers=headers_yaml(JULY_3_PLUS_5_S, ORG_1, "      "),
        )
        + "version: 1\n",
        "utf-8",
    )
    first, second = scopes(path)
    assert first == second != "default"
    other = vcrpy_cassette(tmp_path / "other.yaml", QUESTION_A, WRITES, JULY_3, ORG_2)
    assert scopes(other)[0] not in (first, "default")


def test_the_organization_is_never_shown(store: ContractStore, tmp_path: Path) -> None:
    """The organization scopes the cache as a keyed hash only (docs/limits.md, "Identity
    fields"): a miss cause naming the other scope does not carry the value."""
    a = vcrpy_cassette(tmp_path / "a.yaml", QUESTION_A, WRITES, JULY_3, ORG_1)
    b = vcrpy_cassette(tmp_path / "b.yaml", QUESTION_B, READS, JULY_3_PLUS_5_S, ORG_2)
    report = reconcile(ReconcileRequest(log=LogInput.of_paths([a, b])), store)
    shown = report.model_dump_json()
    assert "scope_differs" in shown  # B's prefix was cached, under the other organization
    assert ORG_1 not in shown and ORG_2 not in shown
