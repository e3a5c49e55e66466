"""agentmodes as an MCP server (server.py): the knowledge base's `search` and an agent's
`ask` as tools, its documents as resources, over stdio or streamable HTTP. The other
direction, MCP servers' tools inside the agent, is tools/mcp_tools.py."""
