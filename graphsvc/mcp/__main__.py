"""``python -m graphsvc.mcp``: the ``graphsvc mcp`` command (MCP over stdio)."""

from graphsvc.mcp.cli import mcp_command

if __name__ == "__main__":
    mcp_command(prog_name="graphsvc mcp")
