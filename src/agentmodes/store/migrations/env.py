"""Alembic's entry point, run by store/migrate.py on a connection it opened and locked.

Only online, only on the connection handed over in `config.attributes["connection"]`: the
upgrade must run inside migrate.py's locked transaction. (`alembic revision --autogenerate`
during development works the same way when called through migrate.py's config.)
"""

from alembic import context

from agentmodes.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True,
                  transactional_ddl=True)
with context.begin_transaction():
    context.run_migrations()
