"""Retrievers for the frameworks people build with (docs/integrations.md).

``knowhub.integrations.langchain`` (extra ``langchain``) and
``knowhub.integrations.llamaindex`` (extra ``llamaindex``) each wrap one
:class:`~knowhub.integrations.search.Searcher`: a ``knowhub serve http`` server reached with a
token, or an in-process :class:`~knowhub.app.App`. Nothing in knowhub imports this package.
"""
