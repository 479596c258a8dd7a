"""Tokenization throughput: cachecast's log reader against tiktoken on each whole request.

Generates a realistic agent log (many sessions, a few shared system prompts and tool sets,
histories growing turn by turn), then in the same run:

* baseline: tiktoken ``encode`` of each request's whole rendering (the chat framing as special
  tokens), one request at a time; only the encode calls are timed (JSON parsing and
  rendering are left out of the baseline's time, in its favour);
* cachecast: ``read_log`` over the file, everything included (JSON parsing, rendering, the
  segment cache, taking a conversation's earlier request over, the encoding thread).

Checks that every request's token count is equal in both, and prints tokens/s and the ratio.

    .venv/bin/python bench/tokenize.py                 # 50 million prompt tokens
    .venv/bin/python bench/tokenize.py --tokens 2000000
"""

from __future__ import annotations

import os
import sys

# This file is named like the standard library's ``tokenize``; drop its folder from the
# import path before anything imports ``tokenize`` (linecache, inspect) and finds this file.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.modules.pop("tokenize", None)

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from array import array  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

from cachecast.tokenizers import get_tokenizer, read_log  # noqa: E402
from cachecast.tokenizers.base import TiktokenTokenizer  # noqa: E402
from cachecast.tokenizers.encode import rendered_text  # noqa: E402
from cachecast.tokenizers.render import render  # noqa: E402

CHARS_PER_TOKEN = 4.3  # rough, only to decide when the generated log is large enough


def words(rng: random.Random, vocabulary: list[str], count: int) -> str:
    return " ".join(rng.choices(vocabulary, k=count))


def generate(path: Path, target_tokens: int, seed: int = 7) -> tuple[int, int]:
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ten", "dra", "vo", "sel", "qu", "ix", "an", "or", "pre"]
    vocabulary = ["".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(3000)]
    vocabulary += ["def", "return", "{", "}", "(x)", "==", "None", "42", "3.14", "\n", "\n\n"]
    systems = [words(rng, vocabulary, 1500) for _ in range(4)]
    tool_sets = [
        [
            {
                "type": "function",
                "function": {
                    "name": f"tool_{set_index}_{k}",
                    "description": words(rng, vocabulary, 120),
                    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
                },
            }
            for k in range(6)
        ]
        for set_index in range(3)
    ]
    requests = 0
    written_chars = 0
    now = 1_767_225_600.0
    session = 0
    with open(path, "w", encoding="utf-8") as handle:
        while written_chars / CHARS_PER_TOKEN < target_tokens:
            session += 1
            system = rng.choice(systems)
            tools = rng.choice(tool_sets)
            history: list[dict[str, object]] = [{"role": "system", "content": system}]
            start = now + rng.uniform(0, 3600)
            for turn in range(rng.randint(10, 60)):
                history.append(
                    {"role": "user", "content": words(rng, vocabulary, rng.randint(20, 200))}
                )
                line = json.dumps(
                    {
                        "timestamp": start + turn * 20,
                        "scope": f"org-{session % 5}",
                        "session": f"s{session}",
                        "model": "gpt-4o",
                        "request": {"model": "gpt-4o", "tools": tools, "messages": history},
                    }
                )
                handle.write(line + "\n")
                written_chars += len(line)
                requests += 1
                history.append(
                    {"role": "assistant", "content": words(rng, vocabulary, rng.randint(50, 400))}
                )
                if rng.random() < 0.4:
                    history.append({"role": "tool", "content": words(rng, vocabulary, 600)})
                if written_chars / CHARS_PER_TOKEN >= target_tokens:
                    break
    return requests, session


def _baseline_texts(path: Path, tokenizer: TiktokenTokenizer) -> list[str]:
    """Each request's whole rendering (prepared untimed, in the baseline's favour)."""
    with open(path, encoding="utf-8") as handle:
        return [
            rendered_text(render(json.loads(line)["request"], "chat"), tokenizer) for line in handle
        ]


def _digest(ids: Sequence[int]) -> bytes:
    return hashlib.blake2b(array("I", ids).tobytes(), digest_size=16).digest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=50_000_000, help="prompt tokens to generate")
    parser.add_argument("--repeat", type=int, default=2, help="timed rounds of each")
    parser.add_argument("--log", type=Path, default=None, help="where to write the log")
    args = parser.parse_args()
    folder = tempfile.TemporaryDirectory()
    path = args.log or Path(folder.name) / "agent_log.jsonl"

    started = time.perf_counter()
    requests, sessions = generate(path, args.tokens)
    print(
        f"generated {requests} requests in {sessions} sessions "
        f"({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - started:.1f} s"
    )
    tokenizer = get_tokenizer("gpt-4o")
    assert isinstance(tokenizer, TiktokenTokenizer)
    framed = tokenizer.framed_encoding

    tick = time.perf_counter()
    texts = _baseline_texts(path, tokenizer)
    prepare_seconds = time.perf_counter() - tick

    # Untimed check: every request's ids (not only counts) equal the baseline's.
    expected = [_digest(framed.encode(text, allowed_special="all")) for text in texts]
    got = [_digest(request.tokens or []) for request in read_log(path)]
    if got != expected:
        differing = sum(a != b for a, b in zip(got, expected, strict=False))
        print(f"MISMATCH: {differing} requests differ", file=sys.stderr)
        return 1
    total = 0
    baseline_seconds = cachecast_seconds = float("inf")
    # Alternate the two and keep each one's best round: the machine is shared, so one
    # round of either may be slowed by others' work.
    for _ in range(args.repeat):
        tick = time.perf_counter()
        total = sum(len(framed.encode(text, allowed_special="all")) for text in texts)
        baseline_seconds = min(baseline_seconds, time.perf_counter() - tick)
        tick = time.perf_counter()
        cachecast_total = sum(request.input_tokens for request in read_log(path))
        cachecast_seconds = min(cachecast_seconds, time.perf_counter() - tick)
        if cachecast_total != total:
            print(f"MISMATCH: {cachecast_total} != {total} tokens", file=sys.stderr)
            return 1
    baseline_rate = total / baseline_seconds
    cachecast_rate = total / cachecast_seconds
    print(f"prompt tokens: {total:,} in {requests:,} requests; ids equal: yes")
    print(f"best of {args.repeat} alternating rounds each:")
    print(
        f"baseline  tiktoken encode per request: {baseline_rate:,.0f} tokens/s "
        f"({baseline_seconds:.1f} s)"
    )
    print(
        f"cachecast read_log (everything):       {cachecast_rate:,.0f} tokens/s "
        f"({cachecast_seconds:.1f} s)"
    )
    print(f"ratio: {cachecast_rate / baseline_rate:.1f}x")
    end_to_end = total / (baseline_seconds + prepare_seconds)
    print(
        f"(baseline with its JSON parsing and rendering, timed once: {end_to_end:,.0f} tokens/s; "
        f"ratio {cachecast_rate / end_to_end:.1f}x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
