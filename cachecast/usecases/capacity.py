"""``capacity``: how much KV one self-hosted deployment holds, and its roofline ceilings.

A deployment is a model (a preset, a Hugging Face ``config.json`` file, or a config object
given inline) on ``gpus`` accelerators of one kind; :class:`DeploymentRequest` names one and
:func:`resolve_deployment` turns it into :class:`~cachecast.economics.capacity.Deployment`,
checking every field first (an unknown preset, accelerator or dtype is bad input naming the
field). ``compare`` and ``fleet`` take the same fields.

The report gives KV bytes per token, the KV capacity after weights, how many requests of
``context`` tokens fit at once, the decode ceiling at ``batch``, B* and the prefill time of
``context - cached`` new tokens after ``cached`` cached ones. The formulas and their sources
are in docs/economics.md. A model that does not fit is a report with ``fits: false`` and the
shortfall in ``error`` (:func:`require_fit` turns it into an error).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import BeforeValidator, Field, model_validator

from cachecast.core.errors import BadInputError, Location
from cachecast.economics.capacity import DEFAULT_BLOCK_SIZE, Capacity, Deployment, kv_capacity
from cachecast.economics.geometry import (
    KV_DTYPES,
    ConfigOrigin,
    GeometryError,
    ModelGeometry,
    dtype_bytes,
    from_hf_config,
    load_config_file,
    load_preset,
    model_name,
    preset_names,
)
from cachecast.economics.hardware import get_accelerator
from cachecast.economics.timing import (
    PrefillTime,
    b_star,
    decode_ceiling,
    decode_step_seconds,
    prefill_time,
)
from cachecast.usecases.reports import Report
from cachecast.usecases.requests import Request


def exact_number(value: Fraction) -> int | float:
    """An int when whole; otherwise a float. Our denominators are powers of two (from int4's
    half byte) or come from ratios already reported as approximations, so a binary float
    represents the byte counts exactly."""
    if value.denominator == 1:
        return int(value)
    return float(value)


def _exact_if_fraction(value: Any) -> Any:
    return exact_number(value) if isinstance(value, Fraction) else value


# An int when whole, else a binary fraction (int4: half a byte); a Fraction is converted.
ExactNumber = Annotated[int | float, BeforeValidator(_exact_if_fraction)]


class DoesNotFitError(BadInputError):
    """The model's weights (or one request's KV) do not fit on the deployment."""

    title = "Model does not fit"


# ---------------------------------------------------------------------------------------------
# Naming a deployment


class ModelReference(Request):
    """The self-hosted model: exactly one of a preset name, a ``config.json`` file (or the
    folder holding one; the command line only: a server never reads its own files for a
    client) and a config object given inline."""

    preset: str | None = Field(default=None, examples=["llama-3.3-70b"])
    config_file: Path | None = None
    config: dict[str, Any] | None = Field(
        default=None, description="a Hugging Face config.json object"
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> ModelReference:
        given = [self.preset is not None, self.config_file is not None, self.config is not None]
        if sum(given) != 1:
            raise ValueError("give exactly one of preset, config_file and config")
        return self

    @classmethod
    def of_text(cls, text: str) -> ModelReference:
        """A command line's ``--model``: a preset name, else a path."""
        if text in preset_names():
            return cls(preset=text)
        return cls(config_file=Path(text))


class DeploymentRequest(Request):
    """One engine replica: a model on ``gpus`` accelerators of one kind."""

    model: ModelReference
    params: int | None = Field(
        default=None, description="total parameter count, where the config cannot give it"
    )
    gpu: str = Field(examples=["h100-sxm"])
    gpus: int = Field(default=1, description="GPUs per replica (tensor parallel)")
    kv_dtype: str = Field(default="bf16", description="bf16, fp8 or int4")
    weight_dtype: str | None = Field(default=None, description="default: the model's own")
    gpu_memory_utilization: float = Field(
        default=0.9,
        description="share of GPU memory the engine may use (vLLM 0.32's own default: 0.92)",
    )
    block_size: int | None = Field(
        default=None, description="KV block in tokens (default 16, or a block-key trace's own)"
    )


