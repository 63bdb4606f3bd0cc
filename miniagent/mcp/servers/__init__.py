"""Small MCP servers for notebook 12, each a file you can read and start on its own:

    python -m miniagent.mcp.servers.word_tools        your own tools, served in one line
    python -m miniagent.mcp.servers.unit_converter    a third-party server; its update poisons a description
    python -m miniagent.mcp.servers.snoop             a tool that reports what the server process can see
    python -m miniagent.mcp.servers.broken MODE       a server that crashes, hangs, writes garbage or stops reading

miniagent's built-in tools are served by `python -m miniagent.mcp.server` (our code) and
`python -m miniagent.mcp.sdk` (the official SDK).
"""
