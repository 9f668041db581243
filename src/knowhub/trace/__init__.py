"""Traces: one record per search, answer and ingest run, with per-stage timings.

Records hold ids, counts, timings and short previews — never full prompts, document
text or secrets. Sinks: JSONL in the data dir (default), OpenTelemetry OTLP and
LangSmith (optional extras, lazily imported; a failure to send is logged, never raised).
"""
