"""The MCP tools, one module per capability as the GraphQL resolvers are
(:mod:`graphsvc.api.resolvers`): :mod:`.writes` (``remember``, ``remember_many``, ``link``,
``forget``), :mod:`.reads` (``get_memory``, ``memories``), :mod:`.recall` (``bundle``,
``recall``, ``explain``, ``reconstruct``) and :mod:`.prompt` (``prompt_bundle``,
``report_tokens``). Each module holds its tools' arguments, what each one does and its
:class:`~graphsvc.mcp.tools.common.ToolSpec`; this module lists them (:data:`TOOLS`, in the order
``tools/list`` answers) and groups them into profiles (:data:`PROFILES`).

- :mod:`.common`: one call (:class:`~.common.Call`), its answer, a tool's specification;
- :mod:`.answers`: the results GraphQL returns as lists or connections, and their JSON
  (:func:`~.answers.to_json`);
- :mod:`.schemas`: the JSON schemas of a tool's arguments and result.

Every tool calls :class:`~graphsvc.service.MemoryService` in the caller's namespace, exactly as the
GraphQL resolver of the same operation does (same service method, same write-key rule, same
validation and limits), and answers the same camelCase JSON (``Model.to_json_dict()``, without a
memory's stemmed ``terms``) plus a short text rendering. Argument names are the GraphQL argument
names (the fields of ``input`` arguments are flattened to the top level: ``remember`` takes
``text``, ``kind``, ... directly). Each one checks the caller's role as the GraphQL resolver of
the same operation does (ForbiddenError for a read key that writes) and lets the service's errors
through: :mod:`graphsvc.mcp.server` turns every GraphsvcError into a tool error that starts with
its code.

The descriptions of arguments and results come from the GraphQL schema (the contract), so the two
surfaces never describe the same field in two ways; the tool descriptions themselves are written
for an agent deciding when to call what.
"""

from __future__ import annotations

from typing import Any

from graphsvc.mcp.tools.common import ToolSpec
from graphsvc.mcp.tools.prompt import PROMPT_BUNDLE, REPORT_TOKENS
from graphsvc.mcp.tools.reads import GET_MEMORY, MEMORIES
from graphsvc.mcp.tools.recall import BUNDLE, EXPLAIN, RECALL, RECONSTRUCT
from graphsvc.mcp.tools.writes import FORGET, LINK, REMEMBER, REMEMBER_MANY

#: Every tool, in the order ``tools/list`` answers.
TOOLS: tuple[ToolSpec[Any], ...] = (
    REMEMBER,
    REMEMBER_MANY,
    LINK,
    FORGET,
    BUNDLE,
    RECALL,
    EXPLAIN,
    GET_MEMORY,
    RECONSTRUCT,
    MEMORIES,
    PROMPT_BUNDLE,
    REPORT_TOKENS,
)

TOOL_NAMES = tuple(spec.name for spec in TOOLS)

#: The tool profiles (``GRAPHSVC_MCP_TOOLS``): an agent's tools (every tool but the harness's,
#: the default), a harness's (prompt assembly and token reports), or all of them.
PROFILES: dict[str, tuple[ToolSpec[Any], ...]] = {
    "agent": tuple(spec for spec in TOOLS if not spec.harness),
    "harness": tuple(spec for spec in TOOLS if spec.harness),
    "all": TOOLS,
}

__all__ = ["PROFILES", "TOOLS", "TOOL_NAMES"]
