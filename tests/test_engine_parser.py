"""The engines' own parsers as lint's gate (issues #50.4, #52.14): llama-server's argv parsed by the
real llama-server of the build, and vLLM's options read as vLLM's FlexibleArgumentParser reads them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_lint_device import vllm_chart

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
