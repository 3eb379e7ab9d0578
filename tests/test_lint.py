"""`olares-pack lint`: one chart per rule that breaks exactly that rule, the clean example charts,
archives, hand-written legacy charts and the output formats."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import APPS, build_file_tree

from olares_pack import olares as targets
from olares_pack.apps.load import parse_app
from olares_pack.charts import package
from olares_pack.charts.source import from_archive_bytes, from_folder
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode
from olares_pack.lint import LintOptions, lint_source
from olares_pack.render import app as render

DIGEST = "sha256:" + "7451496e224c9" + "0" * 51  # a syntactically valid stand-in: tests never pull
NAME = "llamacppqwen36mtpone"


def base_files(target: str = "current") -> dict[str, str]:
    # The per-user form (engine.shared: false): one Deployment whose argv the cases below edit;
    # the shared form's own lint is tested in test_llmbase.py.
    text = (APPS / NAME / "app.yaml").read_text().replace("    digest: null", f"    digest: {DIGEST}") \
        .replace("  build: ad27757", "  shared: false\n  build: ad27757")
    return render.render(parse_app(text), targets.get(target))


def edit(files: dict[str, str], path: str, old: str, new: str, count: int = 1) -> dict[str, str]:
    assert old in files[path], (path, old)
    out = dict(files)
    out[path] = files[path].replace(old, new, count)
    return out


def lint_files(tmp_path: Path, files: dict[str, str], **options: object) -> list:
    chart = build_file_tree(tmp_path / NAME, files)
    return lint_source(from_folder(chart), LintOptions(**options))  # type: ignore[arg-type]


def flagged(findings: list, *, with_info: bool = False) -> set[str]:
    levels = {"error", "warning", "info"} if with_info else {"error", "warning"}
    return {f.rule for f in findings if f.severity in levels}


M, D = "OlaresManifest.yaml", "templates/deployment.yaml"

# rule id -> (target, mutation of the rendered chart, options)
CASES: dict[str, tuple[str, Callable[[dict[str, str]], dict[str, str]], dict[str, object]]] = {
    "chart.version": ("current", lambda f: edit(f, M, 'version: "1.0.15"', 'version: "1.0.8"'), {}),
    "manifest.schema-version": ("legacy", lambda f: edit(f, M, 'apiVersion: "v1"', 'apiVersion: "v2"'), {}),  # 1.12.5: a warning
    "manifest.metadata": ("current", lambda f: edit(f, M, 'title: "Qwen36 27B Long Context"', 'title: "Qwen3.6 27B with a very long context window"'), {}),
    "manifest.entrances": ("current", lambda f: edit(f, M, 'authLevel: "internal"', 'authLevel: "secret"'), {}),
    "manifest.static": ("current", lambda f: edit(f, M, "metadata:\n", "metadata:\n  # owner: {{ .Values.bfl.username }}\n"), {}),
    "manifest.resources": ("current", lambda f: edit(f, M, 'requiredDisk: "25Gi"', 'requiredDisk: "50Gi"'), {}),
    "manifest.mode-arch": ("current", lambda f: edit(f, M, "  supportArch:\n    - amd64", "  supportArch:\n    - arm64"), {}),
    "manifest.supported-gpu": ("current", lambda f: edit(f, M, "  supportArch:", "  supportedGpu: [nvidia]\n  supportArch:"), {}),
    "manifest.workload-replicas": ("current", lambda f: edit(f, M, f"workloadReplicas:\n  {NAME}: 1\n", ""), {}),
    "manifest.olares-dependency": ("current", lambda f: edit(f, M, '">=1.12.6-0"', '">=1.12.3-0"'), {}),
    "manifest.os-window": ("legacy", lambda f: f, {"olares_version": "1.12.6"}),
    "manifest.provider": ("current", lambda f: edit(f, M, "permission:\n", "provider:\n  - name: api\npermission:\n"), {}),
    "manifest.olares-user": ("current", lambda f: edit(f, M, "  - envName: HF_TOKEN", "  - envName: OLARES_USER_HUGGINGFACE_TOKEN"), {}),
    "manifest.api-timeout": ("current", lambda f: edit(f, M, "apiTimeout: 0", "apiTimeout: 15"), {}),
    "manifest.i18n": ("current", lambda f: {**f, "i18n/en-US/OlaresManifest.yaml": "metadata: [unclosed\n"}, {}),
    "kube.schema": ("current", lambda f: edit(f, D, "initialDelaySeconds: 60", 'initialDelaySeconds: "sixty"'), {}),
    "template.namespace": ("current", lambda f: edit(f, "templates/service.yaml", 'namespace: "{{ .Release.Namespace }}"', "namespace: default"), {}),
    "template.hostpath-recreate": ("current", lambda f: edit(f, D, "type: Recreate", "type: RollingUpdate"), {}),
    "template.resources": ("current", lambda f: edit(f, D, '              memory: "40Gi"\n', ""), {}),
    "template.envelope": ("current", lambda f: edit(f, D, 'cpu: "16"', 'cpu: "17"'), {}),
    "template.userspace-permission": ("current", lambda f: edit(f, M, "permission:\n  appCommon: true\n", ""), {}),
    "template.workload-replicas": ("current", lambda f: edit(f, M, f"workloadReplicas:\n  {NAME}: 1\n", f"workloadReplicas:\n  {NAME}: 1\n  ghost: 1\n"), {}),
    "template.replicas-wiring": ("current", lambda f: edit(f, D, f"replicas: {{{{ .Values.workloads.{NAME}.replicaCount }}}}", "replicas: 1"), {}),
    "template.gpu-memory": ("current", lambda f: edit(f, D, "nvidia.com/gpumem: 23552", "nvidia.com/gpumem: 20000"), {}),  # requests != limits
    "template.runtime-class": ("current", lambda f: edit(f, D, "      volumes:\n", "      runtimeClassName: nvidia\n      volumes:\n"), {}),
    "engine.flag": ("current", lambda f: edit(f, D, '            - "--jinja"\n', '            - "--jinja"\n            - "--draft-max"\n            - "4"\n'), {}),
    "engine.value": ("current", lambda f: edit(f, D, '"draft-mtp"', '"mtp"'), {}),
    # issue #50.4: -fa takes a value; llama-server b11434's own parser (the newest binary here, this
    # chart's build ad27757 has none) reads --spec-draft-model as it, and `on` as a stray word
    "engine.parse": ("current", lambda f: edit(f, D, '            - "--flash-attn"\n            - "on"\n',
                                               '            - "-fa"\n            - "--spec-draft-model"\n            - "/models/d.gguf"\n'
                                               '            - "on"\n'), {}),
    "engine.defaults": ("current", lambda f: edit(f, D, '            - "--host"\n            - "0.0.0.0"\n', ""), {}),
    "engine.port": ("current", lambda f: edit(f, D, '            - "--port"\n            - "8000"\n', '            - "--port"\n            - "8001"\n'), {}),
    "image.unpinned": ("current", lambda f: {k: v.replace(f"@{DIGEST}", "") for k, v in f.items()}, {}),
    # set by hand above the declared nvidia.com/gpumem (HAMi sets it from gpumem when absent)
    "gpu.hami-limit": ("current", lambda f: edit(f, D, "          ports:\n", '          env:\n            - name: CUDA_DEVICE_MEMORY_LIMIT_0\n              value: "30000m"\n          ports:\n'), {}),
    "template.raw-yaml": ("current", lambda f: edit(f, D, "imagePullPolicy: IfNotPresent\n", "imagePullPolicy: IfNotPresent\n          imagePullPolicy: IfNotPresent\n"), {}),
    "template.image-ref": ("current", lambda f: edit(f, D, f'image: "docker.io/aamsellem/llama-cpp-mtp:master-ad27757@{DIGEST}"',
                                                       'image: "{{ .Values.noSuchImage }}"', 2), {}),
    "template.routing": ("current", lambda f: edit(f, M, f"    host: {NAME}", "    host: nosuchservice"), {}),
    "secret.plaintext": ("current", lambda f: edit(f, D, "          ports:\n", "          env:\n            - name: HF_TOKEN\n              value: hf_Abcdefghijklmnop1234567890\n          ports:\n"), {}),
}


def test_clean_example_charts_have_no_findings(tmp_path: Path) -> None:
    for target in ("current", "legacy"):
        findings = lint_files(tmp_path / target, base_files(target))
        assert flagged(findings) == set(), [(f.rule, f.message) for f in findings]


@pytest.mark.parametrize("rule", sorted(CASES))
def test_each_rule_fires_alone(tmp_path: Path, rule: str) -> None:
    target, mutate, options = CASES[rule]
    findings = lint_files(tmp_path, mutate(base_files(target)), **options)
    assert flagged(findings) == {rule}, [(f.rule, f.severity, f.message) for f in findings]
    assert all(f.message for f in findings)


def test_engine_hints_name_the_replacement(tmp_path: Path) -> None:
    findings = lint_files(tmp_path / "a", CASES["engine.value"][1](base_files()))
    assert any("draft-mtp" in f.hint for f in findings if f.rule == "engine.value")
    findings = lint_files(tmp_path / "b", CASES["engine.flag"][1](base_files()))
    assert any("--spec-draft-n-max" in f.hint for f in findings if f.rule == "engine.flag")


def test_spec_type_mtp_is_fine_on_the_build_that_had_it(tmp_path: Path) -> None:
    files = CASES["engine.value"][1](base_files())
    findings = lint_files(tmp_path, files, engine_build="pr22673")
    assert "engine.value" not in flagged(findings)


def test_strict_makes_an_unpinned_image_an_error(tmp_path: Path) -> None:
    files = CASES["image.unpinned"][1](base_files())
    findings = lint_files(tmp_path, files, strict=True)
    assert [f.severity for f in findings if f.rule == "image.unpinned"] == ["error"]


def test_findings_carry_file_and_line(tmp_path: Path) -> None:
    findings = lint_files(tmp_path, CASES["manifest.entrances"][1](base_files()))
    f = next(f for f in findings if f.rule == "manifest.entrances")
    text = CASES["manifest.entrances"][1](base_files())[M]
    expected_line = next(i for i, line in enumerate(text.splitlines(), 1) if "authLevel" in line)
    assert (f.file, f.line, f.path) == (M, expected_line, "entrances[0].authLevel")


def test_archives_lint_like_folders() -> None:
    files = CASES["template.envelope"][1](base_files())
    data = package.build_archive(NAME, files)
    findings = lint_source(from_archive_bytes(data, "x.tgz"), LintOptions())
    assert flagged(findings) == {"template.envelope"}


HAND_WRITTEN_LEGACY = {
    # The example app as its maintainer shipped 1.0.8 (hand-written, before olares-pack): 0.10.0/v2, flat resources,
    # nvidia.com/gpu, OLARES_USER_* values, hard-coded replicas.
    "Chart.yaml": "apiVersion: v2\nname: llamacppqwen36mtpone\nversion: 1.0.8\nappVersion: '0.1.0'\ntype: application\n",
    "values.yaml": "{}\n",
    "OlaresManifest.yaml": """olaresManifest.version: '0.10.0'
