"""Ingestion: find files, turn them into text, chunk, embed and store them."""
