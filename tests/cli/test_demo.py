"""`toolnexus demo`: every tool source works through the real loop, offline, and nothing is left."""

from __future__ import annotations

from support.cli_runner import processes_tagged, tagged_env, toolnexus


def test_demo_shows_every_source_and_leaves_no_process() -> None:
    env, tag = tagged_env()

    proc = toolnexus("demo", env=env)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    # The toolkit, by source.
    assert "demo_add, demo_shout" in out
    assert "word_count" in out
    assert "bash, read, write, edit, grep, glob, webfetch, question, apply_patch, todowrite" in out
    # Each step: the tool, its source, the arguments and the result.
    assert '→ skill [skill] {"name":"hello-world"}' in out
    assert '<skill_content name="hello-world">' in out
    assert "→ read [builtin]" in out and "greet.sh" in out
    assert '→ bash [builtin] {"command":"sh ' in out
    assert "← bash: Hello, Ada! (from the hello-world skill)" in out
    assert '→ demo_add [mcp] {"a":19,"b":23}' in out
    # the server's own text mirror of its structured result is what the model reads
    assert '← demo_add: {\n      "sum": 42' in out
    assert "→ word_count [native]" in out
    assert "← word_count: 6" in out
    # The final answer, built from the tools' results.
    assert "Answer: " in out and "19 + 23 = 42" in out and "counts 6 words" in out
    assert "5 tool calls from 4 sources (builtin, mcp, native, skill)" in out
    # Nothing needed a key or the network, nothing was logged as a problem.
    assert "error" not in proc.stderr.lower()
    # The demo MCP server (a subprocess) is gone once the command has returned.
    assert processes_tagged(tag) == set()
