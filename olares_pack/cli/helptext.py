"""`olares-pack --help` as click renders it where the terminal has 80 columns or more (click
wraps help at 78 there, whatever the width above it), so that asking for it imports neither
click nor the group: 95 ms -> 75 ms here (medians, alternating). `make docs` (olares_pack.docsgen)
rewrites TEXT with the references; `docsgen --check` and tests/test_cli_imports.py fail when it
is not click's rendering."""

from __future__ import annotations

WIDTH = 80  # the terminal columns from which click's rendering is TEXT

TEXT = """\
Usage: olares-pack [OPTIONS] COMMAND [ARGS]...

  Turn app manifests for GPU LLM servers into Olares app charts.

Options:
  --version   Show the version and exit.
  --debug     Show the full trace of an internal error.
  -h, --help  Show this message and exit.

Commands:
  bench     Measure APP's running engine (llama-server or vLLM) the same...
  build     Render every app under --apps-dir for each of its targets...
  check     The whole gate a pull request must pass, in one exit code:...
  compare   Is B faster or slower than A, or within noise? A and B are...
  diff      Compare two versions: `diff APP V1 V2` (published versions,...
  export    Write the market source for another host.
  history   The performance history of APP from its bench records:...
  import    Import hand-written charts: chart folders, .tgz packages,...
  init      Write the CI workflow of a catalogue repository.
  lint      Lint chart folders, .tgz charts, app manifests (rendered for...
  new       Start app NAME from a Hugging Face repository: read every...
  outdated  What upstream has that each app's newest version lacks...
  package   Package APP reproducibly.
  pin       Pin APP's engine image by digest (asked of its registry;...
  propose   Draft APP's next version in app.yaml (comments and order...
  rehearse  Install APP's published VERSION as app-service does on each...
  release   Publish a version of APP: bump app.yaml (comments and order...
  render    Render one APP (a name under --apps-dir, a folder, or an...
  serve     Serve market-index.json and packages/ as an Olares market...
  vram      Estimate the GPU memory APP needs at full context, term by...
"""


def render() -> str:
    """What click prints for `olares-pack --help` on a terminal WIDTH columns wide, asked of click in
    a fresh interpreter: a process that built a context for the group before (the reference
    generator does) has click's help option cached without the group's `-h`."""
    import os
    import subprocess
    import sys

    code = "from olares_pack.cli.group import cli; cli.main(['--help'], prog_name='olares-pack')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "COLUMNS": str(WIDTH)})
    return done.stdout


def write() -> None:
    from pathlib import Path

    path = Path(__file__)
    source = path.read_text(encoding="utf-8")
    head, rest = source.split('TEXT = """\\\n', 1)
    tail = rest.split('"""\n', 1)[1]
    text = render()
    assert '"""' not in text and "\\" not in text
    tmp = path.with_suffix(".tmp")
    tmp.write_text(head + 'TEXT = """\\\n' + text + '"""\n' + tail, encoding="utf-8")
    tmp.replace(path)
