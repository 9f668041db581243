"""Test kit for knowhub and its plugins: what knowhub's own tests use, shipped with it.

* :mod:`knowhub.testing.store_contract` — the store contract suite: subclass
  :class:`~knowhub.testing.store_contract.StoreContract` and give it a ``store_factory``
  fixture to check a store backend the way knowhub checks its own (needs pytest: the
  ``testing`` extra).
* :mod:`knowhub.testing.store_data` — documents, chunks and vectors built for a store
  without the ingest pipeline.
* :mod:`knowhub.testing.hits` — search results with plain values for every field a test
  does not name.
* :mod:`knowhub.testing.memory_index` — an in-memory vector index that fails on demand.
* :mod:`knowhub.testing.failing_store` — a real store whose chosen calls fail on demand
  (a document write, a commit, a meta write…), put in an App's place with ``inject``.
* :mod:`knowhub.testing.llm_server` — a scripted OpenAI/Azure/Ollama chat server over
  real HTTP.
* :mod:`knowhub.testing.langsmith_server` — a LangSmith-compatible run collector over real
  HTTP, recording the runs the LangSmith trace sink sends.

Nothing in knowhub imports this package; import the module you need.
"""
