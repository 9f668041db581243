"""The postgres store's lexical terms and the SQL of its searches: filters, BM25, kNN.

Filters must cost what the rows they keep cost, not a pass over the collection:

* ``language`` reads a column, ``source`` and ``format`` the document's, each with a btree
  index (pg_schema) for when the filter is selective;
* any other key reads the chunk's metadata, matched as text (a list matching on any of its
  elements). That test alone (``jsonb_array_elements_text``) cannot use an index, so it is
  preceded by a containment the metadata's GIN index answers: ``metadata @> {"key": x}`` or
  ``{"key": [x]}`` for each JSON value ``x`` whose text the filter names (the string itself,
  and the number, boolean, array or object it spells). Every row the text test keeps holds
  one of them, so the pair keeps exactly the rows the text test alone would.

Lexical search evaluates the filter only on the rows that hold a query term (found through
the terms' GIN index), inside the one pass that also counts BM25's statistics, never by
joining the filtered collection back in.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from psycopg.types.json import Jsonb

from knowhub.models import Filters

__all__ = [
    "dense_statement",
    "filter_sql",
    "fits",
    "lexeme",
    "lexical_statement",
    "tsvector",
]

# tsvector limits: a longer lexeme is an error, positions above 16383 are clamped.
_MAX_LEXEME_BYTES = 2046
_MAX_POSITION = 16383
# Filters on these keys read a column; any other key reads the chunk's metadata.
_COLUMN_FILTERS = {"language": "k.language", "source": "d.source", "format": "d.format"}
# Joins the chunk's document, for filters on its columns.
_DOCUMENT = "JOIN knowhub.documents d ON d.id = k.document_id "


def fits(term: str) -> bool:
    return 0 < len(term.encode()) <= _MAX_LEXEME_BYTES


def lexeme(term: str) -> str:
    """A term quoted for tsvector/tsquery input, which then takes it verbatim (no parser)."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector(terms: Sequence[str]) -> str:
    """A tsvector literal of ``terms`` at their positions (term frequencies for BM25).

    PostgreSQL keeps at most 256 positions per lexeme, so a term's frequency saturates
    there (BM25's own saturation makes the difference negligible).
    """
    return " ".join(
        f"{lexeme(t)}:{min(i, _MAX_POSITION)}" for i, t in enumerate(terms, 1) if fits(t)
    )


def filter_sql(filters: Filters) -> tuple[str, dict[str, Any], bool]:
    """One SQL condition for filters on chunks ``k`` / documents ``d`` (``true`` when there
    are none), its parameters, and whether it reads ``d``.

    Each key's condition is ANDed; a tuple value matches any of its elements.
    """
    clauses: list[str] = []
    params: dict[str, Any] = {}
    for n, (key, value) in enumerate(filters.items()):
        values = list(value) if isinstance(value, tuple) else [value]
        params[f"fv{n}"] = values
        if key in _COLUMN_FILTERS:
            clauses.append(f"{_COLUMN_FILTERS[key]} = ANY(%(fv{n})s::text[])")
            continue
        params[f"fk{n}"] = key
        contained = []
        for m, shape in enumerate(_shapes(key, values)):
            params[f"fc{n}_{m}"] = Jsonb(shape)
            contained.append(f"k.metadata @> %(fc{n}_{m})s")
        field = f"k.metadata -> %(fk{n})s"
        clauses.append(
            f"({' OR '.join(contained)}) AND EXISTS (SELECT 1 FROM jsonb_array_elements_text("
            f"CASE jsonb_typeof({field}) WHEN 'array' THEN {field} "
            f"ELSE jsonb_build_array({field}) END) v WHERE v = ANY(%(fv{n})s::text[]))"
        )
    reads_documents = any(_COLUMN_FILTERS.get(key, "").startswith("d.") for key in filters)
    return " AND ".join(f"({c})" for c in clauses) or "true", params, reads_documents


def _shapes(key: str, values: Sequence[str]) -> list[dict[str, Any]]:
    """The metadata objects that contain every row whose ``key`` reads as one of ``values``."""
    shapes: list[dict[str, Any]] = []
    for value in values:
        for item in _json_values(value):
            shapes += [{key: item}, {key: [item]}]
    return shapes


