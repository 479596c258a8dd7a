"""Prompt-layout regression checks and prefix-friendly reordering suggestions."""