olaresManifest.type: app
apiVersion: 'v2'
metadata:
  name: llamacppqwen36mtpone
  icon: https://example.org/icon.png
  description: Qwen3.6 27B at 262K context with MTP speculative decoding
  title: Qwen36 27B Long Context
  version: '1.0.8'
  categories: [AI]
entrances:
  - name: llamacppqwen36mtpone
    host: llamacppqwen36mtpone
    port: 8000
    title: Qwen36 27B MTP
    authLevel: internal
    openMethod: window
spec:
  versionName: '0.1.0'
  requiredCpu: 4
  limitedCpu: 16
  requiredMemory: 20Gi
  limitedMemory: 40Gi
  requiredDisk: 25Gi
  limitedDisk: 40Gi
  requiredGpu: 1Gi
  limitedGpu: 24Gi
  supportArch: [amd64]
  subCharts:
    - name: llamacppqwen36mtpone
      shared: true
permission:
  appData: true
options:
  apiTimeout: 0
  dependencies:
    - name: olares
      version: '>=1.12.3-0,<1.12.6'
      type: system
{{- if and .Values.admin .Values.bfl.username (eq .Values.admin .Values.bfl.username) }}
envs:
  - envName: OLARES_USER_HUGGINGFACE_TOKEN
    required: false
    valueFrom:
      envName: OLARES_USER_HUGGINGFACE_TOKEN
{{- end }}
""",
    "templates/deployment.yaml": """apiVersion: apps/v1
