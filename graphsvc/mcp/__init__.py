"""graphsvc for agents over the Model Context Protocol (the official ``mcp`` SDK).

- :mod:`graphsvc.mcp.tools`: the tools by capability (arguments, results, descriptions, what each
  one does) and their JSON schemas;
- :mod:`graphsvc.mcp.server`: the SDK server with the tools and the memory and belief resources;
- :mod:`graphsvc.mcp.stdio`: the stdio transport (``graphsvc mcp``, :func:`run_stdio`);
- :mod:`graphsvc.mcp.http`: streamable HTTP at ``/mcp`` for ``graphsvc serve`` (:class:`McpHttp`);
- :mod:`graphsvc.mcp.cli`: the ``graphsvc mcp`` command.

Import the parts from their modules: this package module imports nothing, so that ``graphsvc
--help`` and the client never load the SDK.
"""
