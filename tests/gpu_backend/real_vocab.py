"""The tiny random-weight Qwen2.5 with the REAL vocabulary and chat template
(``tests.gpu_backend.tiny_qwen``: built offline, no download), and the chat
requests the engine tests send it."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from tests.gpu_backend import tiny_qwen

QWEN_MODEL = tiny_qwen.TINY_QWEN_MODEL
QWEN_BLOCK_SIZE = tiny_qwen.TINY_QWEN_BLOCK_SIZE
QWEN_BLOCK_BYTES = tiny_qwen.TINY_QWEN_BLOCK_BYTES
# 1,499 usable blocks (block 0 is vLLM's null block): 47,968 tokens, so the example log
# (21,960 prompt tokens) and every test log fit without an eviction.
QWEN_NUM_BLOCKS = tiny_qwen.TINY_QWEN_NUM_BLOCKS
QWEN_MAX_MODEL_LEN = tiny_qwen.TINY_QWEN_MAX_MODEL_LEN
# The test files that need the Qwen server (it starts when one of them is selected).
QWEN_SERVER_TEST_FILES = ("test_real_vocab_server.py", "test_engine_layouts.py")


def build_qwen_model(directory: Path) -> Path:
    """Write config.json, model.safetensors and the tokenizer files into ``directory``."""
    return tiny_qwen.build_tiny_qwen(directory)


# --- chat requests ---------------------------------------------------------------------

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {key: {"type": "string", "description": doc} for key, doc in args},
                "required": [key for key, _ in args],
            },
        },
    }
    for name, description, args in (
        ("read_file", "Read a file of the checkout.", [("path", "Path from the root.")]),
        (
            "search_code",
            "Search the checkout for a regular expression.",
            [("pattern", "A Python regular expression."), ("glob", "Files to search.")],
        ),
        ("run_tests", "Run pytest on some test files.", [("target", "A pytest node id.")]),
        (
            "write_file",
            "Replace a file's content.",
            [("path", "Path from the root."), ("content", "The new content.")],
        ),
    )
]

_RULES = (
    "Read the files a change touches before editing them",
    "Keep each change as small as the task allows",
    "Run the narrowest test first and then the whole module",
    "Quote a failing assertion before acting on it",
    "Prefer the standard library to new dependencies",
    "Never commit secrets or generated files",
    "Write type hints on every new function",
    "Use decimal arithmetic for money and never floats",
    "Explain why in comments rather than what",
    "State the assumptions you make in the final answer",
)


def long_text(seed: int, sentences: int) -> str:
    """Deterministic prose: ``sentences`` numbered rules, shuffled and reworded by ``seed``."""
    generator = random.Random(seed)
    lines = []
    for number in range(1, sentences + 1):
        rule = generator.choice(_RULES)
        detail = generator.choice(("always", "in every session", "without exception", "first"))
        lines.append(f"{number}. {rule}, {detail} (rule {seed}-{number}).")
    return "\n".join(lines)


CODER_SYSTEM = "You are Forge, a careful coding agent. Follow these rules:\n" + long_text(1, 60)


def _coder_turns(session: int) -> list[list[dict[str, Any]]]:
    """The messages after the system prompt of each of a session's three calls."""
    task = {"role": "user", "content": f"Task {session}: fix the failing test in module {session}."}
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call-{session}-0",
                "type": "function",
                "function": {
                    "name": "read_file",
                    "arguments": f'{{"path": "src/module_{session}.py"}}',
                },
            }
        ],
    }
    result = {
        "role": "tool",
        "tool_call_id": f"call-{session}-0",
        "content": f"def total_{session}(items):\n    return sum(items) * {session}\n",
    }
    answer = {"role": "assistant", "content": f"The factor {session} is wrong; it should be 1."}
    follow_up = {"role": "user", "content": "Fix it and run the tests."}
    return [[task], [task, call, result], [task, call, result, answer, follow_up]]