def _json_values(text: str) -> list[Any]:
    """The JSON values whose text (as ``jsonb_array_elements_text`` writes it) may be ``text``:
    the string, and the value ``text`` parses as (``1.50`` is the number 1.50, which
    containment finds as 1.5; the text test then tells them apart)."""
    try:
        parsed = json.loads(text, parse_constant=_no_constant)
    except ValueError:
        return [text]
    # null's text is NULL, which equals nothing; a string is already the first value.
    return [text] if parsed is None or isinstance(parsed, str) else [text, parsed]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON value")  # NaN, Infinity: not in jsonb


def lexical_statement(filters: Filters, tokens: Sequence[str]) -> tuple[str, dict[str, Any]] | None:
    """BM25 as FTS5 scores it, over the rows holding any query term, and its parameters
    but for ``cid``, ``limit``, ``k1`` and ``b``; None when no term can be a lexeme.

    ``h``: one row per (matching chunk, query term in it) with the term's frequency
    (positions); setweight+ts_filter keep just the query's lexemes in C, where unnesting
    whole tsvectors cost seconds. ``q``: each term's idf from the number of rows holding
    it (FTS5's nHit), counted from ``h`` itself, so before the filter (FTS5 counts every
    row of the collection); ``keep`` is the filter, applied to the scores only.
    """
    terms = [t for t in dict.fromkeys(tokens) if fits(t)]
    if not terms:
        return None
    condition, params, reads_documents = filter_sql(filters)
    params.update(terms=terms, any=" | ".join(lexeme(t) for t in terms))
    document = _DOCUMENT if reads_documents else ""
    statement = (
        "WITH stats AS MATERIALIZED (SELECT c.chunks::float8 AS n, "
        "  greatest(c.terms::float8 / greatest(c.chunks, 1), 1e-9) AS avgdl "
        "  FROM knowhub.collections c WHERE c.id = %(cid)s), "
        f"h AS MATERIALIZED (SELECT k.id, k.n_terms, l.lexeme, {condition} AS keep, "
        f"  cardinality(l.positions) AS tf FROM knowhub.chunks k {document}CROSS JOIN LATERAL "
        "  unnest(ts_filter(setweight(k.terms, 'A', %(terms)s::text[]), '{a}')) l "
        "  WHERE k.collection_id = %(cid)s AND k.terms @@ %(any)s::tsquery), "
        "q AS MATERIALIZED (SELECT h.lexeme, greatest(ln(greatest((s.n - count(*) + 0.5) "
        "  / (count(*) + 0.5), 1e-12)), 1e-6) AS idf FROM h CROSS JOIN stats s "
        "  GROUP BY h.lexeme, s.n) "
        "SELECT h.id, sum(q.idf * h.tf * (%(k1)s + 1) / "
        "  (h.tf + %(k1)s * (1 - %(b)s + %(b)s * h.n_terms / s.avgdl))) AS score "
        "FROM h JOIN q ON q.lexeme = h.lexeme CROSS JOIN stats s WHERE h.keep "
        "GROUP BY h.id ORDER BY score DESC, h.id LIMIT %(limit)s"
    )
    return statement, params


def dense_statement(
    filters: Filters, cid: int, dim: int, *, exact: bool
) -> tuple[str, dict[str, Any]]:
    """The ``limit`` rows of collection ``cid`` nearest to ``query`` that pass the filters,
    and the filters' parameters (the caller adds ``limit`` and ``query``).

    ``exact``: order by the untyped column, which does not match the HNSW index's
    expression, so the planner scans (the true top k, as SQLite's). Otherwise the index's
    own expression and predicate, as literals, so the planner can prove the partial index
    applies even to a cached generic plan; with a selective filter it may still read the
    matching rows through a filter index and order them exactly.
    """
    if exact:
        distance, collection = "k.embedding <=> %(query)s::vector", "%(cid)s"
    else:
        distance = f"k.embedding::vector({int(dim)}) <=> %(query)s::vector({int(dim)})"
        collection = str(int(cid))
    condition, params, reads_documents = filter_sql(filters)
    document = _DOCUMENT if reads_documents else ""
    statement = (
        f"SELECT id, 1 - dist FROM (SELECT k.id, {distance} AS dist FROM knowhub.chunks k "
        f"{document}WHERE k.collection_id = {collection} AND {condition} "
        "ORDER BY dist LIMIT %(limit)s) s ORDER BY dist, id"
    )
    params["cid"] = cid
    return statement, params
