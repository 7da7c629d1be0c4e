"""The MCP interface: tools over stdio, streamable HTTP and SSE."""
