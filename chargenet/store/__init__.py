"""The store: SQLAlchemy 2 (async) over an embedded SQLite file or a shared PostgreSQL server."""
