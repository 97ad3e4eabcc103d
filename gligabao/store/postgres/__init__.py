"""The store's PostgreSQL side, with pgvector: what PostgreSQL does its own way, behind
store.Connection."""