kind: Deployment
metadata:
  name: llamacppqwen36mtpone
  namespace: {{ .Release.Namespace }}
  annotations:
    applications.app.bytetrade.io/gpu-inject: "true"
spec:
  replicas: 1
  selector:
    matchLabels: {app: llamacppqwen36mtpone}
  strategy: {type: Recreate}
  template:
    metadata:
      labels: {app: llamacppqwen36mtpone}
    spec:
      containers:
        - name: llamacpp
          image: docker.io/aamsellem/llamacpp-mtp:0.1.0
          args: [--model, /models/Qwen3.6-27B-UD-Q3_K_XL.gguf, --alias, qwen3.6-27b-mtp, --host, 0.0.0.0,
                 --port, "8000", --n-gpu-layers, "99", --threads, "16", --cache-type-k, q4_0, --cache-type-v, q4_0,
                 --batch-size, "512", --ubatch-size, "512", --parallel, "1", --flash-attn, "on", --jinja,
                 --chat-template-kwargs, '{"enable_thinking": false}',
                 --ctx-size, "262144", --spec-type, mtp, --spec-draft-n-max, "5"]
          env:
            - name: HF_TOKEN
              value: "{{ .Values.olaresEnv.OLARES_USER_HUGGINGFACE_TOKEN }}"
          ports: [{containerPort: 8000}]
          resources:
            requests: {cpu: "4", memory: 24Gi, nvidia.com/gpu: 1}
            limits: {cpu: "16", memory: 40Gi, nvidia.com/gpu: 1}
          volumeMounts: [{name: models, mountPath: /models}]
      volumes:
        - name: models
          hostPath: {path: "{{ .Values.userspace.appData }}/models", type: DirectoryOrCreate}
