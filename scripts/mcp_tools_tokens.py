"""How much of an agent's context graphsvc's MCP ``tools/list`` answer costs, per tool profile.

Prints, for each profile (``GRAPHSVC_MCP_TOOLS``) and each tool, the characters of the JSON the
server sends for ``tools/list`` (compact, as on the wire) and its tokens as graphsvc estimates
them (``graphsvc.text.estimate_tokens``: one token per 4 characters, rounded up), both whole and
as a model sees it (name, description and input schema: hosts give the model these, and keep
the output schema to check results).

Usage::

    python scripts/mcp_tools_tokens.py            # every profile
    python scripts/mcp_tools_tokens.py --json     # the figures as JSON
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from graphsvc.text import estimate_tokens


def listing(profile: str | None) -> list[dict[str, Any]]:
    """The tools of ``tools/list`` as the server sends them (None: a server that has no
    profiles)."""
    from graphsvc.mcp import server

    tools = server._tool_listing(profile) if profile is not None else server._tool_listing()
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


def figures(profile: str | None) -> dict[str, Any]:
    tools = listing(profile)
    wire = json.dumps({"tools": tools}, separators=(",", ":"), ensure_ascii=False)
    seen = [{k: v for k, v in t.items() if k != "outputSchema"} for t in tools]
    visible = json.dumps({"tools": seen}, separators=(",", ":"), ensure_ascii=False)
    per_tool = {
        t["name"]: estimate_tokens(json.dumps(t, separators=(",", ":"), ensure_ascii=False))
        for t in seen
    }
    return {
        "profile": profile or "(none)",
        "tools": len(tools),
        "characters": len(wire),
        "tokens": estimate_tokens(wire),
        "model_characters": len(visible),
        "model_tokens": estimate_tokens(visible),
        "per_tool": per_tool,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    try:
        from graphsvc.mcp.tools import PROFILES

        profiles: list[str | None] = list(PROFILES)
    except ImportError:  # a graphsvc before tool profiles
        profiles = [None]
    results = [figures(p) for p in profiles]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for result in results:
        print(
            f"profile {result['profile']}: {result['tools']} tools; as a model sees them "
            f"{result['model_characters']} characters, ~{result['model_tokens']} tokens; on the "
            f"wire {result['characters']} characters, ~{result['tokens']} tokens (chars/4)"
        )
        for name, tokens in result["per_tool"].items():  # as a model sees each
            print(f"  {name:<14} ~{tokens}")


if __name__ == "__main__":
    main()
