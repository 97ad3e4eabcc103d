"""Keyword search on PostgreSQL: being written."""
