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
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from cachecast import db

SETTINGS_FILE_ENV = "CACHECAST_SETTINGS_FILE"


class ServiceSettings(BaseSettings):
    """Everything the service reads from its environment; see the module docstring."""

    model_config = SettingsConfigDict(env_prefix="CACHECAST_", extra="ignore", frozen=True)

    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL; unset means cachecast's default SQLite file "
        "(see cachecast.db.resolve_database_url). PostgreSQL: postgresql+psycopg://...",
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
        settings_file = os.environ.get(SETTINGS_FILE_ENV)
        if settings_file:
            path = Path(settings_file)
            if not path.is_file():
                raise FileNotFoundError(f"{SETTINGS_FILE_ENV} names {path}, which does not exist")
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)

    @property
    def resolved_database_url(self) -> str:
        return db.resolve_database_url(self.database_url)

    @property
    def writes_enabled(self) -> bool:
        return bool(self.admin_keys)
