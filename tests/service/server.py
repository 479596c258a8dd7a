"""A real ``cachecast serve`` on 127.0.0.1 in a subprocess, with bounded waits."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Server:
    def __init__(
        self, database_url: str, log_path: Path, *, workers: int = 1, **settings: Any
    ) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        env = {key: value for key, value in os.environ.items() if not key.startswith("CACHECAST_")}
        env["CACHECAST_DATABASE_URL"] = database_url
        env.update({f"CACHECAST_{name.upper()}": str(value) for name, value in settings.items()})
        self.log_path = log_path
        self.log = log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cachecast",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--workers",
                str(workers),
                "--log-level",
                "warning",
            ],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: workers are stopped with it
        )

    def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"server exited with {self.process.returncode}:\n{self.output()}"
                )
            try:
                if httpx.get(f"{self.base_url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.stop()
        raise AssertionError(f"server not ready within {timeout} s:\n{self.output()}")

    def output(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-5000:]

    def kill(self) -> None:
        """SIGKILL the whole process group: a crash, nothing gets to clean up."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        self.log.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.log.close()
