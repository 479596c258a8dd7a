"""How much KV fits on a deployment, and how many requests run at once.

Memory model (vLLM's): the engine may use ``gpu_memory_utilization`` of each GPU's memory
(default 0.9; vLLM 0.32's own default is 0.92, docs/economics.md); the weights come out of
that first; what is left holds the KV cache in blocks of ``block_size`` tokens. vLLM also
takes the peak activation memory of a profiling forward pass and the CUDA graphs out of the
same budget; those depend on ``max_num_batched_tokens`` and the kernels, so they are not
modelled here: the KV figures below are an upper bound, about a few GB per GPU too high.
``reserve_bytes_per_gpu`` lets a user take a measured amount off.

Blocks are sized at every attention layer's per-token KV (``kv_bytes_per_token``), so for a
sliding-window model ``num_blocks`` counts tokens as if no window applied (what a prefix
cache can hold); the window cap enters the per-request footprint and so the concurrency.

With ``gpus`` > 1 the model is tensor-parallel: weights and KV are split evenly, so the pool
is the sum over GPUs (replicated embeddings and the per-GPU activation memory are ignored).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from cachecast.core.errors import BadInputError, Location
from cachecast.economics.geometry import ModelGeometry, dtype_bytes
from cachecast.economics.hardware import Accelerator

# vLLM's long-standing --gpu-memory-utilization default; vLLM 0.32 defaults to 0.92.
DEFAULT_GPU_MEMORY_UTILIZATION = Fraction(9, 10)
DEFAULT_BLOCK_SIZE = 16  # vLLM's default KV block size (tokens)
# vLLM 0.32's --max-num-seqs default on GPUs under 70 GB and on A100; on H100, H200, B200
# (70 GB and more) it is 1024 (docs/economics.md).
DEFAULT_MAX_NUM_SEQS = 256


@dataclass(frozen=True, slots=True)
class Deployment:
    """One engine replica: a model on ``gpus`` accelerators of one kind."""

    model: ModelGeometry
    accelerator: Accelerator
    gpus: int = 1
    kv_dtype: str = "bf16"
    weight_dtype: str | None = None  # None: the model's own (e.g. fp8 for DeepSeek-V3)
    state_dtype: str = "bf16"  # recurrent state of hybrid layers
    gpu_memory_utilization: Fraction = DEFAULT_GPU_MEMORY_UTILIZATION
    reserve_bytes_per_gpu: int = 0
    block_size: int = DEFAULT_BLOCK_SIZE

    def __post_init__(self) -> None:
        if self.gpus < 1:
            raise BadInputError(f"must be >= 1, got {self.gpus}", location=Location(field="gpus"))
        if not 0 < self.gpu_memory_utilization <= 1:
            raise BadInputError(
                f"must be in (0, 1], got {float(self.gpu_memory_utilization)}",
                location=Location(field="gpu_memory_utilization"),
            )
        if self.block_size < 1:
            raise BadInputError(
                f"must be >= 1, got {self.block_size}", location=Location(field="block_size")
            )
        if self.reserve_bytes_per_gpu < 0:
            raise BadInputError(
                f"must be >= 0, got {self.reserve_bytes_per_gpu}",
                location=Location(field="reserve_bytes_per_gpu"),
            )
        dtype_bytes(self.kv_dtype, "kv_dtype")
        dtype_bytes(self.state_dtype, "state_dtype")
        if self.weight_dtype is not None:
            dtype_bytes(self.weight_dtype, "weight_dtype")

    @property
    def weight_bytes(self) -> Fraction:
        return self.model.weight_bytes(self.weight_dtype)

    @property
    def kv_bytes_per_token(self) -> Fraction:
        return self.model.kv_bytes_per_token(self.kv_dtype)

    @property
    def memory_bandwidth(self) -> int:
        return self.gpus * self.accelerator.memory_bandwidth_bytes_s

    @property
    def peak_flops(self) -> Fraction:
        return self.gpus * self.accelerator.bf16_dense_flops

    def request_bytes(self, tokens: int) -> Fraction:
        return self.model.request_bytes(tokens, self.kv_dtype, self.state_dtype)


@dataclass(frozen=True, slots=True)
class Capacity:
    """KV capacity of a deployment, and concurrency at one context length."""

    usable_bytes: int
    weight_bytes: Fraction
    kv_budget_bytes: Fraction  # negative when the weights do not fit
    kv_bytes_per_token: Fraction
    block_bytes: Fraction
    num_blocks: int
    kv_capacity_tokens: int
    context_tokens: int
    request_bytes: Fraction
    max_concurrent_requests: int
    fits: bool
    error: str | None


def kv_capacity(deployment: Deployment, context_tokens: int) -> Capacity:
    """KV blocks after weights and reserve; requests of ``context_tokens`` that fit at once.

    ``num_blocks = floor(kv_budget / (block_size * kv_bytes_per_token))``; a request of N
    tokens holds its window-capped KV plus any recurrent state, so
    ``max_concurrent = floor(kv_budget / request_bytes(N))``. A model whose weights exceed the
    usable memory gets ``fits=False``, zero capacity and an error saying by how much.
    """
    if context_tokens < 1:
        raise BadInputError(
            f"a context must be >= 1 token, got {context_tokens}",
            location=Location(field="context"),
        )
    accelerator = deployment.accelerator
    per_gpu = accelerator.memory_bytes * deployment.gpu_memory_utilization
    usable = int(deployment.gpus * (per_gpu - deployment.reserve_bytes_per_gpu))
    weights = deployment.weight_bytes
    budget = usable - weights
    per_token = deployment.kv_bytes_per_token
    block_bytes = per_token * deployment.block_size
    request = deployment.request_bytes(context_tokens)
    error: str | None = None
    if budget <= 0:
        shortfall = -budget
        error = (
            f"{deployment.model.name} does not fit: weights need {float(weights) / 1e9:.1f} GB"
            f" but {deployment.gpus} x {accelerator.label} give {usable / 1e9:.1f} GB usable"
            f" (gpu_memory_utilization {float(deployment.gpu_memory_utilization)}); short by"
            f" {float(shortfall) / 1e9:.1f} GB. Use more GPUs (--gpus), a smaller weight dtype,"
            " or a larger accelerator."
        )
        return Capacity(
            usable,
            weights,
            budget,
            per_token,
            block_bytes,
            0,
            0,
            context_tokens,
            request,
            0,
            False,
            error,
        )
    num_blocks = int(budget // block_bytes) if block_bytes else 0
    concurrent = int(budget // request) if request else 0
    if concurrent == 0:
        error = (
            f"one request of {context_tokens} tokens needs {float(request) / 1e9:.2f} GB of KV"
            f" but only {float(budget) / 1e9:.2f} GB are left after the weights"
        )
    return Capacity(
        usable_bytes=usable,
        weight_bytes=weights,
        kv_budget_bytes=budget,
        kv_bytes_per_token=per_token,
        block_bytes=block_bytes,
        num_blocks=num_blocks,
        kv_capacity_tokens=num_blocks * deployment.block_size,
        context_tokens=context_tokens,
        request_bytes=request,
        max_concurrent_requests=concurrent,
        fits=True,
        error=error,
    )
