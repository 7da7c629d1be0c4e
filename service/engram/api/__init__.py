"""The HTTP interface: REST under /t/{tenant}/v1, MCP transports under /t/{tenant}/, health probes."""