def load_geometry(request: DeploymentRequest) -> ModelGeometry:
    """The model's geometry; errors name ``model`` (or the config file and its field)."""
    reference = request.model
    options: dict[str, Any] = {
        "params_total": request.params,
        "weight_dtype": request.weight_dtype,
    }
    if request.params is not None and request.params < 1:
        raise GeometryError(
            f"must be >= 1, got {request.params}", location=Location(field="params")
        )
    if request.weight_dtype is not None:
        dtype_bytes(request.weight_dtype, "weight_dtype")
    if reference.preset is not None:
        return load_preset(reference.preset, **options)
    if reference.config_file is not None:
        return load_config_file(reference.config_file, **options)
    assert reference.config is not None
    return from_hf_config(
        reference.config,
        name=model_name(reference.config, "config.json"),
        source="config.json in the request",
        origin=ConfigOrigin(prefix="model."),
        **options,
    )


def resolve_deployment(request: DeploymentRequest) -> Deployment:
    """The deployment the request names, every field checked (the block size: the request's,
    else vLLM's default; ``compare`` and ``fleet`` replace it by a trace's own)."""
    if request.kv_dtype not in KV_DTYPES:
        raise GeometryError(
            f"{request.kv_dtype!r}: choose one of {', '.join(KV_DTYPES)}",
            location=Location(field="kv_dtype"),
        )
    geometry = load_geometry(request)
    accelerator = get_accelerator(request.gpu)
    return Deployment(
        model=geometry,
        accelerator=accelerator,
        gpus=request.gpus,
        kv_dtype=request.kv_dtype,
        weight_dtype=request.weight_dtype,
        gpu_memory_utilization=Fraction(str(request.gpu_memory_utilization)),
        block_size=request.block_size or DEFAULT_BLOCK_SIZE,
    )


# ---------------------------------------------------------------------------------------------
# Report parts shared with compare and fleet


class ModelFacts(Report):
    """The shape facts of the model that capacity, timing and cost use."""

    name: str
    source: str
    attention_kind: str
    num_layers: int
    full_attention_layers: int
    sliding_attention_layers: int
    recurrent_layers: int
    sliding_window: int | None
    num_query_heads: int
    kv_elements_per_token_per_layer: int
    attention_flops_dim: ExactNumber
    recurrent_state_elements_per_layer: int
    params_total: int
    params_active: int
    params_source: str
    weight_dtype: str


class AcceleratorFacts(Report):
    """One accelerator's row of the dated hardware table, with its source."""

    name: str
    label: str
    vendor: str
    memory_bytes: int
    memory_bandwidth_bytes_s: int
    bf16_dense_flops: float
    host_link_bytes_s: int
    host_link: str
    source: str
    checked_on: str
    check: str


class DeploymentFacts(Report):
    """The deployment as sized: model, accelerator and engine settings."""

    model: ModelFacts
    accelerator: AcceleratorFacts
    gpus: int
    kv_dtype: str
    weight_dtype: str
    state_dtype: str
    gpu_memory_utilization: float
    reserve_bytes_per_gpu: int
    block_size: int

    @classmethod
    def of(cls, deployment: Deployment, **values: Any) -> Self:
        """The deployment's facts, and ``values`` for a report that adds its own fields."""
        weight_dtype = deployment.weight_dtype or deployment.model.weight_dtype
        return cls.read(deployment, weight_dtype=weight_dtype, **values)


class CapacityFacts(Report):
    """KV capacity of a deployment, and concurrency at one context length."""

    fits: bool
    error: str | None
    usable_bytes: int
    weight_bytes: ExactNumber
    kv_budget_bytes: ExactNumber = Field(description="0 when the weights do not fit")
    kv_bytes_per_token: ExactNumber
    block_bytes: ExactNumber
    num_blocks: int
    kv_capacity_tokens: int
    context_tokens: int
    request_bytes: ExactNumber
    max_concurrent_requests: int

    @classmethod
    def of(cls, kv: Capacity, **values: Any) -> Self:
        """The capacity's facts, and ``values`` for a report that adds its own fields."""
        return cls.read(kv, kv_budget_bytes=max(kv.kv_budget_bytes, Fraction(0)), **values)


# ---------------------------------------------------------------------------------------------
# The use case


class CapacityRequest(DeploymentRequest):
    """Size one deployment, and time one request of ``context`` tokens on it."""

    context: int = Field(default=8192, description="tokens per request (prompt + output)")
    batch: int | None = Field(default=None, description="decode batch (default: as many as fit)")
    cached: int = Field(default=0, description="cached prefix tokens of the prefill")


