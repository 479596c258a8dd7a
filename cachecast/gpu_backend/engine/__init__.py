"""Replays on a real vLLM engine: in-process and over HTTP."""
