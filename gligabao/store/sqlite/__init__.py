"""The store's SQLite side: what SQLite does its own way, behind store.Connection.

connect     opening the file (WAL, sqlite-vec, pragmas), locking, transactions
migrations  the schema, as versioned steps
fts         keyword search with FTS5
vectors     vector indexes with sqlite-vec
"""
