"""`olares-pack diff`: flag-aware comparison of two versions or two charts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import build_file_tree, published_app
from test_lint import HAND_WRITTEN_LEGACY

from olares_pack import olares as targets
from olares_pack.charts.source import ChartSource, from_folder
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode
from olares_pack.diff import compare, facts, suggested_changes
from olares_pack.render import app as render

NAME = "llamacppqwen36mtpone"


def diff_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["diff", *args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def keyed(doc: dict) -> dict[tuple[str, str], dict]:
    return {(c["section"], c["key"]): c for c in doc["changes"]}


def test_1_0_5_to_1_0_9(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = diff_json(capsys, NAME, "1.0.5", "1.0.9")
    assert code == 1
    ch = keyed(doc)
    args = {k: v for k, v in ch.items() if k[0] == "arguments"}
    assert set(args) == {("arguments", "--spec-type"), ("arguments", "--spec-draft-n-max")}
    assert (args[("arguments", "--spec-type")]["old"], args[("arguments", "--spec-type")]["new"]) == ("mtp", "draft-mtp")
    assert "renamed upstream" in args[("arguments", "--spec-type")]["note"]
    assert "PR #23269" in args[("arguments", "--spec-draft-n-max")]["note"]
    assert {k[1] for k in ch if k[0] == "image"} == {"repository", "tag"}
    assert {k[1] for k in ch if k[0] == "model"} == {"repo", "files"}
    assert not [k for k in ch if k[0] == "resources"]


def test_1_0_5_to_1_0_7_is_only_the_model_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = diff_json(capsys, NAME, "1.0.5", "1.0.7")
    ch = keyed(doc)
    assert set(ch) == {("model", "files"), ("manifest", "version"), ("manifest", "texts")}
    assert ch[("manifest", "texts")]["new"] == "changed: spec.upgradeDescription"  # each version's "what's new"
    assert ch[("model", "files")]["new"] == "Qwen3.6-27B-MTP-UD-Q2_K_XL.gguf"


def test_1_0_8_to_1_0_9_changes_no_resource(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = diff_json(capsys, NAME, "1.0.8", "1.0.9")
    assert code == 1 and not [c for c in doc["changes"] if c["section"] == "resources"]


def test_same_version_is_equal(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = diff_json(capsys, NAME, "1.0.15", "current")
    assert code == 0 and doc["equal"] is True


def test_markdown_is_ready_for_changelog_notes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", NAME, "1.0.8", "1.0.9", "--format", "markdown"]) == ExitCode.FINDINGS
    out = capsys.readouterr().out
    assert "- arguments: `--spec-type` mtp → draft-mtp (same mode, renamed upstream on 2026-05-13)" in out


def test_unknown_version_is_an_input_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", NAME, "1.0.6", "1.0.9"]) == ExitCode.INPUT
    assert "1.0.6 is not published" in capsys.readouterr().err


def _hand_written(**replace: str) -> dict[str, str]:
    files = dict(HAND_WRITTEN_LEGACY)
    for old, new in replace.items():
        files["templates/deployment.yaml"] = files["templates/deployment.yaml"].replace(old, new)
    return files


def test_spellings_that_mean_the_same_are_no_change(tmp_path: Path) -> None:
    """-ngl = --n-gpu-layers, --flag=value = --flag value, LLAMA_ARG_* = the flag,
    $(VAR) from a ConfigMap, ${VAR:-default} in a shell wrapper."""
    a = build_file_tree(tmp_path / "a" / NAME, HAND_WRITTEN_LEGACY)
    spelled = _hand_written(**{
        '--n-gpu-layers, "99"': '-ngl, "99"',
        '--ctx-size, "262144"': '"--ctx-size=$(CTX)"',
        '--parallel, "1", ': "",
        "          env:\n": "          env:\n            - name: LLAMA_ARG_N_PARALLEL\n              value: \"1\"\n"
                            "            - name: CTX\n              valueFrom: {configMapKeyRef: {name: engine, key: ctx}}\n",
    })
    spelled["templates/configmap.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: engine\n  namespace: {{ .Release.Namespace }}\ndata:\n  ctx: \"262144\"\n"
    b = build_file_tree(tmp_path / "b" / NAME, spelled)
    res = compare(facts(from_folder(a)), facts(from_folder(b)))
    assert [c for c in res.changes if c.section == "arguments"] == []


def test_shell_wrapper_with_defaults(tmp_path: Path) -> None:
    a = build_file_tree(tmp_path / "a" / NAME, HAND_WRITTEN_LEGACY)
    args_start = HAND_WRITTEN_LEGACY["templates/deployment.yaml"].index("          args: [")
    args_end = HAND_WRITTEN_LEGACY["templates/deployment.yaml"].index("]\n", args_start) + 2
    script = ('          command: ["/bin/sh", "-c"]\n          args:\n            - |\n'
              '              exec /app/llama-server --model /models/Qwen3.6-27B-UD-Q3_K_XL.gguf --alias qwen3.6-27b-mtp \\\n'
              '                --host 0.0.0.0 --port 8000 -ngl 99 -t 16 -ctk q4_0 -ctv q4_0 -b 512 -ub 512 -np 1 -fa on --jinja \\\n'
              "                --chat-template-kwargs '{\"enable_thinking\": false}' \\\n"
              '                -c ${CTX:-262144} --spec-type mtp --spec-draft-n-max ${NMAX:-4}\n')
    files = dict(HAND_WRITTEN_LEGACY)
    t = files["templates/deployment.yaml"]
    files["templates/deployment.yaml"] = t[:args_start] + script + t[args_end:]
    b = build_file_tree(tmp_path / "b" / NAME, files)
    res = compare(facts(from_folder(a), ), facts(from_folder(b)))
    args = [(c.key, c.old, c.new) for c in res.changes if c.section == "arguments"]
    assert args == [("--spec-draft-n-max", "5", "4")]


def test_hand_written_legacy_chart_against_the_rendered_current_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    legacy = build_file_tree(tmp_path / "hand" / NAME, HAND_WRITTEN_LEGACY)
    app = published_app(NAME, "1.0.8")
    current = build_file_tree(tmp_path / "rendered" / NAME, render.render(app, targets.CURRENT))
    code, doc = diff_json(capsys, str(legacy), str(current), "--engine-build", "pr22673")
    assert code == 1
    ch = keyed(doc)
    gen = ch[("manifest", "manifest generation")]
    assert (gen["old"], gen["new"]) == ("0.10.0/v2", "0.12.0/v3")
    assert ch[("manifest", "olares dependency")]["new"] == ">=1.12.6-0"
    # the same engine arguments, modulo spelling and the model path; but the hand-written chart
    # hands the Hugging Face token to the engine (HF_TOKEN is llama-server's --hf-token), the
    # rendered one only to its download step
    args = {k[1]: v for k, v in ch.items() if k[0] == "arguments"}
    assert list(args) == ["--hf-token"] and (args["--hf-token"]["old"], args["--hf-token"]["new"]) == ("(empty)", None)


def test_rendered_objects_are_matched_by_kind_and_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = diff_json(capsys, NAME, "1.0.7", "1.0.8", "--rendered")
    objs = [c["key"] for c in doc["changes"] if c["section"] == "objects"]
    assert any(k.startswith("Deployment/llamacppqwen36mtpone spec.template.spec.containers[0].args[1]") for k in objs)
    assert any(k.startswith("Deployment/llamacppqwen36mtpone spec.template.spec.initContainers[0].env") for k in objs)
    assert all(k.split(" ")[0] in ("Deployment/llamacppqwen36mtpone", "ConfigMap/llamacppqwen36mtpone-download",
                                   "Secret/llamacppqwen36mtpone-hf-token", "Service/llamacppqwen36mtpone") for k in objs)


def test_changes_prefill_a_changelog_entry() -> None:
    a = published_app(NAME, "1.0.8")
    b = published_app(NAME, "1.0.9")
    fa = facts(ChartSource("a", NAME, render.render(a, targets.CURRENT)))
    fb = facts(ChartSource("b", NAME, render.render(b, targets.CURRENT)))
    kinds = [k for k, _ in suggested_changes(compare(fa, fb))]
    assert kinds.count("engine-args") == 3 and "image" in kinds and "model" in kinds and "packaging" in kinds
