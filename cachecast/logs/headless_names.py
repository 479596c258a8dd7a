"""The names of the headless output formats and of what one of their units covers, apart
from their parser (``logs.headless``): a command that only names them (``usage`` reading a
client's own logs) does not import the parser (docs/usage-report.md "Speed")."""

from __future__ import annotations

CLAUDE_STREAM = "claude-stream-json"
CLAUDE_RESULT = "claude-json"
CODEX_EXEC = "codex-exec"
HEADLESS_FORMATS = (CLAUDE_STREAM, CLAUDE_RESULT, CODEX_EXEC)
REQUEST, TURN, RUN = "request", "turn", "run"  # what one unit's usage covers
# What a turn and a run count, as reports describe them (usecases.usage, usecases.inspect).
TURN_MEANING = (
    "codex exec --json turns: each states its requests' usage summed (how many requests: not known)"
)
RUN_MEANING = (
    "claude -p --output-format json: one model's usage over a whole run (how many requests:"
    " not known)"
)
