"""Answers with citations: evidence, extractive answers, grounded prompts, citation checks.

Pure logic over hits and an optional LLM; :class:`~knowhub.app.App` wires it to search.
"""
