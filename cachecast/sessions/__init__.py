"""Agent sessions (Claude Code transcripts, Codex CLI rollouts): which client wrote the log,
how it caches (``profiles``), and what each request should have read and written, predicted
from what the log says before it (``predictor``), read straight off the session files without
a tokenizer (``reading``, the one reader that ``usage``, ``reconcile`` and ``inspect`` use;
``native`` reads the Claude Code and Codex files), judged and explained (``causes``);
``replay.predict_sessions`` is the entry point for reports. See docs/clients.md and
docs/predictions.md."""
