"""Remembering: a document cut, its calls made concurrently, each chunk stored in order."""
