"""Time ``inspect`` and ``estimate`` on Responses requests chained by ``previous_response_id``.

    .venv/bin/python -m bench.chains [--requests 1500]

Workload: a HAR 1.2 file of N OpenAI Responses API exchanges (issue 28: 3,000 of them, a
4 MB file, took 65 s and 2.5 GB to inspect). Each request names the previous response's id
in ``previous_response_id`` and adds one short input; each response answers with one short
output. Request k's prompt is therefore everything before it plus its own input: the sum of
the prompts grows with N squared, while the file (and the work a linear reader does) grows
with N.

Both commands run as ``python -m cachecast ...`` in a fresh process on chains of N and 2N
requests in the same run; printed: seconds and peak resident memory (``bench.peak``) of
each, and the ratio 2N / N. Linear work reads about 2x; quadratic work about 4x.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.peak import Measured, run_measured

MODEL = "gpt-4o"
START = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def turn_input(index: int) -> str:
    """The new user input of request ``index`` (0-based): short, and different every turn."""
    return f"Step {index}: add {index} to the running total and say only the new total."


def turn_output(index: int) -> str:
    """The assistant's answer to request ``index``."""
    return f"The running total is now {index * (index + 1) // 2}."


def chain_exchange(index: int) -> dict[str, Any]:
    """HAR entry ``index`` of the chain: a Responses request naming the previous response."""
    body: dict[str, Any] = {"model": MODEL, "input": turn_input(index)}
    if index > 0:
        body["previous_response_id"] = f"resp_{index - 1:06d}"
    response = {
        "id": f"resp_{index:06d}",
        "object": "response",
        "model": MODEL,
        "output": [
            {
                "type": "message",
                "id": f"msg_{index:06d}",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn_output(index)}],
            }
        ],
    }
    started = START + timedelta(seconds=5 * index)
    return {
        "startedDateTime": started.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "time": 800,
        "request": {
            "method": "POST",
            "url": "https://api.openai.com/v1/responses",
            "httpVersion": "HTTP/1.1",
            "headers": [{"name": "content-type", "value": "application/json"}],
            "queryString": [],
            "cookies": [],
            "headersSize": -1,
            "bodySize": -1,
            "postData": {"mimeType": "application/json", "text": json.dumps(body)},
        },
        "response": {
            "status": 200,
            "statusText": "OK",
            "httpVersion": "HTTP/1.1",
            "headers": [{"name": "content-type", "value": "application/json"}],
            "cookies": [],
            "content": {"size": -1, "mimeType": "application/json", "text": json.dumps(response)},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": -1,
        },
        "cache": {},
        "timings": {"send": 0, "wait": 800, "receive": 0},
    }


def write_chain_har(path: Path, requests: int) -> Path:
    """A HAR 1.2 file of ``requests`` chained Responses exchanges, written entry by entry
    (one JSON document on one line, as mitmproxy's HAR export writes it)."""
    with path.open("w", encoding="utf-8") as out:
        out.write('{"log": {"version": "1.2", "creator": {"name": "bench", "version": "1"},')
        out.write(' "entries": [')
        for index in range(requests):
            out.write((", " if index else "") + json.dumps(chain_exchange(index)))
        out.write("]}}\n")
    return path


def write_aliased_cassette(path: Path, interactions: int) -> Path:
    """A vcrpy YAML cassette whose ``interactions`` all alias one request and one response
    (anchors ``&req`` and ``&res`` on the first interaction)."""
    request = {"model": MODEL, "messages": [{"role": "user", "content": "Hello there"}]}
    response = {
        "id": "chatcmpl-1",
        "model": MODEL,
        "choices": [{"message": {"role": "assistant", "content": "Hi"}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 1},
    }
    with path.open("w", encoding="utf-8") as out:
        out.write("interactions:\n")
        out.write("- request: &req\n")
        out.write(f"    body: {json.dumps(json.dumps(request))}\n")
        out.write("    headers: {Content-Type: [application/json]}\n")
        out.write("    method: POST\n")
        out.write("    uri: https://api.openai.com/v1/chat/completions\n")
        out.write("  response: &res\n")
        out.write(f"    body: {{string: {json.dumps(json.dumps(response))}}}\n")
        out.write("    headers: {Content-Type: [application/json]}\n")
        out.write("    status: {code: 200, message: OK}\n")
        for _ in range(interactions - 1):
            out.write("- {request: *req, response: *res}\n")
        out.write("version: 1\n")
    return path


def measure(command: list[str]) -> Measured:
    ran = run_measured("cachecast", command)
    if ran.returncode != 0:
        raise SystemExit(f"cachecast {' '.join(command)} exited {ran.returncode}: {ran.stderr}")
    return ran


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1500, help="N (the longer chain is 2N)")
    parser.add_argument("--database-url", help="a migrated contract database (default: built)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cachecast-chains-") as folder:
        root = Path(folder)
        database = options.database_url or f"sqlite:///{root / 'contracts.db'}"
        if options.database_url is None:
            measure(["db", "upgrade", "--database-url", database])
        commands = {
            "inspect": ["inspect", "{log}", "--json"],
            "estimate": [
                "estimate",
                "{log}",
                "--target",
                f"openai:{MODEL}",
                "--at",
                "2026-11-01",
                "--json",
                "--database-url",
                database,
            ],
        }
        sizes = (options.requests, 2 * options.requests)
        logs = {n: write_chain_har(root / f"chain-{n}.har", n) for n in sizes}
        print(f"chains of {sizes[0]} and {sizes[1]} Responses requests")
        for name, template in commands.items():
            runs = {n: measure([a.replace("{log}", str(logs[n])) for a in template]) for n in sizes}
            short, long = runs[sizes[0]], runs[sizes[1]]
            print(
                f"{name:9} {short.seconds:7.2f} s {short.peak_kib / 1024:7.1f} MiB"
                f" | {long.seconds:7.2f} s {long.peak_kib / 1024:7.1f} MiB"
                f" | time ratio {long.seconds / short.seconds:4.2f}"
                " (linear ~2, quadratic ~4)"
            )


if __name__ == "__main__":
    main()
