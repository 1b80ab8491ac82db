"""seamkit-mcp: MCP servers' tools, resources and prompts as seamkit tools, and seamkit agents
served over MCP (see docs/mcp.md). Importing this package imports nothing heavy."""