def shared_prefix_log() -> list[dict[str, Any]]:
    """12 chat records for QWEN_MODEL: three coding sessions of three calls that share one
    long system prompt and the tools, interleaved with three one-off calls whose long system
    prompts are unique (always cold, so one replay has cold and warm requests)."""
    coder = {s: _coder_turns(s) for s in (1, 2, 3)}
    order = [
        ("coder", 1, 0), ("coder", 2, 0), ("oneoff", 0, 0), ("coder", 1, 1),
        ("coder", 3, 0), ("oneoff", 1, 0), ("coder", 2, 1), ("coder", 1, 2),
        ("oneoff", 2, 0), ("coder", 3, 1), ("coder", 2, 2), ("coder", 3, 2),
    ]  # fmt: skip
    records = []
    for index, (kind, number, turn) in enumerate(order):
        if kind == "coder":
            body: dict[str, Any] = {
                "model": QWEN_MODEL,
                "messages": [{"role": "system", "content": CODER_SYSTEM}, *coder[number][turn]],
                "tools": TOOLS,
            }
            session = f"coder-{number}"
        else:
            document = long_text(100 + number, 60)
            body = {
                "model": QWEN_MODEL,
                "messages": [
                    {"role": "system", "content": f"Summarise document {number}:\n{document}"},
                    {"role": "user", "content": "Three bullet points, please."},
                ],
            }
            session = f"oneoff-{number}"
        records.append(
            {
                "timestamp": 1_800_000_000 + 10 * index,
                "session": session,
                "provider": "vllm",
                "model": QWEN_MODEL,
                "request_id": f"r{index:02d}",
                "request": body,
            }
        )
    return records


def vllm_hit_rule(prompts: list[list[int]], block_size: int) -> list[int]:
    """Expected per-request hits, by vLLM's documented rule with no eviction: the longest
    common prefix with any earlier prompt, in whole blocks, at most ``floor((len - 1) /
    block_size)`` blocks (the last prompt token is always recomputed)."""
    expected = []
    for index, prompt in enumerate(prompts):
        best = 0
        for earlier in prompts[:index]:
            common = 0
            for a, b in zip(prompt, earlier, strict=False):
                if a != b:
                    break
                common += 1
            best = max(best, common)
        cap = (len(prompt) - 1) // block_size * block_size
        expected.append(min(best // block_size * block_size, cap))
    return expected


# Chat requests whose engine-side prompt must equal cachecast's tokenization, each with what
# it exercises. The tools are written in the canonical key order; ``SERVER_ONLY_CHATS`` adds
# shapes the OpenAI server normalizes before the template sees them.
_CALL = {
    "id": "call-1",
    "type": "function",
    "function": {"name": "search_code", "arguments": '{"pattern": "def total", "glob": "*.py"}'},
}
AGREEMENT_CHATS: list[tuple[str, dict[str, Any]]] = [
    (
        "system-and-user",
        {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "hi"},
            ]
        },
    ),
    # No system message: Qwen2.5's template puts its default system prompt first.
    ("default-system", {"messages": [{"role": "user", "content": "What is 2 + 2?"}]}),
    (
        "tools-and-tool-calls",
        {
            "messages": [
                {"role": "system", "content": CODER_SYSTEM[:400]},
                {"role": "user", "content": "Where is total defined?"},
                {"role": "assistant", "content": None, "tool_calls": [_CALL]},
                {"role": "tool", "tool_call_id": "call-1", "content": "src/a.py:3"},
                {"role": "tool", "tool_call_id": "call-2", "content": "src/b.py:9"},
                {"role": "assistant", "content": "In src/a.py and src/b.py."},
                {"role": "user", "content": "Thanks. Now <tool_response> and <think> literally."},
            ],
            "tools": TOOLS,
        },
    ),
    (
        "content-parts-and-unicode",
        {
            "messages": [
                {
                    "role": "system",
                    "content": [
                        {"type": "text", "text": "Première partie."},
                        {"type": "text", "text": "Zweiter Teil: naïve café\u0301 中文 🙂"},
                    ],
                },
                {"role": "user", "content": "  spaces  and\ttabs\n\nand trailing newline\n"},
                {"role": "system", "content": "A later system message."},
                {"role": "user", "content": "1234567 digits"},
            ]
        },
    ),
]
SERVER_ONLY_CHATS: list[tuple[str, dict[str, Any]]] = [
    (
        "tools-normalized-by-the-server",
        {
            "messages": [
                {"role": "user", "content": "List the files."},
                {
                    "role": "assistant",
                    "content": "Calling.",
                    "tool_calls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": "not json"},
                        },
                        {
                            "id": "d",
                            "type": "function",
                            "function": {"name": "search_code", "arguments": ""},
                        },
                    ],
                },
                {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "x"}]},
            ],
            # Keys out of the canonical order, a tool without a description, an extra key:
            # the server re-dumps each tool as {type, function: {name, description,
            # parameters}} before the template renders it.
            "tools": [
                {"function": {"parameters": {"type": "object"}, "name": "ls"}, "type": "function"},
                {
                    "type": "function",
                    "function": {"name": "rm", "description": "Remove.", "x-extra": 1},
                },
            ],
        },
    ),
]
TEXT_PROMPTS = ["Once upon a time", "  leading spaces, <|im_end|> a special token, 中文\n"]
