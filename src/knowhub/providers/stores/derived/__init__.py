"""The SQLite store's derived search index: filter columns, BM25 postings, vectors and an
ANN graph per collection, rebuilt from SQLite and kept current by its change log."""
