"""`import miniagent` stays light: no widget, plotting or SDK modules until they are asked for."""

import json
import subprocess
import sys

HEAVY = ["ipywidgets", "matplotlib", "anthropic", "openai",
         "opentelemetry", "mcp", "mcp_types"]  # the SDKs of the optional extras [tracing] and [mcp]


def loaded_after(code: str, modules: list[str] = HEAVY) -> dict:
    """Which of `modules` are in sys.modules after running `code` in a fresh interpreter."""
    probe = code + f"\nimport sys, json\nprint(json.dumps({{m: m in sys.modules for m in {modules!r}}}))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          env={"MINIAGENT_OFFLINE": "1", "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_miniagent_is_light():
    assert loaded_after("import miniagent") == {m: False for m in HEAVY}


def test_agent_and_a_run_do_not_import_widgets():
    code = ("import miniagent\nagent = miniagent.Agent(miniagent.connect(quiet=True))\n"
            "assert agent.run('What is 2 + 2?').ok")
    assert loaded_after(code) == {m: False for m in HEAVY}


def test_the_probe_can_see_a_heavy_import():
    """The check above could pass vacuously; this shows it notices a widget import."""
    assert loaded_after("import miniagent.widgets")["ipywidgets"] is True


def test_import_miniagent_loads_no_optional_module_of_its_own():
    assert loaded_after("import miniagent", ["miniagent.evals", "miniagent.otel", "miniagent.mcp.sdk"]) == {
        "miniagent.evals": False, "miniagent.otel": False, "miniagent.mcp.sdk": False}


def test_the_optional_modules_load_their_sdk_or_plotting_only_when_used():
    """Importing evals (its chart), otel (the OpenTelemetry SDK) or mcp.sdk (the MCP SDK) loads none of them."""
    code = "import miniagent.evals, miniagent.prices, miniagent.otel, miniagent.mcp, miniagent.mcp.server, miniagent.mcp.sdk"
    assert loaded_after(code) == {m: False for m in HEAVY}