---
apiVersion: v1
kind: Service
metadata:
  name: llamacppqwen36mtpone
  namespace: {{ .Release.Namespace }}
spec:
  selector: {app: llamacppqwen36mtpone}
  ports: [{port: 8000, targetPort: 8000}]
""",
}


def test_hand_written_legacy_chart_is_refused_on_1_12_6(tmp_path: Path) -> None:
    chart = build_file_tree(tmp_path / NAME, HAND_WRITTEN_LEGACY)
    findings = lint_source(from_folder(chart), LintOptions(olares_version="1.12.6", engine_build="pr22673"))
    window = [f for f in findings if f.rule == "manifest.os-window"]
    assert window and window[0].severity == "error" and "1.12.6" in window[0].message
    # and what else a maintainer learns about it
    rules = flagged(findings)
    # requests.memory 24Gi > requiredMemory 20Gi, but the installer skips that check for v2 charts
    assert "template.envelope" not in rules
    assert "template.gpu-memory" in rules  # nvidia.com/gpu
    assert "engine.value" not in rules  # --spec-type mtp existed on that build


def test_cli_formats_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = build_file_tree(tmp_path / "good" / NAME, base_files())
    bad = build_file_tree(tmp_path / "bad" / NAME, CASES["engine.value"][1](base_files()))
    assert main(["lint", str(good)]) == ExitCode.OK
    capsys.readouterr()
    assert main(["lint", str(bad), "--format", "json"]) == ExitCode.FINDINGS
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["errors"] == 1 and doc["findings"][0]["rule"] == "engine.value"
    assert main(["lint", str(bad), "--format", "github"]) == ExitCode.FINDINGS
    out = capsys.readouterr().out
    assert out.startswith("::error file=") and "title=engine.value" in out
    warn = build_file_tree(tmp_path / "warn" / NAME, CASES["image.unpinned"][1](base_files()))
    assert main(["lint", str(warn)]) == ExitCode.OK
    assert main(["lint", str(warn), "--strict"]) == ExitCode.FINDINGS
    capsys.readouterr()
    assert main(["lint", str(warn), "--format", "github"]) == ExitCode.OK
    assert "title=image.unpinned (policy)" in capsys.readouterr().out  # olares-pack's own rule, marked
    assert main(["lint", str(tmp_path / "missing")]) == ExitCode.INPUT


def test_app_manifests_are_rendered_per_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", str(APPS), "--format", "json"]) == ExitCode.OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["charts"] == 3 and doc["summary"]["errors"] == 0


# ---- device-proven patterns that must not be errors (issue #14)


def severities(findings: list, rule: str) -> set[str]:
    return {f.severity for f in findings if f.rule == rule}


def test_a_version_with_leading_zeros_is_a_warning(tmp_path: Path) -> None:
    """26.08.1-style versions install (Helm and the installer parse them loosely); only
    `olares-cli market upgrade` refuses them."""
    files = edit(base_files(), M, 'version: "1.0.15"', 'version: "26.08.01"')
    files = edit(files, "Chart.yaml", 'version: "1.0.15"', 'version: "26.08.01"')
    found = lint_files(tmp_path / "a", files)
    assert severities(found, "chart.version") == {"warning"}
    # a version nothing reads is still an error
    bad = edit(edit(base_files(), M, 'version: "1.0.15"', 'version: "one"'), "Chart.yaml", 'version: "1.0.15"', 'version: "one"')
    assert severities(lint_files(tmp_path / "b", bad), "chart.version") == {"error"}


def test_unknown_metadata_keys_are_a_warning(tmp_path: Path) -> None:
    files = edit(base_files(), M, "  appid: llamacppqwen36mtpone\n", "  appid: llamacppqwen36mtpone\n  maintainerNote: hand-written\n")
    found = [f for f in lint_files(tmp_path, files) if f.rule == "manifest.metadata"]
    assert [f.severity for f in found] == ["warning"] and "'maintainerNote'" in found[0].message


def test_an_object_without_a_namespace_is_fine(tmp_path: Path) -> None:
    """Helm puts it in the release namespace and the installer's check skips it; another
    namespace is still an error."""
    files = edit(base_files(), "templates/service.yaml", '  namespace: "{{ .Release.Namespace }}"\n', "")
    assert "template.namespace" not in flagged(lint_files(tmp_path / "a", files), with_info=True)
    files = edit(base_files(), "templates/service.yaml", 'namespace: "{{ .Release.Namespace }}"', "namespace: default")
    assert severities(lint_files(tmp_path / "b", files), "template.namespace") == {"error"}


SIDECAR = '''      containers:
        - name: dashboard
          image: "docker.io/library/nginx:1.27@sha256:''' + "ab" * 32 + '''"
          ports:
            - name: ui
              containerPort: 3000
          resources:
            requests: {cpu: 50m, memory: 64Mi}
            limits: {cpu: 200m, memory: 128Mi}
'''


def test_a_service_port_of_a_sidecar_is_not_the_engines(tmp_path: Path) -> None:
    """Service -> targetPort -> container: a dashboard beside the engine has its own port."""
    files = edit(base_files(), D, "      containers:\n", SIDECAR)
    svc = "    - name: http\n      port: 8000\n      targetPort: http\n      protocol: TCP\n"
    files = edit(files, "templates/service.yaml", svc, svc + "    - name: ui\n      port: 3000\n      targetPort: ui\n")
    assert "engine.port" not in flagged(lint_files(tmp_path / "a", files), with_info=True)
    # a Service port aimed at the engine's container on the wrong port is still an error
    wrong = edit(files, "templates/service.yaml", "      targetPort: http\n", "      targetPort: 8080\n")
    assert severities(lint_files(tmp_path / "b", wrong), "engine.port") == {"error"}


# ---------------------------------------------------------------- policy class, --allow

def test_policy_findings_are_a_class_of_their_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = build_file_tree(tmp_path / NAME, CASES["secret.plaintext"][1](base_files()))
    assert main(["lint", str(chart), "--format", "json"]) == ExitCode.FINDINGS
    doc = json.loads(capsys.readouterr().out)
    got = {(f["rule"], f["severity"], f["class"]) for f in doc["findings"] if f["severity"] != "info"}
    assert got == {("secret.plaintext", "error", "policy")}
    assert doc["summary"]["policy_errors"] == 1
    # allowed: reported as a warning, and lint passes
    assert main(["lint", str(chart), "--format", "json", "--allow", "secret.plaintext"]) == ExitCode.OK
    doc = json.loads(capsys.readouterr().out)
    assert [(f["severity"], f["message"].endswith("(allowed)")) for f in doc["findings"] if f["severity"] != "info"] == [("warning", True)]


def test_an_installer_rule_cannot_be_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = build_file_tree(tmp_path / NAME, CASES["template.envelope"][1](base_files()))
    assert main(["lint", str(chart), "--allow", "template.envelope"]) == ExitCode.INPUT
    assert "only policy rules can be allowed" in capsys.readouterr().err


def test_release_refuses_on_a_policy_error_unless_allowed(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conftest import tree_digest

    app_yaml = repo / "apps" / NAME / "app.yaml"
    app_yaml.write_text(app_yaml.read_text().replace("\nresources:", "\nenv:\n  API_TOKEN: hf_Abcdefghijklmnop1234567890\n\nresources:", 1))
    args = ["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", "x", "--date", "2026-06-01"]
    before = tree_digest(repo)
    assert main(args) == ExitCode.FINDINGS
    assert "secret.plaintext" in capsys.readouterr().out
    assert tree_digest(repo) == before
    assert main([*args, "--allow", "engine.value"]) == ExitCode.INPUT  # an installer's refusal is not the maintainer's to waive
    assert main([*args, "--allow", "secret.plaintext"]) == ExitCode.OK


def test_a_gpu_memory_suffix_is_a_warning(tmp_path: Path) -> None:
    # Kubernetes takes "23Gi" (an integer quantity); HAMi counts nvidia.com/gpumem in MiB
    files = edit(base_files(), D, "nvidia.com/gpumem: 23552", 'nvidia.com/gpumem: "23Gi"', 2)
    assert {(f.rule, f.severity) for f in lint_files(tmp_path, files) if f.severity != "info"} == {("template.gpu-memory", "warning")}


def test_an_app_linted_for_a_release_is_linted_as_that_release_is_offered_it(capsys: pytest.CaptureFixture[str]) -> None:
    app = str(APPS / "llamacppqwen36mtpone" / "app.yaml")
    for release, offered, other in (("1.12.6", "current", "legacy"), ("1.12.5", "legacy", "current")):
        assert main(["lint", app, "--olares", release, "--format", "json"]) == ExitCode.OK
        captured = capsys.readouterr()
        assert [c["chart"] for c in json.loads(captured.out)["charts"]] == [f"{app}@{offered}"]
        assert f"{app}@{other}: not offered to Olares {release}" in captured.err
    # a target named on the command line is linted whatever its window: the window is then the error
    assert main(["lint", app, "--olares", "1.12.6", "--target", "legacy", "--format", "json"]) == ExitCode.FINDINGS
    assert [f["rule"] for f in json.loads(capsys.readouterr().out)["findings"] if f["severity"] == "error"] == ["manifest.os-window"]
