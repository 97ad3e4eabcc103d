"""pgvector tables: being written."""
