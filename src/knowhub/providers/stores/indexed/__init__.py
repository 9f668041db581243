"""Stores that are a SQLite catalog plus an external search index (Milvus, Chroma)."""
