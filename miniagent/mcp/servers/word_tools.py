"""Your own tools as an MCP server: define them as for an agent, then `run` them."""

from miniagent import tool
from miniagent.mcp.server import run


@tool
def count_words(text: str) -> str:
    """Count the words in a text (runs of characters between spaces)."""
    return str(len(text.split()))


@tool
def reverse_words(text: str) -> str:
    """The same words in the opposite order."""
    return " ".join(reversed(text.split()))


if __name__ == "__main__":
    run([count_words, reverse_words], info={"name": "word-tools", "version": "1.0"})
