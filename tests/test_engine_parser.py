"""The engines' own parsers as lint's gate (issues #50.4, #52.14): llama-server's argv parsed by the
real llama-server of the build, and vLLM's options read as vLLM's FlexibleArgumentParser reads them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_lint import DIGEST, D, base_files, edit, lint_files
from test_lint_device import vllm_chart

from olares_pack.engines import argv_check
from olares_pack.engines.vllmargs import serve_flags

# ---------------------------------------------------------------- vLLM (#52.14)


def test_vllm_names_options_as_its_flexible_parser_does() -> None:
    # vllm/utils/argparse_utils.py FlexibleArgumentParser.parse_args: `_` -> `-` in the name (not
    # in the value, not after the first `.`), `--x.key v` is a key of `--x`, `-O3` is -O
    argv = ["serve", "/models/m", "--compilation_config", '{"cudagraph_mode": "FULL_AND_PIECEWISE"}',
            "--max_model_len=4096", "--speculative_config.num_speculative_tokens", "3",
            "--compilation-config.pass_config.enable_fusion=true", "--kv-transfer-config.kv_role+", "a,b",
            "-O3", "-tp", "2", "--served-model-name", "my_model", "--port", "-1", "--help=all", "--", "--not-an-option"]
    assert serve_flags(argv) == [
        ("--compilation-config", "--compilation_config"), ("--max-model-len", "--max_model_len=4096"),
        ("--speculative-config", "--speculative_config.num_speculative_tokens"),
        ("--compilation-config", "--compilation-config.pass_config.enable_fusion=true"),
        ("--kv-transfer-config", "--kv-transfer-config.kv_role+"), ("-O", "-O3"), ("-tp", "-tp"),
        ("--served-model-name", "--served-model-name"), ("--port", "--port"), ("--help", "--help=all")]


UNDERSCORED = "".join(f"            - {json.dumps(w)}\n" for w in (
    "--compilation_config", '{"cudagraph_mode": "FULL"}', "--max_num_seqs=4", "--speculative-config.method", "mtp",
    "--no_enable_log_requests", "-O3"))


def test_lint_accepts_what_vllms_parser_accepts(tmp_path: Path) -> None:
    # issue #52.14: a device-proven chart passes --compilation_config; lint called it unknown
    findings = vllm_chart(tmp_path / "a", "vllm/vllm-openai:v0.20.0", UNDERSCORED)
    assert [f.message for f in findings if f.rule in ("engine.flag", "helm.render")] == []
    assert [f.message for f in findings if f.rule == "engine.build"] == ["vLLM 0.20.0 (image tag v0.20.0)"]  # it was checked


def test_lint_still_refuses_an_unknown_option_in_any_spelling(tmp_path: Path) -> None:
    findings = vllm_chart(tmp_path / "a", "vllm/vllm-openai:v0.20.0",
                          '            - "--max_model_lenn=4096"\n            - "--not-a-config.key"\n            - "1"\n')
    assert sorted((f.severity, f.message) for f in findings if f.rule == "engine.flag") == [
        ("error", "vLLM 0.20.0 does not accept --max_model_lenn (read as --max-model-lenn): vllm serve exits at start"),
        ("error", "vLLM 0.20.0 does not accept --not-a-config.key (read as --not-a-config): vllm serve exits at start")]


@pytest.mark.parametrize("release,accepted", [("v0.11.0", False), ("v0.20.0", True)])
def test_a_short_option_is_checked_against_its_release(tmp_path: Path, release: str, accepted: bool) -> None:
    # -cc (--compilation-config) came with 0.14.0 (engines/data/vllm-flags.json)
    findings = vllm_chart(tmp_path / "a", f"vllm/vllm-openai:{release}", '            - "-cc"\n            - "{}"\n')
    assert any("-cc" in f.message for f in findings if f.rule == "engine.flag") is not accepted


# ---------------------------------------------------------------- llama-server's own parser (#50.4)

needs_llama = pytest.mark.skipif(argv_check.binary("b11434") is None,
                                 reason="llama-server b11434 is not built (`make llama-server`)")

# the shape of the typed imports of gemma4e2bone / gemma426ba4bone (issue #50): `-fa on` became
# `-fa --mtp-head /models/<drafter>.gguf ... on`; the drafter's file name comes from the env
TYPED_IMPORT = ('            - "--mlock"\n            - "-fa"\n            - "--mtp-head"\n'
                '            - "/models/$(MTP_FILE)"\n            - "--jinja"\n            - "on"\n')
ENV = '          env:\n            - name: MTP_FILE\n              value: "drafter.Q4_K_M.gguf"\n          ports:\n'


def _chart(image: str | None = None, flash: str = TYPED_IMPORT) -> dict[str, str]:
    files = edit(base_files(), D, '            - "--flash-attn"\n            - "on"\n', flash)
    files = edit(files, D, "          ports:\n", ENV)
    if image:
        files = {k: v.replace("docker.io/aamsellem/llama-cpp-mtp:master-ad27757", image) for k, v in files.items()}
    return files


def _parse_findings(findings: list) -> list[tuple[str, str]]:
    return [(f.severity, f.message) for f in findings if f.rule == "engine.parse"]


ENGINE_TEXT = "error while handling argument \"-fa\": error: unknown value for --flash-attn: '--mtp-head'"
# the same defect in upstream b11434's own spelling (it has neither --mlock nor --mtp-head)
UPSTREAM = '            - "-fa"\n            - "--spec-draft-model"\n            - "/models/$(MTP_FILE)"\n            - "on"\n'


@needs_llama
def test_the_exact_build_refuses_a_flag_given_as_a_value(tmp_path: Path) -> None:
    found = _parse_findings(lint_files(tmp_path, _chart(flash=UPSTREAM), engine_build="b11434"))
    assert len(found) == 1 and found[0][0] == "error", found
    assert ENGINE_TEXT.replace("--mtp-head", "--spec-draft-model") in found[0][1]
    assert "llama-server b11434's own parser)" in found[0][1]


@needs_llama
def test_a_fork_without_a_binary_is_parsed_around_what_it_adds(tmp_path: Path) -> None:
    # the image of the apps: a fork of no declared build; --mlock and the drafter flags are
    # the registry's business, the swallowed --mtp-head is not
    found = _parse_findings(lint_files(tmp_path, _chart(f"docker.io/aamsellem/llamacpp-atomic-mtp:0.1.0@{DIGEST}".split("@")[0])))
    assert len(found) == 1 and found[0][0] == "error", found
    assert ENGINE_TEXT in found[0][1] and "set aside" in found[0][1] and "--mlock" in found[0][1]


@needs_llama
def test_a_good_argv_is_accepted_and_says_which_parser(tmp_path: Path) -> None:
    good = '            - "-fa"\n            - "on"\n            - "--spec-draft-model"\n            - "/models/$(MTP_FILE)"\n'
    found = _parse_findings(lint_files(tmp_path, _chart(flash=good), engine_build="b11434"))
    assert found == [("info", "parsed by llama-server b11434's own parser: accepted")], found


def test_the_argv_through_kubernetes_and_a_shell_wrapper() -> None:
    env = argv_check.container_env({"env": [{"name": "DRAFT", "value": "/models/$(NAME).gguf"},
                                            {"name": "ARGS", "value": "-c 4096 --mlock"}]}, {})
    env["NAME"] = "d"  # defined after DRAFT: Kubernetes leaves DRAFT's $(NAME) as written
    assert env["DRAFT"] == "/models/$(NAME).gguf"
    script = 'set -e\nif [ -n "$X" ]; then echo "$X"; fi\nexec /app/llama-server --port "${PORT:-8080}" $ARGS -fa "$ARGS" \\\n  --model \'$(M)\' "$@"'
    c = {"command": ["/bin/sh", "-c", script, "sh", "--jinja"], "image": "alpine"}
    assert argv_check.engine_argv(c, {"ARGS": "-c 4096 --mlock"}) == \
        ["--port", "8080", "-c", "4096", "--mlock", "-fa", "-c 4096 --mlock", "--model", "$(M)", "--jinja"]
    assert argv_check.unresolved(["--model", "$(M)"]) == ["$(M)"]


@needs_llama
def test_a_container_file_gets_a_stand_in_and_results_are_cached() -> None:
    argv_check._run.cache_clear()
    r = argv_check.parse(["--chat-template-file", "/models/t.jinja", "-fa", "on"], "b11434")
    assert r is not None and r.ok and r.stand_ins == ("/models/t.jinja",)
    bad = argv_check.parse(["-fa", "--mtp-head", "x", "on"], "b11434", {"LLAMA_ARG_CTX_SIZE": "4096"})
    again = argv_check.parse(["-fa", "--mtp-head", "x", "on"], "b11434", {"LLAMA_ARG_CTX_SIZE": "4096", "PATH": "/x"})
    assert bad == again and bad is not None and not bad.ok and argv_check.takes_flag_as_value(bad)
    assert argv_check._run.cache_info().hits >= 1
    env_bad = argv_check.parse(["-fa", "on"], "b11434", {"LLAMA_ARG_CTX_SIZE": "lots"})
    assert env_bad is not None and "LLAMA_ARG_CTX_SIZE" in env_bad.error  # the container's env is parsed too


# ---------------------------------------------------------------- what the flag history can claim (#52.12)


def test_the_first_build_with_a_change_is_claimed_only_where_the_table_holds_the_one_before() -> None:
    from olares_pack.engines import registry

    # the table samples b9093, b9101, b9254, ...: a change of 2026-05-13 came after b9101 (2026-05-11)
    # and is in b9254 (2026-05-21), in a build the table does not hold
    assert registry.first_builds("2026-05-13", "b11434") == "first in a llama.cpp build between b9101 and b9254"
    assert registry.first_builds("2026-04-29") == "in llama.cpp b9093 or earlier"
    assert registry.first_builds("2026-05-13", "b9101") is None


def test_the_history_agrees_with_the_builds_it_was_read_from() -> None:
    # every removal the history dates must not postdate a table build that already declares the
    # flag removed (--draft-min: PR #22397, removed in b9093 of 2026-05-10, not on 2026-05-13)
    from olares_pack.engines import registry

    table = registry.flag_table("llamacpp")
    for ev in registry.history("llamacpp"):
        if ev.kind != "removed":
            continue
        row = next(f for f in table["flags"] if ev.old in f["names"])
        first_removed = min((b for b in row["builds"] if row.get("removed")), key=registry.build_number, default=None)
        if first_removed is not None:
            assert ev.date <= table["builds"][first_removed]["date"], (ev.old, ev.date, first_removed)


@needs_llama
def test_one_call_says_which_parser_judged() -> None:
    # argv_check.check: what import's proof and the node's runner call
    bad = ["--port", "8080", "-fa", "--spec-draft-model", "/models/d.gguf", "on"]
    exact = argv_check.check(bad, "b11434")
    assert (exact.how, exact.parser, exact.refused) == ("exact", "b11434", True)
    assert exact.used("b11434") == "llama-server b11434's own parser"
    fork = argv_check.check(["--mlock", *bad], "b8720", fork=True)  # a build with no binary here, a fork's flag
    assert (fork.how, fork.refused, fork.set_aside) == ("reference", True, ("--mlock",))
    assert fork.result is not None and "unknown value for --flash-attn: '--spec-draft-model'" in fork.result.error
    good = argv_check.check(["--mlock", "-fa", "on"], "b8720", fork=True)
    assert not good.refused and good.set_aside == ("--mlock",)
