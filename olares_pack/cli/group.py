"""The `olares-pack` click group and what its own options set for the run.

The group knows its commands by name, module and summary without importing them: a command's
module (and what it pulls in: pydantic models, Helm wrappers, rich tables) is imported only when
that command runs or its own help is asked for, so `olares-pack --help` and `olares-pack serve`
start in tens of milliseconds. tests/test_cli_imports.py keeps the table in step with the
commands' docstrings and fails when `--help` imports a module on its deny-list."""

from __future__ import annotations

import importlib

import click

from olares_pack import __version__

# name -> (module under olares_pack.cli that defines it, the first sentence of its help).
# The summary is what `--help` lists; the test compares it with the command's own docstring.
COMMANDS: dict[str, tuple[str, str]] = {
    'bench': ('bench',
        "Measure APP's running engine (llama-server or vLLM) the same way every time: warm-ups, then runs"
        ' of one prompt, figures as the server reports them.'),
    'build': ('catalogue',
        'Render every app under --apps-dir for each of its targets into OUT, and bring packages/ and '
        'market-index.json up to date with the release records (apps/<name>/releases/<version>.json).'),
    'check': ('check',
        'The whole gate a pull request must pass, in one exit code: every app manifest rendered and '
        'linted for each of its OS lines; `build --check` (market-index.json, packages and records '
        "consistent, today's renderer reproducing the newest versions, published versions unchanged); "
        'market-offer.json; the bench records; and with --changed-since, the install and upgrades of the '
        'changed apps rehearsed.'),
    'compare': ('bench',
        'Is B faster or slower than A, or within noise? A and B are versions of APP with bench records, '
        'or experiments (NAME: its best configuration; NAME:LABEL: one configuration).'),
    'diff': ('diff',
        'Compare two versions: `diff APP V1 V2` (published versions, or `current` for app.yaml), `diff '
        'APP V` (V against `current`) or `diff A B` (chart folders, .tgz files, app manifests).'),
    'export': ('market', 'Write the market source for another host.'),
    'history': ('bench',
        'The performance history of APP from its bench records: version, what changed, tokens/s, '
        'acceptance, delta to the previous version, stability, and whether the figures were measured, '
        'transcribed from published notes, or taken on a synthetic model; one table per device.'),
    'import': ('importing',
        'Import hand-written charts: chart folders, .tgz packages, folders of them, or the base URL of a '
        'live market source.'),
    'init': ('check', 'Write the CI workflow of a catalogue repository.'),
    'lint': ('lint',
        'Lint chart folders, .tgz charts, app manifests (rendered for each target) or folders of them.'),
    'new': ('apps',
        "Start app NAME from a Hugging Face repository: read every GGUF quant's header (range requests, "
        'never the weights), print the ladder (estimate at the context, headroom, verdict, largest '
        'context that fits), pick the largest quant that fits with a margin, and write apps/NAME/app.yaml'
        ' and model.lock.json, pinned (model commit, image digest).'),
    'outdated': ('upstream',
        "What upstream has that each app's newest version lacks (default: every app): newer engine image "
        'tags and builds, a moved tag, a newer model revision, changed or new model files, a renamed, '
        'gone or gated repository, and the engine flags a newer build renames, removes or changes the '
        'default of.'),
    'package': ('catalogue', 'Package APP reproducibly.'),
    'pin': ('apps',
        "Pin APP's engine image by digest (asked of its registry; linux/amd64 must be offered) and its "
        'model by commit (asked of Hugging Face), in app.yaml (comments and order kept) and '
        'model.lock.json.'),
    'propose': ('upstream',
        "Draft APP's next version in app.yaml (comments and order kept): the newer image tag and its "
        "digest, the model's revision (and new repository name) with its file's size and sha256, the "
        'engine arguments translated for the new build, and a changelog entry saying why each changed.'),
    'rehearse': ('rehearse',
        "Install APP's published VERSION as app-service does on each OS line (its release names, "
        'namespaces and injected values; the administrator and a second user), and upgrade to it from the'
        ' previous published version (or --from).'),
    'release': ('catalogue',
        'Publish a version of APP: bump app.yaml (comments and order kept), add its changelog entry, '
        'render, lint (errors stop it), package reproducibly, write its release record under '
        'apps/<name>/releases/ and its entry in market-index.json, all in one transaction.'),
    'render': ('catalogue',
        'Render one APP (a name under --apps-dir, a folder, or an app.yaml) into chart folders.'),
    'serve': ('market', 'Serve market-index.json and packages/ as an Olares market source.'),
    'vram': ('vram', 'Estimate the GPU memory APP needs at full context, term by term, and whether it fits.'),
}


class LazyGroup(click.Group):
    """A group whose commands live in modules imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            load(cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # The listing needs only each command's summary: a stand-in command carries it, so
        # listing does not import the modules.
        rows: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            cmd = self.commands.get(name) or click.Command(name, help=COMMANDS[name][1])
            if not cmd.hidden:
                rows.append((name, cmd))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in rows])


def load(name: str) -> None:
    """Import the module that defines command NAME (its decorators register it on `cli`)."""
    importlib.import_module(f"olares_pack.cli.{COMMANDS[name][0]}")


def load_all() -> click.Group:
    """Every command registered: for what walks `cli.commands` (the reference generator)."""
    for name in COMMANDS:
        if name not in cli.commands:
            load(name)
    return cli


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="olares-pack")
@click.option("--debug", is_flag=True, help="Show the full trace of an internal error.")
def cli(debug: bool) -> None:
    """Turn app manifests for GPU LLM servers into Olares app charts."""
    session.debug = debug


class Session:
    """What the group's own options set for the run; main() reads it when a command fails."""

    debug = False


session = Session()
