"""Model geometry: how many bytes of KV a token costs, how big the weights are.

Everything here is exact rational arithmetic (:class:`fractions.Fraction`): int4 stores half
a byte per element, and a KV size must stay exact however many tokens it is multiplied by.

Formulas (derived, with their sources, in docs/economics.md):

* MHA/GQA: ``2 * layers * kv_heads * head_dim * bytes`` per token (K and V per KV head);
* MLA (DeepSeek-V2/V3): ``layers * (kv_lora_rank + qk_rope_head_dim) * bytes`` per token;
* sliding-window layers hold at most ``window`` tokens of KV per request;
* recurrent layers (Mamba, Gated DeltaNet) hold a fixed state per request, independent of
  its length; a hybrid model needs both terms.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from importlib import resources
from pathlib import Path, PurePath
from typing import Any

from cachecast.core.errors import BadInputError, Location
from cachecast.core.limits import check_count

# Bytes per element. int4 is half a byte: kept as a Fraction so that sizes stay exact.
DTYPE_BYTES: dict[str, Fraction] = {
    "fp32": Fraction(4),
    "bf16": Fraction(2),
    "fp16": Fraction(2),
    "fp8": Fraction(1),
    "int8": Fraction(1),
    "int4": Fraction(1, 2),
}
KV_DTYPES = ("bf16", "fp8", "int4")

# Hugging Face ``torch_dtype``/``dtype`` spellings mapped onto ours.
_HF_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float8_e4m3fn": "fp8"}


class GeometryError(BadInputError):
    """A model we cannot size: an unknown preset, a config missing a field, a bad dtype. Its
    location names the config file (if any) and the config field or option at fault."""

    title = "Invalid model"


@dataclass(frozen=True, slots=True)
class ConfigOrigin:
    """Where a ``config.json`` came from, for its errors: the file (None: inline in a
    request) and the path its fields sit under (``model.`` for a request's ``model`` field)."""

    source: str | None = None
    prefix: str = ""

    def error(self, key: str | None, message: str) -> GeometryError:
        return GeometryError(message, location=self.location(key))

    def location(self, key: str | None) -> Location:
        field = f"{self.prefix}{key}" if key else (self.prefix.rstrip(".") or None)
        return Location(source=self.source, field=field)

    def bounded(self, key: str, value: int) -> int:
        """``value`` of ``key`` within its geometry limit (docs/limits.md), checked before
        anything is sized by it: a config claiming a billion layers is refused at once."""
        name = _LIMIT_OF.get(key, "max_model_dimension")
        check_count(name, value, None, f"{key} of", location=self.location(key))
        return value


# Which limit bounds which config count (any other count is a width or size).
_LIMIT_OF = {
    "num_hidden_layers": "max_model_layers",
    "layer_types": "max_model_layers",
    "hybrid_override_pattern": "max_model_layers",
    "attn_layer_period": "max_model_layers",
    "attn_layer_offset": "max_model_layers",
    "full_attention_interval": "max_model_layers",
    "sliding_window_pattern": "max_model_layers",
    "num_attention_heads": "max_model_heads",
    "num_key_value_heads": "max_model_heads",
    "mamba_num_heads": "max_model_heads",
    "linear_num_value_heads": "max_model_heads",
    "linear_num_key_heads": "max_model_heads",
    "num_local_experts": "max_model_heads",
    "num_experts": "max_model_heads",
    "num_experts_per_tok": "max_model_heads",
    "n_groups": "max_model_heads",
}


def dtype_bytes(dtype: str, field: str | None = None) -> Fraction:
    """Bytes per element of ``dtype``; an unknown one is bad input naming ``field``."""
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        known = ", ".join(DTYPE_BYTES)
        raise GeometryError(
            f"unknown dtype {dtype!r}; known: {known}", location=Location(field=field)
        ) from None


@dataclass(frozen=True, slots=True)
class ModelGeometry:
    """The shape facts that capacity, timing and cost need; all counts are per model replica.

    ``kv_elements_per_token_per_layer`` is what one attention layer stores per token:
    ``2 * kv_heads * head_dim`` for MHA/GQA, ``kv_lora_rank + qk_rope_head_dim`` for MLA.
    ``attention_flops_dim`` is the per-head width that the attention FLOPs term uses: half of
    (QK width + V width), which is ``head_dim`` for ordinary attention and 160 for
    DeepSeek-V3's MLA in its prefill form (QK 192 = 128 + 64 rope, V 128).
    """

    name: str
    source: str
    attention_kind: str  # "mha", "gqa" or "mla"
    hidden_size: int
    num_layers: int
    full_attention_layers: int
    sliding_attention_layers: int
    recurrent_layers: int
    num_query_heads: int
    kv_elements_per_token_per_layer: int
    attention_flops_dim: Fraction
    sliding_window: int | None
    recurrent_state_elements_per_layer: int
    params_total: int
    params_active: int
    weight_dtype: str
    params_source: str

    @property
    def attention_layers(self) -> int:
        return self.full_attention_layers + self.sliding_attention_layers

    @property
    def is_hybrid(self) -> bool:
        return self.recurrent_layers > 0

    def kv_bytes_per_token(self, kv_dtype: str = "bf16") -> Fraction:
        """Bytes one token adds to the KV cache (every attention layer, before any window cap)."""
        return self.attention_layers * self.kv_elements_per_token_per_layer * dtype_bytes(kv_dtype)

    def kv_bytes_for_context(self, tokens: int, kv_dtype: str = "bf16") -> Fraction:
        """KV bytes one request of ``tokens`` tokens holds: sliding layers capped at the window."""
        if tokens < 0:
            raise GeometryError(
                f"context length must be >= 0, got {tokens}", location=Location(field="context")
            )
        per_layer = self.kv_elements_per_token_per_layer * dtype_bytes(kv_dtype)
        windowed = tokens if self.sliding_window is None else min(tokens, self.sliding_window)
        return per_layer * (
            self.full_attention_layers * tokens + self.sliding_attention_layers * windowed
        )

    def recurrent_state_bytes(self, state_dtype: str = "bf16") -> Fraction:
        """The fixed per-request state of all recurrent layers (0 for a pure transformer)."""
        return (
            self.recurrent_layers
            * self.recurrent_state_elements_per_layer
            * dtype_bytes(state_dtype)
        )

    def request_bytes(
        self, tokens: int, kv_dtype: str = "bf16", state_dtype: str = "bf16"
    ) -> Fraction:
        """Everything one request of ``tokens`` tokens keeps in device memory."""
        return self.kv_bytes_for_context(tokens, kv_dtype) + self.recurrent_state_bytes(state_dtype)

    def weight_bytes(self, weight_dtype: str | None = None) -> Fraction:
        """All parameters (every expert of a MoE) at ``weight_dtype`` (default: the model's)."""
        return self.params_total * dtype_bytes(weight_dtype or self.weight_dtype)


# --------------------------------------------------------------------------- config parsing


def _required(config: Mapping[str, Any], key: str, where: ConfigOrigin) -> int:
    value = config.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise where.error(key, f"must be a positive integer, got {value!r}")
    return where.bounded(key, value)


def _optional(config: Mapping[str, Any], key: str, where: ConfigOrigin, default: int) -> int:
    """A count the config may leave out (absent, null or 0: ``default``)."""
    value = config.get(key)
    if not value:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise where.error(key, f"must be a non-negative integer, got {value!r}")
    return where.bounded(key, value)


def _layer_kinds(config: Mapping[str, Any], num_layers: int, where: ConfigOrigin) -> list[str]:
    """One of "full", "sliding", "recurrent" or "none" (an MLP-only layer) per layer."""
    layer_types = config.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        where.bounded("layer_types", len(layer_types))
        mapping = {
            "full_attention": "full",
            "attention": "full",
            "sliding_attention": "sliding",
            "chunked_attention": "sliding",
            "linear_attention": "recurrent",
            "mamba": "recurrent",
            "mamba2": "recurrent",
            "recurrent": "recurrent",
        }
        kinds = []
        for index, kind in enumerate(layer_types):
            if kind not in mapping:
                raise where.error(f"layer_types[{index}]", f"{kind!r} is not understood")
            kinds.append(mapping[kind])
        return kinds
    pattern = config.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        # Nemotron-H: 'M' Mamba-2, '*' attention, '-' MLP only.
        symbols = {"M": "recurrent", "*": "full", "-": "none", "E": "none"}
        try:
            return [symbols[symbol] for symbol in pattern]
        except KeyError as error:
            raise where.error(
                "hybrid_override_pattern", f"symbol {error.args[0]!r} is not understood"
            ) from None
    if "attn_layer_period" in config:
        # Jamba: attention on layers i with i % period == offset, Mamba elsewhere.
        period = _required(config, "attn_layer_period", where)
        offset = _optional(config, "attn_layer_offset", where, 0)
        return ["full" if i % period == offset else "recurrent" for i in range(num_layers)]
    if "full_attention_interval" in config:
        # Qwen3-Next: every interval-th layer is full attention, the rest Gated DeltaNet.
        interval = _required(config, "full_attention_interval", where)
        return ["full" if (i + 1) % interval == 0 else "recurrent" for i in range(num_layers)]
    window = _optional(config, "sliding_window", where, 0)
    if window and config.get("use_sliding_window", True) is not False:
        pattern_every = config.get("sliding_window_pattern")
        if isinstance(pattern_every, int) and pattern_every > 1:
            # Gemma-3 style: every pattern-th layer global, the others local.
            return [
                "full" if (i + 1) % pattern_every == 0 else "sliding" for i in range(num_layers)
            ]
        if config.get("model_type") == "gemma2":
            return ["sliding" if i % 2 == 0 else "full" for i in range(num_layers)]
        return ["sliding"] * num_layers
    return ["full"] * num_layers


def _recurrent_state_elements(config: Mapping[str, Any], hidden: int, where: ConfigOrigin) -> int:
    """Elements of one recurrent layer's per-request state (SSM/recurrent plus conv state)."""
    if "mamba_d_state" in config and "mamba_num_heads" not in config:
        # Mamba-1 (Jamba): d_inner = expand * hidden; SSM state d_inner x d_state and a
        # causal-conv state of d_inner x (d_conv - 1).
        d_inner = _optional(config, "mamba_expand", where, 2) * hidden
        d_state = _required(config, "mamba_d_state", where)
        d_conv = _required(config, "mamba_d_conv", where)
        return d_inner * d_state + d_inner * (d_conv - 1)
    if "mamba_num_heads" in config:
        # Mamba-2 (Nemotron-H): heads x head_dim x d_state, conv over x, B and C.
        heads = _required(config, "mamba_num_heads", where)
        head_dim = _required(config, "mamba_head_dim", where)
        d_state = _required(config, "ssm_state_size", where)
        groups = _optional(config, "n_groups", where, 1)
        kernel = _required(config, "conv_kernel", where)
        d_inner = heads * head_dim
        return d_inner * d_state + (d_inner + 2 * groups * d_state) * (kernel - 1)
    if "linear_num_value_heads" in config:
        # Gated DeltaNet (Qwen3-Next): a value_heads x key_dim x value_dim matrix state and
        # a conv state over q, k and v.
        v_heads = _required(config, "linear_num_value_heads", where)
        k_heads = _required(config, "linear_num_key_heads", where)
        k_dim = _required(config, "linear_key_head_dim", where)
        v_dim = _required(config, "linear_value_head_dim", where)
        kernel = _required(config, "linear_conv_kernel_dim", where)
        return v_heads * k_dim * v_dim + (2 * k_heads * k_dim + v_heads * v_dim) * (kernel - 1)
    raise where.error(
        None, "recurrent layers present but no Mamba/Mamba-2/Gated DeltaNet state fields"
    )


def _dense_param_count(config: Mapping[str, Any], where: ConfigOrigin) -> int:
    """Parameters of a Llama-style decoder (GQA attention, gated MLP, RMSNorm), optionally MoE.

    Counted: embeddings (twice when untied), q/k/v/o projections (+ biases when
    ``attention_bias`` or Qwen2's q/k/v bias), the gated MLP (3 matrices) or every expert's
    MLP plus the router, two norms per layer and the final norm. Other architectures need an
    explicit parameter count.
    """
    hidden = _required(config, "hidden_size", where)
    layers = _required(config, "num_hidden_layers", where)
    heads = _required(config, "num_attention_heads", where)
    kv_heads = _optional(config, "num_key_value_heads", where, heads)
    head_dim = _optional(config, "head_dim", where, hidden // heads)
    vocab = _required(config, "vocab_size", where)
    intermediate = _required(config, "intermediate_size", where)
    qkv_bias = bool(config.get("attention_bias")) or config.get("model_type") == "qwen2"
    attention = hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    attention += heads * head_dim * hidden
    if qkv_bias:
        attention += heads * head_dim + 2 * kv_heads * head_dim
    experts = _optional(config, "num_local_experts", where, 0) or _optional(
        config, "num_experts", where, 0
    )
    if experts:
        expert_width = _optional(config, "moe_intermediate_size", where, intermediate)
        mlp = experts * 3 * hidden * expert_width + hidden * experts
    else:
        mlp = 3 * hidden * intermediate
    per_layer = attention + mlp + 2 * hidden
    embeddings = vocab * hidden * (1 if config.get("tie_word_embeddings") else 2)
    return layers * per_layer + embeddings + hidden


def _active_param_count(config: Mapping[str, Any], total: int, where: ConfigOrigin) -> int:
    experts = _optional(config, "num_local_experts", where, 0) or _optional(
        config, "num_experts", where, 0
    )
    if not experts:
        return total
    hidden = _required(config, "hidden_size", where)
    layers = _required(config, "num_hidden_layers", where)
    per_token = _required(config, "num_experts_per_tok", where)
    width = _optional(config, "moe_intermediate_size", where, 0) or _required(
        config, "intermediate_size", where
    )
    return total - layers * (experts - per_token) * 3 * hidden * width


def from_hf_config(
    config: Mapping[str, Any],
    *,
    name: str,
    source: str,
    params_total: int | None = None,
    params_active: int | None = None,
    params_source: str | None = None,
    weight_dtype: str | None = None,
    origin: ConfigOrigin | None = None,
) -> ModelGeometry:
    """Geometry from a Hugging Face ``config.json`` mapping.

    ``source`` says in reports where the config came from; ``origin`` locates its errors
    (default: the file ``source``). Parameter counts: given ones win; otherwise counted from
    the config for Llama-style dense and MoE decoders; MLA and hybrid architectures need
    them given (presets do).
    """
    where = origin or ConfigOrigin(source=source)
    if isinstance(config.get("text_config"), Mapping):
        # Multimodal wrappers (Gemma-3, Llama-4...) keep the language model here.
        outer_dtype = config.get("torch_dtype") or config.get("dtype")
        config = {"torch_dtype": outer_dtype, **config["text_config"]}
        where = replace(where, prefix=f"{where.prefix}text_config.")
    hidden = _required(config, "hidden_size", where)
    heads = _required(config, "num_attention_heads", where)
    pattern = config.get("hybrid_override_pattern")
    num_layers = (
        where.bounded("hybrid_override_pattern", len(pattern))
        if isinstance(pattern, str) and pattern
        else _required(config, "num_hidden_layers", where)
    )
    kinds = _layer_kinds(config, num_layers, where)
    if len(kinds) != num_layers:
        raise where.error(
            "layer_types", f"{len(kinds)} layer types for num_hidden_layers={num_layers}"
        )
    if config.get("kv_lora_rank"):
        kind = "mla"
        latent = _required(config, "kv_lora_rank", where)
        rope = _required(config, "qk_rope_head_dim", where)
        nope = _required(config, "qk_nope_head_dim", where)
        v_dim = _required(config, "v_head_dim", where)
        elements = latent + rope
        flops_dim = Fraction(nope + rope + v_dim, 2)
    else:
        kv_heads = _optional(config, "num_key_value_heads", where, heads)
        head_dim = _optional(config, "head_dim", where, hidden // heads)
        kind = "mha" if kv_heads == heads else "gqa"
        elements = 2 * kv_heads * head_dim
        flops_dim = Fraction(head_dim)
    recurrent = kinds.count("recurrent")
    state = _recurrent_state_elements(config, hidden, where) if recurrent else 0
    window = _optional(config, "sliding_window", where, 0) if "sliding" in kinds else None
    if params_total is None:
        if kind == "mla" or recurrent:
            raise GeometryError(
                "cannot count the parameters of this architecture from its config: give the"
                " parameter count (params; --params on the command line) or use a preset",
                location=Location(field="params"),
            )
        params_total = _dense_param_count(config, where)
        params_active = _active_param_count(config, params_total, where)
        params_source = "counted from config.json (Llama-style decoder formula)"
    hf_dtype = str(config.get("torch_dtype") or config.get("dtype") or "bfloat16")
    resolved_dtype = weight_dtype or _HF_DTYPES.get(hf_dtype, "bf16")
    dtype_bytes(resolved_dtype, "weight_dtype")
    return ModelGeometry(
        name=name,
        source=source,
        attention_kind=kind,
        hidden_size=hidden,
        num_layers=num_layers,
        full_attention_layers=kinds.count("full"),
        sliding_attention_layers=kinds.count("sliding"),
        recurrent_layers=recurrent,
        num_query_heads=heads,
        kv_elements_per_token_per_layer=elements,
        attention_flops_dim=flops_dim,
        sliding_window=int(window) if window else None,
        recurrent_state_elements_per_layer=state,
        params_total=params_total,
        params_active=params_active if params_active is not None else params_total,
        weight_dtype=resolved_dtype,
        params_source=params_source or "given",
    )


# --------------------------------------------------------------------------- presets


def _preset_table() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("model_presets.json").read_text("utf-8")
    table: dict[str, Any] = json.loads(text)["models"]
    return table


def preset_names() -> list[str]:
    return sorted(_preset_table())


def load_preset(
    name: str,
    *,
    params_total: int | None = None,
    params_active: int | None = None,
    weight_dtype: str | None = None,
    field: str = "model",
) -> ModelGeometry:
    """A preset by name (see :func:`preset_names`); an unknown name is bad input at
    ``field``."""
    presets = _preset_table()
    if name not in presets:
        raise GeometryError(
            f"unknown preset {name!r}; one of {', '.join(sorted(presets))}",
            location=Location(field=field),
        )
    entry = presets[name]
    return from_hf_config(
        entry["config"],
        name=name,
        source=f"preset {name}: {entry['source']}",
        params_total=params_total or entry.get("params_total"),
        params_active=params_active or entry.get("params_active"),
        params_source=entry.get("params_source") if params_total is None else None,
        weight_dtype=weight_dtype or entry.get("weight_dtype"),
    )


def display_path(path: Path) -> str:
    """How reports name a file the user gave: as given when relative, relative to the
    working directory when inside it, else its folder and name only (a report must not
    carry the machine's absolute paths)."""
    if not path.is_absolute():
        return str(path)
    here = Path.cwd()
    if path.is_relative_to(here):
        return str(path.relative_to(here))
    return str(PurePath(*path.parts[-2:]))


def model_name(config: Mapping[str, Any], fallback: str) -> str:
    """The name a config gives itself (``_name_or_path``); a saved checkpoint often records
    the absolute folder it was saved from there, of which only the last part is kept."""
    name = config.get("_name_or_path")
    if not isinstance(name, str) or not name.strip():
        return fallback
    if PurePath(name).is_absolute() or name.startswith(("~", ".")):
        return PurePath(name).name or fallback
    return name


def load_config_file(
    path: Path,
    *,
    params_total: int | None = None,
    params_active: int | None = None,
    weight_dtype: str | None = None,
) -> ModelGeometry:
    """A Hugging Face ``config.json`` file (or the folder holding one)."""
    if path.is_dir():
        path = path / "config.json"
    shown = display_path(path)
    if path.exists() and not path.is_file():
        raise GeometryError(
            "is not a regular file (a device, pipe or socket), not a config.json",
            location=Location(source=shown, field="model"),
        )
    if not path.is_file():
        raise GeometryError(
            f"{shown!r} is neither a preset ({', '.join(preset_names())}) nor a config.json"
            " file or its folder",
            location=Location(field="model"),
        )
    try:
        config = json.loads(path.read_bytes())
    except OSError as error:
        raise GeometryError(
            f"cannot read config.json: {error.strerror}", location=Location(source=shown)
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise GeometryError(
            f"config.json is not JSON: {error}", location=Location(source=shown)
        ) from None
    if not isinstance(config, dict):
        raise GeometryError("config.json must hold a JSON object", location=Location(source=shown))
    return from_hf_config(
        config,
        name=model_name(config, path.parent.name or path.name),
        source=f"config.json file {shown}",
        params_total=params_total,
        params_active=params_active,
        weight_dtype=weight_dtype,
        origin=ConfigOrigin(source=shown),
    )


def load_model(
    spec: str,
    *,
    params_total: int | None = None,
    params_active: int | None = None,
    weight_dtype: str | None = None,
) -> ModelGeometry:
    """A preset name (see :func:`preset_names`) or a path to a Hugging Face ``config.json``
    (or the directory holding one)."""
    if spec in _preset_table():
        return load_preset(
            spec, params_total=params_total, params_active=params_active, weight_dtype=weight_dtype
        )
    return load_config_file(
        Path(spec),
        params_total=params_total,
        params_active=params_active,
        weight_dtype=weight_dtype,
    )
