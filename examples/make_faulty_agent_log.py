"""Generate ``examples/faulty-agent-log.jsonl``: a small agent log with two real layout faults.

The same coding agent as ``make_agent_log.py`` (its system prompt, tools and tool results),
served on a self-hosted vLLM as ``qwen2.5-7b-instruct`` (a model whose tokenizer cachecast
knows exactly, so the log can be replayed on the engine tests' Qwen2.5 model), with the two
mistakes that destroy prefix caching in practice:

- a volatile timestamp at the top of the system prompt ("Current time: ..." with the call's
  own time, to the second), so no two calls share even their first block;
- the tool list in a different order on every call (built from a set, say), and Qwen2.5's
  template renders the tools right after the system text, so even with the timestamp gone
  the prefix would end at the first tool.

Four sessions of three or four calls, each call carrying the session's whole history, one
scope. ``output_tokens`` is the exact Qwen2.5 length of the assistant message the next call
carries. No usage is included: these calls were never sent, and invented "observed" numbers
would be fake evidence. Kept small (14 calls of 1,200 to 2,000 tokens) so that a
replay on a CPU engine takes seconds.

Deterministic: ``python examples/make_faulty_agent_log.py`` rewrites the same bytes.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path
from typing import Any

from make_agent_log import (
    MODULES,
    TASKS,
    TOOLS,
    append_tool_turn,
    run,
    system_prompt,
    tool_result,
)

from cachecast.tokenizers import get_tokenizer

SEED = 20261203
START = dt.datetime(2026, 11, 3, 14, 0, tzinfo=dt.UTC)
MODEL = "qwen2.5-7b-instruct"
DEFAULT_OUTPUT = Path(__file__).with_name("faulty-agent-log.jsonl")


def stamp(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def session_calls(rng: random.Random, index: int, start: dt.datetime) -> list[dict[str, Any]]:
    """Every model call of one session, each carrying the whole history so far."""
    tokenizer = get_tokenizer(MODEL)
    module = rng.choice(MODULES)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": ""},  # written per call: it starts with the time
        {"role": "user", "content": rng.choice(TASKS).format(m=module)},
    ]
    steps = rng.randint(3, 4)
    calls: list[dict[str, Any]] = []
    now = start
    for step in range(steps):
        messages[0]["content"] = f"Current time: {stamp(now)}\n\n{system_prompt('coder')}"
        tools = json.loads(json.dumps(TOOLS))
        rng.shuffle(tools)
        calls.append(
            {
                "timestamp": stamp(now),
                "scope": "org-acme",
                "session": f"s-{index:02d}",
                "provider": "vllm",
                "model": MODEL,
                "request_id": f"s{index:02d}-{step:02d}",
                "request": {
                    "model": MODEL,
                    "messages": json.loads(json.dumps(messages)),
                    "tools": tools,
                    "temperature": 0,
                },
            }
        )
        if step == steps - 1:
            reply = f"Done. I changed src/{module}/core.py; tests/test_{module}.py passes."
            calls[-1]["output_tokens"] = len(tokenizer.encode(reply))
            break
        tool = rng.choices(["read_file", "search_code", "run_shell"], weights=[4, 3, 3])[0]
        arguments, result = tool_result(rng, tool, module)
        if tool == "read_file":  # a shorter file keeps every prompt well inside 8k tokens
            result = "\n".join(result.splitlines()[:30])
        call_id = f"call_{index:02d}_{step:02d}"
        arguments_text = json.dumps(arguments)
        # What the model writes for a call in Qwen2.5's format (see docs/engine-tokenization.md).
        written = f'<tool_call>\n{{"name": "{tool}", "arguments": {arguments_text}}}\n</tool_call>'
        calls[-1]["output_tokens"] = len(tokenizer.encode(written))
        append_tool_turn(messages, call_id, tool, arguments_text, result)
        now += dt.timedelta(seconds=rng.randint(3, 20))
    return calls


def generate(sessions: int = 4, seed: int = SEED) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    calls: list[dict[str, Any]] = []
    for index in range(sessions):
        start = START + dt.timedelta(seconds=rng.randint(0, 600))
        calls.extend(session_calls(rng, index, start))
    calls.sort(key=lambda call: (call["timestamp"], call["request_id"]))
    return calls


def main() -> None:
    run(__doc__ or "", generate, DEFAULT_OUTPUT, 4, SEED)


if __name__ == "__main__":
    main()
