"""Remote engine: an OpenAI-compatible vLLM server at a URL, driven with httpx.

Each request is a streaming ``/v1/completions`` call with a token-id prompt; TTFT is taken
when the first chunk carrying a choice arrives, the per-request hit from
``usage.prompt_tokens_details.cached_tokens`` (present only when the server runs with
``--enable-prompt-tokens-details``). Counters and cache geometry come from ``/metrics``.

In ``chat`` mode each request is instead sent as logged (messages and tools) to
``/v1/chat/completions``, so the server applies its own chat template, exactly as the
application's traffic would reach it; the prompt ids the server reports
(``return_token_ids``) must equal cachecast's tokenization, or the replay stops and says
where they differ (a measured hit is only comparable with the prediction for equal ids).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Iterable
from functools import partial
from typing import Any

import httpx

from cachecast.gpu_backend.backend import Progress, pacing_delay
from cachecast.gpu_backend.metrics import (
    cache_geometry,
    cache_label,
    parse_prometheus_text,
    snapshot_from_samples,
)
from cachecast.gpu_backend.types import (
    EngineError,
    EngineInfo,
    MetricsSnapshot,
    PromptMismatchError,
    ReplayOptions,
    ReplayRequest,
    RequestResult,
)

REMOTE_DEVICE = "unknown (remote server)"
# ``GET /server_info`` (vLLM's dev mode, as ``/reset_prefix_cache``) dumps the engine's config
# as text: ``... dtype=torch.bfloat16, ... device_config=cpu, ...``.
_CONFIG_ITEM = re.compile(r"(?:^|, )(dtype|device_config)=([^,]+)")
PROMPT_MODES = ("tokens", "chat")  # token-id prompts, or chat payloads the server templates


class HttpBackend:
    """A vLLM OpenAI-compatible server; ``model`` defaults to the one it serves."""

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        device: str = REMOTE_DEVICE,
        timeout_s: float = 600.0,
        prompt_mode: str = "tokens",
    ) -> None:
        if prompt_mode not in PROMPT_MODES:
            raise ValueError(f"prompt_mode must be one of {', '.join(PROMPT_MODES)}")
        self._prompt_mode = prompt_mode
        self._url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = httpx.Timeout(timeout_s, connect=10.0)
        self._device = device
        self._model = model
        # Set when the server cannot reset its cache: every later request is salted with it,
        # so nothing cached before the reset can be hit (isolation without a reset endpoint).
        self._salt_epoch: str | None = None

    def _get(self, path: str) -> httpx.Response:
        try:
            response = httpx.get(f"{self._url}{path}", headers=self._headers, timeout=30.0)
        except httpx.HTTPError as error:
            raise EngineError(f"GET {self._url}{path} failed: {error}") from error
        if response.status_code != 200:
            raise EngineError(
                f"GET {self._url}{path} returned {response.status_code}: {response.text[:200]}"
            )
        return response

    def _model_card(self) -> dict[str, Any]:
        models: list[dict[str, Any]] = self._get("/v1/models").json().get("data", [])
        if not models:
            raise EngineError(f"{self._url}/v1/models lists no model")
        if self._model is None:
            return models[0]
        for card in models:
            if card.get("id") == self._model:
                return card
        names = ", ".join(str(card.get("id")) for card in models)
        raise EngineError(f"{self._url} does not serve {self._model!r} (it serves {names})")

    def served_model(self) -> str:
        if self._model is None:
            self._model = str(self._model_card()["id"])
        return self._model

    def info(self) -> EngineInfo:
        samples = parse_prometheus_text(self._get("/metrics").text)
        block_size, num_blocks = cache_geometry(samples, f"{self._url}/metrics")
        version = str(self._get("/version").json().get("version", "unknown"))
        card = self._model_card()
        max_model_len = card.get("max_model_len")
        config = self._server_config()
        device = self._device
        if device == REMOTE_DEVICE and "device_config" in config:
            device = config["device_config"]
        return EngineInfo(
            kind="http",
            engine_version=version,
            model=str(card["id"]),
            device=device,
            block_size=block_size,
            num_blocks=num_blocks,
            endpoint=self._url,
            max_model_len=int(max_model_len) if max_model_len is not None else None,
            dtype=config.get("dtype"),
            kv_cache_dtype=cache_label(samples, "cache_dtype"),
        )

    def _server_config(self) -> dict[str, str]:
        """The weights' dtype and the device from ``/server_info``, where the server has it
        (dev mode); nothing otherwise (the passport then says the dtype is unknown)."""
        try:
            response = httpx.get(f"{self._url}/server_info", headers=self._headers, timeout=30.0)
        except httpx.HTTPError:
            return {}
        if response.status_code != 200:
            return {}
        try:
            text = str(response.json().get("vllm_config", ""))
        except (ValueError, AttributeError):
            return {}
        return {
            name: value.strip().removeprefix("torch.") for name, value in _CONFIG_ITEM.findall(text)
        }

    def reset_prefix_cache(self) -> str:
        url = f"{self._url}/reset_prefix_cache"
        try:
            response = httpx.post(url, headers=self._headers, timeout=60.0)
        except httpx.HTTPError as error:
            raise EngineError(f"POST {url} failed: {error}") from error
        if response.status_code == 200:
            self._salt_epoch = None
            return "reset"
        if response.status_code in (404, 405):
            # Only servers started with VLLM_SERVER_DEV_MODE=1 expose the endpoint.
            self._salt_epoch = uuid.uuid4().hex
            return "salt"
        raise EngineError(f"POST {url} returned {response.status_code}: {response.text[:200]}")

    def metrics(self) -> MetricsSnapshot:
        samples = parse_prometheus_text(self._get("/metrics").text)
        return snapshot_from_samples(samples, f"{self._url}/metrics")

    def run(
        self,
        requests: Iterable[ReplayRequest],
        options: ReplayOptions,
        progress: Progress | None = None,
    ) -> list[RequestResult]:
        return asyncio.run(self._run(requests, options, progress))

    def _salt(self, request: ReplayRequest) -> str | None:
        if self._salt_epoch is None:
            return request.cache_salt
        return f"{self._salt_epoch}:{request.cache_salt or ''}"

    async def _run(
        self,
        requests: Iterable[ReplayRequest],
        options: ReplayOptions,
        progress: Progress | None,
    ) -> list[RequestResult]:
        model = self.served_model()
        limit = asyncio.Semaphore(options.concurrency)
        limits = httpx.Limits(max_connections=max(options.concurrency, 1) + 1)
        results: dict[int, RequestResult] = {}
        failures: list[BaseException] = []
        running: set[asyncio.Task[RequestResult]] = set()

        def finished(index: int, task: asyncio.Task[RequestResult]) -> None:
            running.discard(task)
            limit.release()
            if task.cancelled():
                return
            failure = task.exception()
            if failure is not None:
                failures.append(failure)
                return
            results[index] = task.result()
            if progress is not None:
                progress(1)

        async with httpx.AsyncClient(
            headers=self._headers, timeout=self._timeout, limits=limits
        ) as client:
            start = time.perf_counter()
            sent = 0
            pending = iter(requests)
            try:
                # Submit in log order: a request is taken from the log once a slot is free
                # (only those in flight are held), then waits for its arrival time.
                while True:
                    await limit.acquire()
                    request = None if failures else next(pending, None)
                    if request is None:
                        limit.release()
                        break
                    wait = pacing_delay(request, options, time.perf_counter() - start)
                    if wait > 0:
                        await asyncio.sleep(wait)
                    task = asyncio.create_task(self._send(client, model, request, options))
                    task.add_done_callback(partial(finished, sent))
                    running.add(task)
                    sent += 1
                    del request  # the task holds it until it is answered
                    # Let the request reach the server before the next one is sent, so the
                    # arrival order at the engine is the log order.
                    await asyncio.sleep(0)
                while running and not failures:
                    await asyncio.wait(set(running), return_when=asyncio.FIRST_EXCEPTION)
            finally:
                # A failed request, or a request the log could not give: stop the others.
                for task in list(running):
                    task.cancel()
                if running:
                    await asyncio.wait(set(running))
            if failures:
                raise failures[0]
            return [results[index] for index in range(sent)]

    async def _send(
        self,
        client: httpx.AsyncClient,
        model: str,
        request: ReplayRequest,
        options: ReplayOptions,
    ) -> RequestResult:
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": options.max_tokens,
            "temperature": 0.0,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self._prompt_mode == "chat":
            if request.chat is None:
                raise EngineError(
                    f"request {request.request_id} (line {request.line}): no chat payload to"
                    " send (chat mode replays chat requests only)"
                )
            body.update(request.chat)
            body["return_token_ids"] = True  # the first chunk then carries the prompt's ids
            url = f"{self._url}/v1/chat/completions"
        else:
            body["prompt"] = list(request.prompt_token_ids)
            url = f"{self._url}/v1/completions"
        salt = self._salt(request)
        if salt is not None:
            body["cache_salt"] = salt
        first_token: float | None = None
        usage: dict[str, Any] | None = None
        server_prompt: list[int] | None = None
        submitted = time.perf_counter()
        try:
            async with client.stream("POST", url, json=body) as response:
                if response.status_code != 200:
                    text = (await response.aread()).decode(errors="replace")
                    raise EngineError(
                        f"request {request.request_id} (line {request.line}): POST {url}"
                        f" returned {response.status_code}: {text[:300]}"
                    )
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    payload = line[len("data:") :].strip()
                    if payload == "[DONE]":
                        break
                    chunk = json.loads(payload)
                    if first_token is None and chunk.get("choices"):
                        first_token = time.perf_counter()
                    if server_prompt is None and chunk.get("prompt_token_ids") is not None:
                        server_prompt = list(chunk["prompt_token_ids"])
                    if chunk.get("usage"):
                        usage = chunk["usage"]
        except httpx.HTTPError as error:
            raise EngineError(
                f"request {request.request_id} (line {request.line}): POST {url} failed: {error}"
            ) from error
        finished = time.perf_counter()
        if first_token is None or usage is None:
            raise EngineError(
                f"request {request.request_id} (line {request.line}): the stream ended without"
                " a token or without usage (stream_options.include_usage unsupported?)"
            )
        prompt_tokens = int(usage.get("prompt_tokens", -1))
        if self._prompt_mode == "chat":
            check_same_prompt(request, server_prompt)
        if prompt_tokens != len(request.prompt_token_ids):
            raise EngineError(
                f"request {request.request_id} (line {request.line}): the server counted"
                f" {prompt_tokens} prompt tokens for a {len(request.prompt_token_ids)}-token"
                " prompt; token-id prompts must reach the engine unchanged"
            )
        details = usage.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens")
        return RequestResult(
            request_id=request.request_id,
            line=request.line,
            prompt_tokens=prompt_tokens,
            cached_tokens=None if cached is None else int(cached),
            output_tokens=int(usage.get("completion_tokens", 0)),
            ttft_s=first_token - submitted,
            latency_s=finished - submitted,
        )


def check_same_prompt(request: ReplayRequest, server_prompt: list[int] | None) -> None:
    """Refuse a chat request whose server-side prompt ids differ from cachecast's."""
    ours = list(request.prompt_token_ids)
    where = f"request {request.request_id} (line {request.line})"
    if server_prompt is None:
        raise EngineError(
            f"{where}: the server did not report the prompt's token ids (return_token_ids"
            " is a vLLM extension; an older server cannot be checked in chat mode)"
        )
    if server_prompt == ours:
        return
    position = next(
        (i for i, (a, b) in enumerate(zip(server_prompt, ours, strict=False)) if a != b),
        min(len(server_prompt), len(ours)),
    )
    server_id = server_prompt[position] if position < len(server_prompt) else None
    our_id = ours[position] if position < len(ours) else None
    raise PromptMismatchError(
        f"{where}: the server's chat template gives a different prompt than cachecast's"
        f" tokenization: {len(server_prompt)} against {len(ours)} tokens, first difference"
        f" at token {position} (server {_shown(server_id)}, cachecast {_shown(our_id)});"
        " measured hits would not be comparable with the prediction",
        request_id=request.request_id,
        line=request.line,
        position=position,
        engine_token=server_id,
        our_token=our_id,
    )


def _shown(token: int | None) -> str:
    return "(end)" if token is None else str(token)
