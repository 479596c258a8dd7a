"""Service settings: ``CACHECAST_*`` environment variables, then an optional TOML file.

Precedence (first wins): values passed in code, environment variables, the TOML file named
by ``CACHECAST_SETTINGS_FILE``, the defaults below. Example file::

    database_url = "postgresql+psycopg://cachecast:secret@db.internal/cachecast"
    admin_keys = ["a-long-random-key"]
    max_body_bytes = 10_000_000
    job_threshold_records = 2000
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from cachecast.core import db
from cachecast.core.errors import ConfigurationError, Location
from cachecast.core.limits import LIMIT_NAMES, SERVICE_LIMITS, Limits

ENV_PREFIX = "CACHECAST_"
SETTINGS_FILE_ENV = "CACHECAST_SETTINGS_FILE"


class ServiceSettings(BaseSettings):
    """Everything the service reads from its environment; see the module docstring."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL; unset means cachecast's default SQLite file "
        "(see cachecast.core.db.resolve_database_url). PostgreSQL: postgresql+psycopg://...",
    )
    admin_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list,
        description="bearer keys allowed to change contracts; none configured disables writes."
        " In the environment: comma-separated.",
    )
    max_body_bytes: int = Field(default=50_000_000, gt=0, description="larger bodies get 413")
    job_threshold_records: int = Field(
        default=1000,
        gt=0,
        description="an estimate over more records than this runs as a background job",
    )
    workers: int = Field(default=1, gt=0, description="uvicorn worker processes for serve")
    job_runners: int = Field(
        default=1, ge=0, description="job-running threads per worker process (0: run none)"
    )
    job_poll_seconds: float = Field(default=0.5, gt=0, description="idle wait between claims")
    job_shutdown_grace_seconds: float = Field(
        default=10.0,
        ge=0,
        description="on shutdown, how long running jobs may finish before they are failed",
    )
    ray_address: str | None = Field(
        default=None,
        description="run jobs on the Ray cluster at this address (host:port or ray://...)"
        " instead of in the process that claimed them",
    )
    job_lease_seconds: float = Field(
        default=60.0,
        gt=0,
        description="a running job whose heartbeat is older than this is taken as crashed",
    )
    job_queue_limit: int = Field(
        default=100,
        gt=0,
        description="jobs queued or running at most; a submit beyond answers 429 (Retry-After)",
    )
    max_concurrent_requests: int = Field(
        default=8,
        gt=0,
        description="heavy requests (estimates, inspections, ...) running at once per worker"
        " process; one more answers 503 with Retry-After at once",
    )
    request_workers: int = Field(
        default=2,
        gt=0,
        le=64,
        description="work processes per API process running heavy requests' log work"
        " (service.isolation); a request waits for a free one",
    )
    request_memory_mb: int = Field(
        default=1024,
        ge=256,
        description="address space of each work process and job run (RLIMIT_AS), in MiB;"
        " a request that needs more answers 413 memory-budget",
    )
    request_deadline_seconds: float = Field(
        default=6.0,
        gt=0,
        description="a heavy request's log work (all of it: an upload's reading and its use"
        " case share it; waiting for a work process included) is stopped after this long and"
        " answers 408 deadline-exceeded; 6 s keeps every heavy answer within 10 s",
    )
    busy_retry_after_seconds: int = Field(
        default=5, gt=0, description="the Retry-After of a 503 for all heavy slots taken"
    )
    job_retry_after_seconds: int = Field(
        default=30, gt=0, description="the Retry-After of a 429 for a full job queue"
    )
    job_retention_seconds: float = Field(
        default=7 * 24 * 3600.0,
        gt=0,
        description="a finished job (done or failed) is deleted this long after it finished",
    )
    job_retention_bytes: int = Field(
        default=1_000_000_000,
        gt=0,
        description="finished jobs' stored results and errors together at most; the oldest go",
    )
    job_sweep_seconds: float = Field(
        default=60.0, gt=0, description="how often finished jobs are swept (retention)"
    )
    # The bounds of cachecast.core.limits, at the service's own lower defaults (SERVICE_LIMITS;
    # docs/limits.md gives each default and its reason).
    max_request_tokens: int = Field(default=SERVICE_LIMITS.max_request_tokens, gt=0)
    max_log_tokens: int = Field(default=SERVICE_LIMITS.max_log_tokens, gt=0)
    max_log_records: int = Field(default=SERVICE_LIMITS.max_log_records, gt=0)
    max_template_output_chars: int = Field(default=SERVICE_LIMITS.max_template_output_chars, gt=0)
    max_template_render_seconds: float = Field(
        default=SERVICE_LIMITS.max_template_render_seconds, gt=0
    )
    max_model_layers: int = Field(default=SERVICE_LIMITS.max_model_layers, gt=0)
    max_model_heads: int = Field(default=SERVICE_LIMITS.max_model_heads, gt=0)
    max_model_dimension: int = Field(default=SERVICE_LIMITS.max_model_dimension, gt=0)
    max_yaml_nodes: int = Field(default=SERVICE_LIMITS.max_yaml_nodes, gt=0)
    max_yaml_chars: int = Field(default=SERVICE_LIMITS.max_yaml_chars, gt=0)
    max_decompressed_bytes: int = Field(default=SERVICE_LIMITS.max_decompressed_bytes, gt=0)
    max_log_bytes: int = Field(default=SERVICE_LIMITS.max_log_bytes, gt=0)
    max_line_bytes: int = Field(default=SERVICE_LIMITS.max_line_bytes, gt=0)
    max_document_bytes: int = Field(default=SERVICE_LIMITS.max_document_bytes, gt=0)
    max_record_chars: int = Field(default=SERVICE_LIMITS.max_record_chars, gt=0)

    @field_validator("admin_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [key.strip() for key in value.split(",") if key.strip()]
        return value

    @field_validator("admin_keys")
    @classmethod
    def _reject_short_keys(cls, keys: list[SecretStr]) -> list[SecretStr]:
        # A short key is guessable no matter how carefully it is compared.
        for key in keys:
            if len(key.get_secret_value()) < 16:
                raise ValueError("every admin key must have at least 16 characters")
        return keys

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path = settings_file()
        if path is not None:
            if not path.is_file():
                raise ConfigurationError(
                    f"names {path}, which is not a file", location=Location(field=SETTINGS_FILE_ENV)
                )
            try:
                sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
            except tomllib.TOMLDecodeError as error:
                raise ConfigurationError(
                    f"not TOML: {error}", location=Location(source=str(path))
                ) from None
        return tuple(sources)

    @property
    def resolved_database_url(self) -> str:
        return db.resolve_database_url(self.database_url, origin=setting_origin("database_url"))

    @property
    def writes_enabled(self) -> bool:
        return bool(self.admin_keys)

    @property
    def limits(self) -> Limits:
        """The bounds every request and job of this service runs under."""
        return Limits(**{name: getattr(self, name) for name in LIMIT_NAMES})


def settings_file() -> Path | None:
    """The TOML file ``CACHECAST_SETTINGS_FILE`` names, if any."""
    named = os.environ.get(SETTINGS_FILE_ENV)
    return Path(named) if named else None


def setting_origin(name: str) -> str:
    """Where the setting ``name`` was read from, as a user would look for it: its environment
    variable, else the settings file's key, else the name itself (given in code)."""
    variable = f"{ENV_PREFIX}{name.upper()}"
    if any(key.upper() == variable for key in os.environ):
        return variable
    path = settings_file()
    return f"{name} in {path}" if path is not None else name


def load_settings() -> ServiceSettings:
    """The service's settings; a bad one is a :class:`ConfigurationError` naming the setting
    and what is wrong with it, never its value (an admin key must not reach a log)."""
    try:
        return ServiceSettings()
    except ValidationError as error:
        problems = [
            ConfigurationError(
                _reason(item["msg"]),
                location=Location(
                    field=setting_origin(str(item["loc"][0])) if item["loc"] else SETTINGS_FILE_ENV
                ),
            )
            for item in error.errors(include_input=False, include_url=False)
        ]
        others = ", ".join(str(problem.location) for problem in problems[1:])
        more = f" (and {len(problems) - 1} more: {others})" if len(problems) > 1 else ""
        first = problems[0]
        raise ConfigurationError(
            first.message + more, location=first.location, problems=problems
        ) from None
    except SettingsError as error:  # a value the source could not decode; names the field
        raise ConfigurationError(" ".join(str(error).split())) from None


def _reason(message: str) -> str:
    """pydantic's message without its "Value error, " prefix."""
    return message.removeprefix("Value error, ")
