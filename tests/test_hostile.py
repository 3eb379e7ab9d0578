"""Hostile input: every user error exits 2 naming file, line and field, and changes no file;
nothing a manifest says can change the structure of what is rendered."""

from __future__ import annotations

import copy
import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import APPS

from olares_pack import olares as targets
from olares_pack.apps.load import parse_app
from olares_pack.charts import helm
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode
from olares_pack.common.yamlsrc import MAX_BYTES, fast_load, safe_load
from olares_pack.render import app as render

NAME = "llamacppqwen36mtpone"
GOOD_TEXT = (APPS / NAME / "app.yaml").read_text()
GOOD = fast_load(GOOD_TEXT, Path("app.yaml"))


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".olares-pack" not in p.parts}


def mutate(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(GOOD)
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else node[key]
    node[path[-1]] = value
    return data


class _Quoting(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Every string double-quoted (with escapes for what is not printable): PyYAML writes plain
    scalars by YAML 1.1 rules, which a YAML 1.2 reader may read as numbers ('0o17', '1e3').
    libyaml's emitter where PyYAML has it: the pure-Python one took a third of this module's time."""


_Quoting.add_representer(str, lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", v, style='"'))


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Quoting, sort_keys=False, allow_unicode=True, width=10_000)


# (id, field path, value, fragment of the message) — the error must name app.yaml:<line>: <path>
FIELD_CASES: list[tuple[str, tuple[Any, ...], Any, str]] = []
for field in [("title",), ("description",), ("developer",), ("entrance", "title"), ("changelog", 4, "summary"),
              ("license", 0, "text")]:
    for cid, value, fragment in [
        ("nul", "a\x00b", "NUL"), ("cr", "a\rb", "carriage return"), ("u2028", "a\u2028b", "U+2028"),
        ("u2029", "a\u2029b", "U+2029"), ("nel", "a\x85b", "U+0085"), ("esc", "a\x1b[31mb", "U+001B"),
        ("newline", "a\nb", "one line"), ("tab", "a\tb", "one line"), ("helm", "a {{ .Values.x }}", "'{{'"),
        ("jinja", "{% if x %}", "'{%'"), ("comment", "{# x #}", "'{#'"),
        ("blank", "   ", "blank"),
    ]:
        FIELD_CASES.append((f"{'.'.join(map(str, field))}-{cid}", field, value, fragment))
FIELD_CASES += [
    ("full_description-cr", ("full_description",), "line\r\nline", "carriage return"),
    ("full_description-helm", ("full_description",), "x {{ .Values.bfl }}", "'{{'"),
    ("notes-u2028", ("changelog", 4, "notes"), "a\u2028b", "U+2028"),
    ("env-key-newline", ("env",), {"A\nB": "x"}, "key holds a newline"),
    ("too-long", ("description",), "x" * 70_000, "at most 65,536"),
    ("env-value-nul", ("env", "EXTRA_SETTING"), "1\x00", "NUL"),
    ("extra-arg-cr", ("server", "extra_args"), ["--x\r"], "carriage return"),
]
for field in [("icon",), ("website",), ("source_code",), ("license", 0, "url")]:
    for cid, value, fragment in [
        ("javascript", "javascript:alert(1)", "not an http(s) URL"), ("ftp", "ftp://example.org/x", "not an http(s)"),
        ("nohost", "http://", "not an http(s)"), ("space", "http://exa mple.org/", "white space"),
        ("userinfo", "https://user:pw@example.org/", "no user or password"),
        ("port", "https://example.org:99999/", "port"), ("helm", "https://{{x}}.org/", "'{{'"),
        ("relative", "/icons/x.png", "not an http(s)"),
    ]:
        FIELD_CASES.append((f"{'.'.join(map(str, field))}-{cid}", field, value, fragment))
FIELD_CASES += [
    ("name-hyphen", ("name",), "my-app", "not an Olares app name"),
    ("name-upper", ("name",), "MyApp", "not an Olares app name"),
    ("name-reserved", ("name",), "system", "reserved"),
    ("name-long", ("name",), "a" * 31, "not an Olares app name"),
    ("entrance-name", ("entrance", "name"), "a b", "String should match pattern"),
    ("env-name", ("env",), {"A-B": "1"}, "not an environment variable name"),
    ("env-olares", ("env",), {"OLARES_USER": "1"}, "OLARES_* names are the system's"),
    ("locale-key", ("locales",), {"xx_YY": {"title": "t", "description": "d"}}, "not a locale"),
    ("repo-three", ("model", "repo"), "a/b/c", "not a Hugging Face repo id"),
    ("repo-dashes", ("model", "repo"), "a--b/c", "not a Hugging Face repo id"),
    ("repo-dots", ("model", "repo"), "../x", "not a Hugging Face repo id"),
    ("repo-trailing-dot", ("model", "repo"), "a/b.", "not a Hugging Face repo id"),
    ("revision-traversal", ("model", "revision"), "../../../../etc", "no empty, '.' or '..' segment"),
    ("revision-empty-segment", ("model", "revision"), "a//b", "no empty, '.' or '..' segment"),
    ("revision-absolute", ("model", "revision"), "/main", "no leading or trailing '/'"),
    ("revision-hidden", ("model", "revision"), ".git", "no segment starting with '.'"),
    ("revision-lock", ("model", "revision"), "main.lock", "ending with '.lock'"),
    ("revision-tilde", ("model", "revision"), "main~1", "characters outside"),
    ("file-traversal", ("model", "file"), "../x.gguf", "no empty, '.' or '..' segment"),
    ("file-absolute", ("model", "file"), "/x.gguf", "no leading or trailing '/'"),
    ("file-dot", ("model", "file"), "a/./b.gguf", "no empty, '.' or '..' segment"),
    ("file-pipe", ("model", "file"), "q|x.gguf", "characters outside"),
    ("file-quote", ("model", "file"), 'x"y.gguf', "characters outside"),
    ("file-subshell", ("model", "file"), "$(reboot).gguf", "characters outside"),
    ("file-backslash", ("model", "file"), "a\\b.gguf", "characters outside"),
    ("ctx-true", ("server", "ctx_size"), True, "valid integer"),
    ("ctx-string", ("server", "ctx_size"), "262144", "valid integer"),
    ("ctx-float", ("server", "ctx_size"), 1.5, "valid integer"),
    ("ctx-negative", ("server", "ctx_size"), -1, "greater than or equal to 0"),
    ("ctx-huge", ("server", "ctx_size"), 10**30, "less than or equal to"),
    ("parallel-zero", ("server", "parallel"), 0, "greater than or equal to 1"),
    ("port-high", ("server", "port"), 70000, "less than or equal to 65535"),
    ("port-true", ("server", "port"), True, "valid integer"),
    ("gpu-layers-true", ("server", "gpu_layers"), True, "gpu_layers"),
    ("batch-zero", ("server", "batch_size"), 0, "greater than or equal to 1"),
    ("threads-string", ("server", "threads"), "16", "valid integer"),
    ("jinja-yes", ("server", "jinja"), "yes", "valid boolean"),
    ("jinja-one", ("server", "jinja"), 1, "valid boolean"),
    ("draft-p-true", ("server", "speculative", "draft_p_min"), True, "not true/false"),
    ("draft-p-two", ("server", "speculative", "draft_p_min"), 2, "less than or equal to 1"),
    ("probe-huge", ("probes", "startup", "period_seconds"), 10**9, "less than or equal to"),
    ("probe-zero-threshold", ("probes", "liveness", "failure_threshold"), 0, "greater than or equal to 1"),
    ("gpu-mib-true", ("resources", "gpu_memory_mib"), True, "gpu_memory_mib"),
    ("gpu-mib-huge", ("resources", "gpu_memory_mib"), 10**9, "gpu_memory_mib"),
    ("gpu-mib-unit", ("resources", "gpu_memory_mib"), "24Gi", "gpu_memory_mib"),
    ("cpu-1e30", ("resources", "cpu", "limit"), "1e30", "a CPU quantity from 1m to 4096 cores"),
    ("cpu-exponent-overflow", ("resources", "cpu", "limit"), "1e999999999", "not a Kubernetes quantity"),
    ("cpu-too-many", ("resources", "cpu", "limit"), 100000, "a CPU quantity from 1m to 4096 cores"),
    ("cpu-zero", ("resources", "cpu", "request"), 0, "a CPU quantity from 1m"),
    ("cpu-true", ("resources", "cpu", "request"), True, "expected a CPU quantity"),
    ("cpu-words", ("resources", "cpu", "request"), "four", "not a Kubernetes quantity"),
    ("memory-exabytes", ("resources", "memory", "limit"), "10Ei", "a size from 1 byte to 1Pi"),
    ("memory-digits", ("resources", "memory", "limit"), "9" * 40 + "Gi", "not a Kubernetes quantity"),
    ("memory-no-unit", ("resources", "memory", "request"), 12, "has no unit"),
    ("memory-millibytes", ("resources", "memory", "request"), "500m", "millibytes"),
    ("memory-order", ("resources", "memory", "request"), "50Gi", "larger than limit"),
    ("disk-negative", ("resources", "disk", "request"), "-1Gi", "not a Kubernetes quantity"),
    ("size-true", ("model", "size"), True, "valid integer"),
    ("size-negative", ("model", "size"), -5, "greater than 0"),
    ("size-huge", ("model", "size"), 10**20, "less than or equal to"),
    ("version-not-semver", ("version",), "1.0", "not a semantic version"),
    ("changelog-date", ("changelog", 4, "date"), "yesterday", "date"),
    ("changelog-kind", ("changelog", 4, "changes", 0, "kind"), "rewrite", "kind"),
    ("changelog-shipped-string", ("changelog", 4, "shipped"), "no", "valid boolean"),
    ("changelog-in-history-shipped", ("changelog", 4, "in_history"), True, "in_history lists an unshipped"),
    ("unknown-field", ("colour",), "blue", "unknown field"),
    ("engine-kind", ("engine", "kind"), "ollama", "engine.kind must be one of"),
    ("image-tag", ("engine", "image", "tag"), "a b", "not an image tag"),
    ("image-digest", ("engine", "image", "digest"), "sha256:xyz", "not an image digest"),
]


@pytest.mark.parametrize("cid, path, value, fragment", FIELD_CASES, ids=[c[0] for c in FIELD_CASES])
def test_a_hostile_field_is_refused_with_file_line_and_path(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            cid: str, path: tuple[Any, ...], value: Any,
                                                            fragment: str) -> None:
    data = mutate(path, value)
    app_dir = tmp_path / "apps" / (data["name"] if isinstance(data["name"], str) and "/" not in data["name"] else NAME)
    app_dir.mkdir(parents=True)
    (app_dir / "app.yaml").write_text(dump(data), encoding="utf-8")
    before = tree(tmp_path)
    code = main(["render", str(app_dir), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert fragment in err, err
    assert "app.yaml:" in err and "Traceback" not in err
    assert tree(tmp_path) == before and not (tmp_path / "out").exists()


def _write(tmp_path: Path, data: bytes) -> Path:
    d = tmp_path / "apps" / NAME
    d.mkdir(parents=True, exist_ok=True)
    (d / "app.yaml").write_bytes(data)
    return d


ALIAS_BOMB = ("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
              + "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 9))).encode()

FILE_CASES: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("not-utf8", lambda t: ["render", str(_write(t, GOOD_TEXT.encode().replace(b"Qwen36", b"Qw\xffen", 1)))], "not UTF-8"),
    ("utf16", lambda t: ["render", str(_write(t, GOOD_TEXT.encode("utf-16")))], "not UTF-8"),
    ("nul-byte", lambda t: ["render", str(_write(t, GOOD_TEXT.encode().replace(b"name:", b"na\x00me:", 1)))], "app.yaml"),
    ("alias-bomb", lambda t: ["render", str(_write(t, ALIAS_BOMB))], "aliases are not accepted"),
    ("deep-flow", lambda t: ["render", str(_write(t, b"x: " + b"[" * 3000 + b"]" * 3000 + b"\n"))], "nesting depth"),
    ("deep-block", lambda t: ["render", str(_write(t, "".join(f"{' ' * 2 * i}k{i}:\n" for i in range(60)).encode()
                                                    + b"  " * 60 + b"v: 1\n"))], "nested deeper than 32"),
    ("duplicate-key", lambda t: ["render", str(_write(t, (GOOD_TEXT + "title: again\n").encode()))], "duplicate key 'title'"),
    ("too-big", lambda t: ["render", str(_write(t, b"# " + b"x" * MAX_BYTES + b"\n"))], "a manifest is at most"),
    ("tab-indent", lambda t: ["render", str(_write(t, b"name: x\nserver:\n\tport: 1\n"))], "YAML syntax error"),
    ("unclosed-quote", lambda t: ["render", str(_write(t, b'title: "open\n'))], "YAML syntax error"),
    ("a-list", lambda t: ["render", str(_write(t, b"- a\n- b\n"))], "expected a mapping of app fields"),
    ("empty", lambda t: ["render", str(_write(t, b""))], "expected a mapping of app fields"),
    ("folder-mismatch", lambda t: ["render", str(_write(t, GOOD_TEXT.replace(f"name: {NAME}", "name: other").encode()))],
     "differs from its folder"),
    ("manifest-is-a-folder", lambda t: (t / "apps" / NAME / "app.yaml").mkdir(parents=True) or
     ["render", str(t / "apps" / NAME / "app.yaml")], "app.yaml"),
    ("apps-dir-is-a-file", lambda t: t.joinpath("appsfile").write_text("x") and
     ["build", "--apps-dir", str(t / "appsfile"), "--out", str(t / "out")], "appsfile"),
    ("no-such-app", lambda t: ["render", "ghost", "--apps-dir", str(t)], "no such app"),
]

CLI_CASES: list[tuple[str, list[str], str]] = [
    ("release-version-short", ["release", NAME, "--version", "1.0"], "not a semantic version"),
    ("release-version-path", ["release", NAME, "--version", "../../x"], "not a semantic version"),
    ("release-bump-and-version", ["release", NAME, "--bump", "patch", "--version", "2.0.0", "--summary", "x"],
     "give --bump or --version, not both"),
    ("release-bad-bump", ["release", NAME, "--bump", "huge"], "Invalid value for '--bump'"),
    ("release-bad-date", ["release", NAME, "--bump", "patch", "--summary", "x", "--date", "2026-13-40"], "YYYY-MM-DD"),
    ("release-change-no-kind", ["release", NAME, "--bump", "patch", "--summary", "x", "--change", "nokind"],
     "expected KIND:TEXT"),
    ("release-change-bad-kind", ["release", NAME, "--bump", "patch", "--summary", "x", "--change", "bogus:text",
                                 "--date", "2026-06-01"], "kind"),
    ("release-summary-newline", ["release", NAME, "--bump", "patch", "--summary", "a\nb", "--date", "2026-06-01"],
     "one line"),
    ("release-summary-helm", ["release", NAME, "--bump", "patch", "--summary", "{{ .Values }}", "--date", "2026-06-01"],
     "'{{'"),
    ("release-summary-u2028", ["release", NAME, "--bump", "patch", "--summary", "a\u2028b", "--date", "2026-06-01"],
     "U+2028"),
    ("release-notes-cr", ["release", NAME, "--bump", "patch", "--summary", "x", "--notes", "a\rb", "--date", "2026-06-01"],
     "carriage return"),
    ("release-not-increasing", ["release", NAME, "--version", "1.0.1", "--summary", "x", "--date", "2026-06-01"],
     "does not increase"),
    ("release-unknown-app", ["release", "ghost", "--bump", "patch", "--summary", "x"], "ghost"),
    ("release-lock-timeout-word", ["release", NAME, "--bump", "patch", "--lock-timeout", "soon"], "--lock-timeout"),
    ("package-unpublished", ["package", NAME, "--version", "9.9.9"], "is not published"),
    ("package-version-traversal", ["package", NAME, "--version", "../../../etc/passwd"], "is not published"),
    ("diff-four-args", ["diff", "a", "b", "c", "d"], "give APP V1 V2"),
    ("diff-unknown-version", ["diff", NAME, "1.0.5", "7.7.7"], "is not published"),
    ("lint-missing", ["lint", "/nonexistent/chart"], "no such file or folder"),
    ("lint-olares-arabic", ["lint", "--olares", "\u0661.\u0661\u0662", "apps"], "is not an Olares version"),
    ("lint-olares-words", ["lint", "--olares", "latest", "apps"], "is not an Olares version"),
    ("serve-default-version", ["serve", "--default-version", "one.two"], "is not an Olares version"),
    ("serve-cert-alone", ["serve", "--tls-cert", "market-index.json"], "go together"),
    ("vram-unknown-version", ["vram", NAME, "--version", "8.8.8"], "is not published"),
    ("vram-bad-ctx", ["vram", NAME, "--ctx", "lots"], "--ctx"),
    ("vram-bad-device", ["vram", NAME, "--device", "toaster"], "--device"),
    ("render-bad-target", ["render", NAME, "--target", "future"], "--target"),
    ("unknown-command", ["publish-everything"], "No such command"),
    ("unknown-option", ["build", "--fast"], "No such option"),
]


@pytest.mark.parametrize("cid, make_args, fragment", FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_a_hostile_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], cid: str,
                                   make_args: Callable[[Path], list[str]], fragment: str) -> None:
    args = make_args(tmp_path)
    before = tree(tmp_path)
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert fragment in err, err
    assert "Traceback" not in err and tree(tmp_path) == before


@pytest.mark.parametrize("cid, args, fragment", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_a_hostile_argument_is_refused(repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                       cid: str, args: list[str], fragment: str) -> None:
    root = repo
    monkeypatch.chdir(root)
    before = tree(root)
    code = main(args)
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert fragment in captured.err, captured.err
    assert "Traceback" not in captured.err and tree(root) == before


def test_there_are_at_least_a_hundred_named_cases() -> None:
    assert len(FIELD_CASES) + len(FILE_CASES) + len(CLI_CASES) >= 100


def test_an_internal_error_is_one_line_and_exit_3(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from olares_pack.catalogue import build

    def boom(*args: object, **kwargs: object) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr(build, "render_apps", boom)
    assert main(["build", "--apps-dir", str(APPS), "--out", "/tmp/olares-pack-never"]) == ExitCode.INTERNAL
    err = capsys.readouterr().err
    assert "internal error: KeyError" in err and "please report" in err and "Traceback" not in err
    assert main(["--debug", "build", "--apps-dir", str(APPS), "--out", "/tmp/olares-pack-never"]) == ExitCode.INTERNAL
    assert "Traceback" in capsys.readouterr().err


def test_rich_markup_in_a_finding_is_printed_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = tmp_path / "[bold]chart[/bold]"
    shutil.copytree(Path(__file__).parent / "data" / "expected" / "current" / NAME, chart)
    main(["lint", str(chart)])
    out = capsys.readouterr().out
    assert "[bold]chart[/bold]" in out


# ---------------------------------------------------------------- rendering keeps its structure

HOSTILE_VALID = {
    "quotes": "say \"hi\" and 'bye'", "backslash": "C:\\path\\n not a newline", "colon": "key: value # not a comment",
    "dash": "- not a list", "document": "--- and ...", "anchor": "&a *b !tag %x @y `z`",
    "flow": "[a, b] {c: d} , ?", "pipe": "| > literal?", "single-brace": "{ x } and { y }",
    "unicode": "長上下文 🚀 مرحبا", "spaces": "  leading and trailing  ", "words": "yes", "null-word": "null",
    "number-like": "0o17", "exponent": "1e3", "long": "x" * 3000, "hash": "#hashtag", "percent": "100% %25",
}
MULTILINE_VALID = {
    "markdown": "**Bold**\n\n- item\n  - nested\n\n```\ncode: {x}\n```\n", "no-final-newline": "a\nb",
    "extra-newlines": "a\n\n\n", "leading-space": "  indented first line\nsecond\n", "tabs": "col\tcol\n",
    "blank-line-spaces": "a\n   \nb\n", "yaml-looking": "key: value\n- item\n--- \n",
}


def _rendered_yaml(app_data: dict[str, Any], target: targets.TargetProfile) -> dict[str, Any]:
    """Every YAML file of the chart, parsed as the device does: static files with a YAML 1.1 reader,
    templates through the real Helm engine with the installer's values."""
    app = parse_app(dump(app_data), Path("app.yaml"))
    files = render.render(app, target)
    values = helm.installer_values(app.name, [app.name])
    import tempfile

    from olares_pack.common import fsio

    def through_helm(name: str, chart_files: dict[str, str]) -> dict[str, str]:
        with tempfile.TemporaryDirectory() as tmp:
            fsio.write_tree(chart_files, Path(tmp) / name)
            with helm.load(Path(tmp) / name) as chart:
                return helm.render(chart, values, namespace=f"{name}-alice")

    out: dict[str, Any] = {}
    for p, t in files.items():
        if p.endswith(".yaml") and "templates/" not in p:
            if "{{" in t:  # the v2 shared form's manifest: its administrator branches rendered first
                t = next(iter(through_helm(app.name, {"Chart.yaml": files["Chart.yaml"], "templates/m.yaml": t}).values()))
            out[p] = safe_load(t)
    manifest = out["OlaresManifest.yaml"]
    # an apiVersion v2 app is installed sub-chart by sub-chart (beclab/Olares HelmOpsV2.install)
    subs = [c["name"] for c in manifest["spec"].get("subCharts", [])] if manifest["apiVersion"] == "v2" else []
    charts = [(sub, {k[len(sub) + 1:]: v for k, v in files.items() if k.startswith(f"{sub}/")}) for sub in subs] or [(app.name, files)]
    for name, chart_files in charts:
        for path, obj in helm.objects(through_helm(name, chart_files)):
            out[f"{path}#{obj.get('kind')}"] = obj
    return out


def _shape(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _shape(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_shape(v) for v in doc]
    return type(doc).__name__


BASELINE: dict[tuple[str, str], Any] = {}


def _baseline(field: str, target: targets.TargetProfile) -> Any:
    """The chart's structure with the field set to a plain word."""
    if (field, target.name) not in BASELINE:
        path = FIELDS[field][0]
        BASELINE[field, target.name] = _shape(_rendered_yaml(_per_user(field, mutate(path, ["x"] if field == "arg" else "x")), target))
    return BASELINE[field, target.name]


def _per_user(field: str, data: dict[str, Any]) -> dict[str, Any]:
    """Arguments with white space are the per-user form's: the shared form's ENGINE_ARGS is split
    on white space by its wrapper, and refuses them (test_llmbase)."""
    if field == "arg":
        data["engine"]["shared"] = False
    return data


def _env_value(docs: dict[str, Any], name: str) -> str:
    dep = next(v for k, v in docs.items() if k.endswith("#Deployment"))
    env = dep["spec"]["template"]["spec"]["containers"][0]["env"]
    return next(e["value"] for e in env if e["name"] == name)


def _args(docs: dict[str, Any]) -> list[str]:
    dep = next(v for k, v in docs.items() if k.endswith("#Deployment"))
    return dep["spec"]["template"]["spec"]["containers"][0]["args"]


FIELDS: dict[str, tuple[tuple[Any, ...], Callable[[dict[str, Any]], Any]]] = {
    "title": (("title",), lambda d: d["OlaresManifest.yaml"]["metadata"]["title"]),
    "description": (("description",), lambda d: (d["OlaresManifest.yaml"]["metadata"]["description"],
                                                 d["Chart.yaml"]["description"])),
    "developer": (("developer",), lambda d: d["OlaresManifest.yaml"]["spec"]["developer"]),
    "entrance": (("entrance", "title"), lambda d: d["OlaresManifest.yaml"]["entrances"][0]["title"]),
    "license": (("license", 0, "text"), lambda d: d["OlaresManifest.yaml"]["spec"]["license"][0]["text"]),
    "env": (("env", "EXTRA_SETTING"), lambda d: _env_value(d, "EXTRA_SETTING")),
    "arg": (("server", "extra_args"), lambda d: _args(d)[-1]),
}


@pytest.mark.parametrize("target", [targets.CURRENT, targets.LEGACY], ids=["current", "legacy"])
@pytest.mark.parametrize("field", sorted(FIELDS))
def test_hostile_but_valid_text_keeps_the_chart_structure_and_round_trips(field: str, target: targets.TargetProfile) -> None:
    path, read = FIELDS[field]
    values = dict(HOSTILE_VALID)
    if field in ("env", "arg"):  # rendered through the Helm-escaping filter: template syntax is text there
        values["helm"] = "{{ .Values.bfl.username }} and }} and {% x %}"
    for cid, value in values.items():
        if field in ("title", "entrance") and len(value) > 30:
            continue  # titles are 1-30 characters
        data = _per_user(field, mutate(path, [value] if field == "arg" else value))
        docs = _rendered_yaml(data, target)
        assert _shape(docs) == _baseline(field, target), cid
        got = read(docs)
        assert (got == (value, value)) if field == "description" else (got == value), (cid, got)


@pytest.mark.parametrize("value", list(MULTILINE_VALID.values()), ids=list(MULTILINE_VALID))
def test_multi_line_text_round_trips_exactly(value: str) -> None:
    docs = _rendered_yaml(mutate(("full_description",), value), targets.CURRENT)
    assert docs["OlaresManifest.yaml"]["spec"]["fullDescription"] == value
    assert docs["i18n/en-US/OlaresManifest.yaml"]["spec"]["fullDescription"] == value


def test_a_gzip_bomb_is_not_inflated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import gzip
    import io
    import tarfile

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("bomb/Chart.yaml")
        info.size = 80 << 20
        tar.addfile(info, io.BytesIO(b"\0" * info.size))
    bomb = tmp_path / "bomb-1.0.0.tgz"
    bomb.write_bytes(gzip.compress(raw.getvalue(), compresslevel=9))
    assert bomb.stat().st_size < 200_000
    assert main(["lint", str(bomb)]) == ExitCode.INPUT
    assert "unpacks to more than 64 MiB" in capsys.readouterr().err


@pytest.mark.parametrize("written, fragment", [
    ("summary: [unclosed\n", "YAML syntax error"),
    ("- just\n- a list\n", "not a mapping"),
    ("a: &x 1\nb: *x\n", "aliases are not accepted"),
    ("version: 1.0.10\ndate: 2026-06-02\nsummary: \"{{ .Values.x }}\"\n", "'{{'"),
], ids=["syntax", "list", "alias", "template"])
def test_an_edited_changelog_entry_that_is_not_valid_is_refused(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str], written: str,
                                                                fragment: str) -> None:
    root = repo
    editor = tmp_path / "editor.sh"
    (tmp_path / "entry.yaml").write_text(written)
    editor.write_text(f'#!/bin/sh\ncp "{tmp_path / "entry.yaml"}" "$1"\n')
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.setenv("VISUAL", str(editor))
    before = tree(root)
    assert main(["release", NAME, "--apps-dir", str(root / "apps"), "--bump", "patch", "--edit"]) == ExitCode.INPUT
    assert fragment in capsys.readouterr().err
    assert tree(root) == before
