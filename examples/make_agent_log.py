"""Generate ``examples/agent-log.jsonl``: a small, realistic coding-agent prompt log.

The log is what an agent framework would record for every model call: OpenAI Chat Completions
request bodies in the wrapper format ``cachecast.tokenizers`` reads (``timestamp``, ``scope``,
``session``, ``provider``, ``model``, ``request_id``, ``request``, ``output_tokens``).

Shape, chosen to exercise every part of a caching contract:
- every call starts with one of two long shared system prompts (a coding agent, a reviewer)
  followed by the same tool schemas, so the prefix is long enough (> 1,024 tokens) to cache;
- each session's history grows call by call (user task, assistant tool calls, tool results),
  so every call resends the previous one as its prefix;
- calls inside a session are seconds apart, but some sessions pause for 6 to 14 minutes (past
  a 5-minute TTL) and a few for 35 to 50 minutes (past a 30-minute one);
- two scopes (organisations), which never share a cache.

``output_tokens`` of a call is the exact o200k_base length of the assistant message the next
call carries (tool-call arguments or text). No provider usage is included: these calls were
never sent to a provider, and invented "observed" numbers would be fake evidence.

Deterministic: ``python examples/make_agent_log.py`` rewrites the same bytes every time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cachecast.tokenizers import get_tokenizer

SEED = 20261102
START = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC)
MODEL = "gpt-4o"
DEFAULT_OUTPUT = Path(__file__).with_name("agent-log.jsonl")

CODER_RULES = [
    "Read the relevant files before you change anything, and never guess at an API you have"
    " not seen in this repository.",
    "Keep every change as small as the task allows; do not reformat code you are not editing.",
    "Run the narrowest test that covers your change first, then the module's whole test file.",
    "When a test fails, quote the failing assertion and the line it points at before you act.",
    "Prefer the standard library; add a dependency only when the task says so.",
    "Never commit secrets, tokens, database files or generated artefacts.",
    "Write type hints on every new function and keep mypy --strict clean.",
    "Money is decimal.Decimal, never float; round only where the user sees a number.",
    "Explain why in comments, not what: the code already says what it does.",
    "If the task is ambiguous, state the assumption you make in your final answer.",
    "Use the search_code tool before read_file when you do not know where a symbol lives.",
    "Tool results can be long: summarise what matters in one or two sentences before moving on.",
    "Do not run commands that need the network; this sandbox has none.",
    "Shell commands time out after 120 seconds; split long work into smaller steps.",
    "Treat warnings from ruff as errors and fix them in the lines you touched.",
    "When you edit a file, send the whole new content of the hunk, with enough context to apply.",
    "Database schema changes go through a new Alembic migration, never through create_all.",
    "Keep functions short and names explicit; a reader should not need to scroll to understand.",
    "Tests derive expected values by hand and say how in a comment next to the assertion.",
    "Never weaken a test to make it pass; fix the code or explain why the test was wrong.",
    "Log messages name the file, the line and the field at fault when input is malformed.",
    "Clean up temporary files you create under /tmp before you finish.",
    "Report what you changed, how you checked it, and what is still not done.",
    "If a command's output is truncated, rerun it narrowed to the part you need.",
]
REVIEWER_RULES = [
    "You review pull requests for correctness first, then clarity, then style.",
    "Point at the exact line and quote it; say what breaks and give a concrete fix.",
    "Check that every new branch has a test and that the test can actually fail.",
    "Flag float arithmetic on money, silent exception handling and unbounded memory use.",
    "Check migrations for a matching downgrade and for data they could lose.",
    "Do not ask for changes that are only a matter of taste; label them as optional.",
    "Summarise the review in three bullet points at the end: blockers, risks, nice-to-haves.",
    "Read the tests before the implementation, to learn what the author meant the code to do.",
    "Verify that public interfaces kept their names and types, or that callers were updated.",
    "When the diff is large, review file by file and say which files you did not look at.",
]
PREAMBLE = {
    "coder": "You are Forge, a careful software engineering agent working inside a sandboxed"
    " checkout of the user's repository. You can read and write files, search the code and"
    " run shell commands through the tools below. Follow these rules:",
    "reviewer": "You are Lens, a code reviewer working on a sandboxed checkout of the user's"
    " repository. You can read files, search the code and run read-only shell commands"
    " through the tools below. Follow these rules:",
}
STYLE_GUIDE = [
    "Python 3.11, PEP 8 with a 100-character line limit, double quotes.",
    "Imports sorted: standard library, third party, first party, one blank line between.",
    "Dataclasses with slots for plain records; pydantic models at trust boundaries.",
    "Public functions have docstrings that say what the caller can rely on.",
    "CLI commands use typer; long work shows a rich progress bar on a terminal.",
    "Errors are exceptions with a clear message; exit code 2 for usage errors.",
]

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }
    for name, description, properties, required in [
        (
            "read_file",
            "Read a text file of the repository. Returns at most 400 lines with line numbers.",
            {
                "path": {"type": "string", "description": "path relative to the repo root"},
                "start_line": {"type": "integer", "description": "first line, 1-based"},
            },
            ["path"],
        ),
        (
            "write_file",
            "Replace a range of lines of a file (or create it) with new content.",
            {
                "path": {"type": "string"},
                "start_line": {"type": "integer"},
                "end_line": {"type": "integer"},
                "content": {"type": "string", "description": "the new lines"},
            },
            ["path", "content"],
        ),
        (
            "search_code",
            "Search the repository for a regular expression; returns file:line: text matches.",
            {
                "pattern": {"type": "string"},
                "glob": {"type": "string", "description": "limit to files matching this glob"},
            },
            ["pattern"],
        ),
        (
            "run_shell",
            "Run a shell command in the repository root (no network, 120 s timeout).",
            {"command": {"type": "string"}},
            ["command"],
        ),
        (
            "list_dir",
            "List a directory of the repository, one entry a line, directories ending in /.",
            {"path": {"type": "string"}},
            ["path"],
        ),
    ]
]

MODULES = ["billing", "ledger", "invoices", "accounts", "rates", "exports", "audit", "tax"]
TASKS = [
    "The test test_{m}_totals fails since yesterday's merge; find out why and fix it.",
    "Add a --since DATE option to the `{m} report` command and test it.",
    "Rounding in {m}.summarise gives 0.01 too much on some invoices; make it exact.",
    "Rename {m}.load_rows to {m}.read_rows everywhere and keep a deprecated alias.",
    "The {m} export is slow on large accounts; profile it and remove the worst hotspot.",
    "Add type hints to {m}/core.py until mypy --strict passes on it.",
]
REVIEWS = [
    "Review the open pull request that changes {m}/core.py and {m}/cli.py.",
    "Review the migration added for the {m} tables in the latest commit.",
]
WORDS = [
    "amount", "account", "period", "rate", "total", "entry", "currency", "balance", "line",
    "invoice", "customer", "ledger", "row", "batch", "window", "limit", "offset", "record",
]  # fmt: skip


def system_prompt(agent: str) -> str:
    rules = CODER_RULES if agent == "coder" else REVIEWER_RULES
    lines = [PREAMBLE[agent], ""]
    lines += [f"{number}. {rule}" for number, rule in enumerate(rules, start=1)]
    lines += ["", "Repository style guide:"] + [f"- {rule}" for rule in STYLE_GUIDE]
    lines += [
        "",
        "Answer in English. Use the tools whenever they can replace a guess. When you are done,"
        " reply without a tool call, with a short report of what you did and how you checked it.",
    ]
    return "\n".join(lines)


def python_source(rng: random.Random, module: str, lines: int) -> str:
    """A plausible Python file, numbered as read_file returns it."""
    out = [f'"""{module}: core computations."""', "", "from decimal import Decimal", ""]
    while len(out) < lines:
        name = f"{rng.choice(WORDS)}_{rng.choice(WORDS)}"
        args = ", ".join(f"{word}: Decimal" for word in rng.sample(WORDS, rng.randint(1, 3)))
        out += [
            f"def {name}({args}) -> Decimal:",
            f'    """Return the {name.replace("_", " ")}."""',
        ]
        for _ in range(rng.randint(2, 6)):
            left, right = rng.sample(WORDS, 2)
            amount = f"{rng.randint(1, 999)}.{rng.randint(0, 99):02d}"
            out.append(f"    {left} = {right} * Decimal('{amount}')")
        out += [f"    return {rng.choice(WORDS)}", ""]
    return "\n".join(f"{number:4d}  {text}" for number, text in enumerate(out[:lines], start=1))


def tool_result(rng: random.Random, tool: str, module: str) -> tuple[dict[str, Any], str]:
    """The arguments of one tool call and the text the tool returned."""
    if tool == "read_file":
        path = f"src/{module}/{rng.choice(['core', 'cli', 'models'])}.py"
        return {"path": path}, python_source(rng, module, rng.randint(25, 70))
    if tool == "search_code":
        symbol = f"{rng.choice(WORDS)}_{rng.choice(WORDS)}"
        hits = [
            f"src/{rng.choice(MODULES)}/{rng.choice(['core', 'cli'])}.py:{rng.randint(5, 400)}:"
            f"    {symbol} = {rng.choice(WORDS)}({rng.choice(WORDS)})"
            for _ in range(rng.randint(2, 12))
        ]
        return {"pattern": symbol}, "\n".join(hits)
    if tool == "run_shell":
        test = f"tests/test_{module}.py"
        passed = rng.randint(3, 40)
        failed = rng.choice([0, 0, 1, 2])
        lines = [f"$ pytest -q {test}", "." * passed + "F" * failed]
        for index in range(failed):
            lines += [
                f"FAILED {test}::test_{rng.choice(WORDS)}_{index} - AssertionError:",
                f"assert Decimal('{rng.randint(1, 999)}.{rng.randint(0, 99):02d}')"
                f" == Decimal('{rng.randint(1, 999)}.{rng.randint(0, 99):02d}')",
            ]
        lines.append(f"{failed} failed, {passed} passed in {rng.uniform(0.2, 9):.2f}s")
        return {"command": f"pytest -q {test}"}, "\n".join(lines)
    if tool == "list_dir":
        entries = sorted({f"{rng.choice(WORDS)}.py" for _ in range(rng.randint(4, 12))})
        return {"path": f"src/{module}"}, "\n".join(["__init__.py", *entries, "tests/"])
    # write_file
    path = f"src/{module}/core.py"
    start = rng.randint(10, 200)
    content = python_source(rng, module, rng.randint(4, 14))
    return {"path": path, "start_line": start, "content": content}, f"wrote {path}"


def append_tool_turn(
    messages: list[dict[str, Any]], call_id: str, tool: str, arguments_text: str, result: str
) -> None:
    """The assistant's tool call and the tool's result, as the agent re-sends them."""
    messages.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": tool, "arguments": arguments_text},
                }
            ],
        }
    )
    messages.append({"role": "tool", "tool_call_id": call_id, "content": result})


def session_calls(
    rng: random.Random, index: int, start: dt.datetime, scope: str, agent: str
) -> list[dict[str, Any]]:
    """Every model call of one session, each carrying the whole history so far."""
    tokenizer = get_tokenizer(MODEL)
    module = rng.choice(MODULES)
    task = rng.choice(TASKS if agent == "coder" else REVIEWS).format(m=module)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(agent)},
        {"role": "user", "content": task},
    ]
    steps = rng.randint(6, 18)
    pauses = (
        {rng.randint(2, steps - 1): rng.choice([7, 9, 12, 14, 38, 47])}
        if rng.random() < 0.4
        else {}
    )
    calls: list[dict[str, Any]] = []
    now = start
    for step in range(steps):
        calls.append(
            {
                "timestamp": now.isoformat().replace("+00:00", "Z"),
                "scope": scope,
                "session": f"s-{index:02d}",
                "provider": "openai",
                "model": MODEL,
                "request_id": f"s{index:02d}-{step:02d}",
                "request": {
                    "model": MODEL,
                    "messages": json.loads(json.dumps(messages)),
                    "tools": TOOLS,
                    "temperature": 0,
                },
            }
        )
        if step == steps - 1:
            reply = (
                f"Done. I {rng.choice(['fixed', 'changed', 'checked', 'reviewed'])}"
                f" src/{module}/core.py; tests/test_{module}.py passes."
            )
            calls[-1]["output_tokens"] = len(tokenizer.encode(reply))
            break
        tool = rng.choices(
            ["read_file", "search_code", "run_shell", "list_dir", "write_file"],
            weights=[5, 3, 3, 1, 2 if agent == "coder" else 0],
        )[0]
        arguments, result = tool_result(rng, tool, module)
        call_id = f"call_{index:02d}_{step:02d}"
        arguments_text = json.dumps(arguments)
        calls[-1]["output_tokens"] = len(tokenizer.encode(tool + arguments_text))
        append_tool_turn(messages, call_id, tool, arguments_text, result)
        # Model time plus tool time; a person sometimes steps away mid-session.
        seconds = rng.uniform(2.0, 25.0) + 60 * pauses.get(step + 1, 0)
        now += dt.timedelta(seconds=round(seconds, 3))
        if step + 1 in pauses and rng.random() < 0.5:
            messages.append({"role": "user", "content": "Back. Carry on, and keep it minimal."})
    return calls


def generate(sessions: int = 26, seed: int = SEED) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    calls: list[dict[str, Any]] = []
    for index in range(sessions):
        start = START + dt.timedelta(seconds=rng.randint(0, 3 * 3600))
        scope = "org-acme" if rng.random() < 0.75 else "org-globex"
        agent = "reviewer" if rng.random() < 0.2 else "coder"
        calls.extend(session_calls(rng, index, start, scope, agent))
    calls.sort(key=lambda call: (call["timestamp"], call["request_id"]))
    return calls


def write_calls(calls: list[dict[str, Any]], path: Path) -> None:
    """One compact JSON object a line (the bytes the committed logs hold)."""
    with open(path, "w", encoding="utf-8") as handle:
        for call in calls:
            handle.write(json.dumps(call, separators=(",", ":")) + "\n")


def run(
    doc: str,
    make: Callable[[int, int], list[dict[str, Any]]],
    output: Path,
    sessions: int,
    seed: int,
) -> None:
    """The command line of a log generator: ``--output``, ``--sessions``, ``--seed``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=output)
    parser.add_argument("--sessions", type=int, default=sessions)
    parser.add_argument("--seed", type=int, default=seed)
    args = parser.parse_args()
    calls = make(args.sessions, args.seed)
    write_calls(calls, args.output)
    print(f"wrote {len(calls)} calls to {args.output}")


def main() -> None:
    run(__doc__ or "", generate, DEFAULT_OUTPUT, 26, SEED)


if __name__ == "__main__":
    main()
