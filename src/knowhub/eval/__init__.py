"""Retrieval evaluation: BEIR data sets and ranking metrics."""
