"""The pipelines behind every interface: REST routes, MCP tools and the CLI call these."""
