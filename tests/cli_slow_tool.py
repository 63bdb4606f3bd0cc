"""`python -m miniagent` with a slow get_weather tool, for the Ctrl-C tests in test_hardening_cli.py.

Run as `python tests/cli_slow_tool.py [CLI arguments]`. Each call of the tool says on
stderr that it started, then sleeps far longer than any test waits, so a test can
send SIGINT while the tools are surely running. The rest is the real CLI.
"""

import sys
import time

from miniagent.__main__ import main
from miniagent.tools import tool


@tool(timeout=60)
def get_weather(city: str) -> str:
    """Get the current weather for a city (slowly).

    Args:
        city: the city name
    """
    sys.stderr.write(f"tool started: {city}\n")  # one write: print() would interleave with the other call
    sys.stderr.flush()
    time.sleep(60)
    return f"{city}: sunny"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], tools=[get_weather]))