class CapacityInputs(DeploymentFacts):
    context_tokens: int
    batch: int | None
    cached_tokens: int


class PrefillFacts(Report):
    """Roofline time of one prefill: FLOPs against peak, bytes against bandwidth."""

    flops: float
    bytes_moved: float
    compute_ms: float
    memory_ms: float
    prefill_ms: float
    bound: str

    @classmethod
    def of(cls, prefill: PrefillTime) -> PrefillFacts:
        return cls.read(
            prefill,
            compute_ms=float(prefill.compute_seconds * 1000),
            memory_ms=float(prefill.memory_seconds * 1000),
            prefill_ms=float(prefill.seconds * 1000),
        )


class Formulas(Report):
    """The formulas behind the figures; docs/economics.md derives them and gives sources."""

    source: str = (
        "docs/economics.md (derivations and sources); code in"
        " cachecast/economics/{geometry,capacity,timing}.py"
    )
    kv_bytes_per_token: str = (
        "MHA/GQA 2*layers*kv_heads*head_dim*bytes; MLA layers*(kv_lora_rank+qk_rope_head_dim)*bytes"
    )
    kv_capacity: str = (
        "floor((gpus*memory*gpu_memory_utilization - weights)"
        " / (block_size*kv_bytes_per_token)) blocks"
    )
    decode_ceiling: str = "Q(B,N) = B*BW/(W + B*kv(N))"
    b_star: str = "B* = W/kv(N)"
    prefill: str = "max(FLOPs/peak, bytes/BW), FLOPs = 2*P*S + 2*L*H_q*d_h*((C+S)(C+S+1) - C(C+1))"


class CapacityReport(CapacityFacts):
    """What ``capacity`` answers (with ``fits: false`` the ceilings are null)."""

    inputs: CapacityInputs
    recurrent_state_bytes_per_request: ExactNumber
    decode_batch: int | None
    decode_ceiling_tokens_per_s: float | None
    decode_step_ms: float | None
    b_star: float | None
    prefill_ms: float | None
    prefill: PrefillFacts | None
    formulas: Formulas = Field(default_factory=Formulas)


def capacity(request: CapacityRequest) -> CapacityReport:
    """Size the deployment and time one request on it; see the module docstring."""
    context, batch, cached = request.context, request.batch, request.cached
    if context < 1:
        raise BadInputError(
            f"must be >= 1 token, got {context}", location=Location(field="context")
        )
    if batch is not None and batch < 1:
        raise BadInputError(f"must be >= 1, got {batch}", location=Location(field="batch"))
    if not 0 <= cached < context:
        raise BadInputError(
            f"must be in [0, context) = [0, {context}), got {cached}",
            location=Location(field="cached"),
        )
    deployment = resolve_deployment(request)
    kv = kv_capacity(deployment, context)
    fixed: dict[str, Any] = {
        "inputs": CapacityInputs.of(
            deployment, context_tokens=context, batch=batch, cached_tokens=cached
        ),
        "recurrent_state_bytes_per_request": deployment.model.recurrent_state_bytes(
            deployment.state_dtype
        ),
    }
    if not kv.fits:
        return CapacityReport.of(
            kv,
            **fixed,
            decode_batch=None,
            decode_ceiling_tokens_per_s=None,
            decode_step_ms=None,
            b_star=None,
            prefill_ms=None,
            prefill=None,
        )
    decode_batch = batch if batch is not None else max(1, kv.max_concurrent_requests)
    prefill = prefill_time(deployment, cached, context - cached)
    return CapacityReport.of(
        kv,
        **fixed,
        decode_batch=decode_batch,
        decode_ceiling_tokens_per_s=float(decode_ceiling(deployment, decode_batch, context)),
        decode_step_ms=float(decode_step_seconds(deployment, decode_batch, context) * 1000),
        b_star=(
            float(b_star(deployment, context)) if deployment.request_bytes(context) > 0 else None
        ),
        prefill_ms=float(prefill.seconds * 1000),
        prefill=PrefillFacts.of(prefill),
    )


def require_fit(report: CapacityFacts) -> None:
    """Raise :class:`DoesNotFitError` for a report whose model does not fit."""
    if not report.fits:
        raise DoesNotFitError(report.error or "the model does not fit")
