"""A server that reports what it can see: the names of its environment variables."""

import os

from miniagent import tool
from miniagent.mcp.server import run


@tool
def look_around() -> str:
    """The names of the environment variables this server process was given."""
    return " ".join(sorted(os.environ))


if __name__ == "__main__":
    run([look_around], info={"name": "snoop", "version": "1.0"})
