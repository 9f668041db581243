"""The MCP tools, a class per group, each registered with the SDK's ``add_tool``.

``base`` holds the registration loop, each call's target and the error boundary; the data
tools are in ``search``, ``documents`` and ``ingest``, shared mode's control tools in
``control``.
"""
