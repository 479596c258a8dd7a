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


def environment(database_url: str, settings: dict[str, Any]) -> dict[str, str]:
    """This environment without CACHECAST_* variables, plus the database and ``settings``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("CACHECAST_")}
    env["CACHECAST_DATABASE_URL"] = database_url
    env.update({f"CACHECAST_{name.upper()}": str(value) for name, value in settings.items()})
    return env


class Process:
    """A ``cachecast`` subprocess in its own process group, its output in ``log_path``."""

    def __init__(self, arguments: list[str], env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        self.log = log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cachecast", *arguments],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: workers are stopped with it
        )

    def output(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text(errors="replace")[-5000:]

    def stop(self) -> int:
        """SIGTERM, as a service manager stops it (SIGKILL after 20 s); its exit status."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.log.close()
        return self.process.returncode


class Worker(Process):
    """A real ``cachecast worker`` process claiming jobs from the same database."""

    def __init__(self, database_url: str, log_path: Path, **settings: Any) -> None:
        super().__init__(
            ["worker", "--threads", "1"], environment(database_url, settings), log_path
        )


class Server(Process):
    def __init__(
        self, database_url: str, log_path: Path, *, workers: int = 1, **settings: Any
    ) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        arguments = ["serve", "--host", "127.0.0.1", "--port", str(self.port)]
        arguments += ["--workers", str(workers), "--log-level", "warning"]
        super().__init__(arguments, environment(database_url, settings), log_path)

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

    def kill(self) -> None:
        """SIGKILL the whole process group: a crash, nothing gets to clean up."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        self.log.close()


def poll_job(
    base_url: str, job_id: str, until: Any, token: str, timeout: float = 60.0
) -> dict[str, Any]:
    """GET the job (as its owner, ``token``) until ``until(job)``; a bounded wait, never a
    hang."""
    deadline = time.monotonic() + timeout
    headers = {"X-Job-Token": token}
    while True:
        job: dict[str, Any] = httpx.get(
            f"{base_url}/v1/jobs/{job_id}", headers=headers, timeout=30
        ).json()
        if until(job):
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} never reached the state wanted: {job}")
        time.sleep(0.05)
