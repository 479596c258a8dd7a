"""Alembic environment: runs cachecast's migrations against the URL set by cachecast.core.db."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

from cachecast.core.db import get_engine

# Import every module that declares tables so their metadata is known to Alembic.
from cachecast.core.table_modules import import_all_tables

import_all_tables()
target_metadata = SQLModel.metadata


def run_migrations_offline() -> None:
    context.configure(
        url=context.config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    url = context.config.get_main_option("sqlalchemy.url")
    assert url is not None
    engine = get_engine(url)
    with engine.connect() as connection:
        # render_as_batch: SQLite cannot ALTER most things; batch mode copies the table.
        context.configure(
            connection=connection, target_metadata=target_metadata, render_as_batch=True
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
