"""The market source as an Olares app: a chart that runs `olares-pack serve` on the device."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from olares_pack.charts import helm, package
from olares_pack.charts.source import ChartSource
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode, InputError
from olares_pack.lint import LintOptions, lint_source
from olares_pack.market.sourceapp import SourceApp, render_chart

IMAGE = "ghcr.io/example/olares-market:1.0.0@sha256:" + "ab" * 32


def test_the_source_app_is_lint_clean_for_1_12_6_and_runs_serve(tmp_path: Path) -> None:
    assert main(["export", "olares-app", str(tmp_path), "--image", IMAGE, "--version", "1.0.0", "--workers", "2"]) == ExitCode.OK
    data = (tmp_path / "marketsource-1.0.0.tgz").read_bytes()
    findings = lint_source(ChartSource("pkg", "marketsource", package.read_archive_split(data)[1]),
                           LintOptions(olares_version="1.12.6"))
    assert findings == []
    with helm.load_bytes(data) as chart:
        rendered = helm.render(chart, helm.installer_values("marketsource", ["marketsource"]), namespace="marketsource-alice")
    objects = [o for _, o in helm.objects(rendered) if isinstance(o, dict)]
    deploy = next(o for o in objects if o["kind"] == "Deployment")
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == IMAGE
    assert container["args"] == ["serve", "--host", "0.0.0.0", "--port", "8080", "--root", "/srv/market", "--workers", "2"]
    assert deploy["spec"]["template"]["metadata"]["labels"]["app"] == "marketsource"
    manifest = yaml.safe_load((tmp_path / "marketsource" / "OlaresManifest.yaml").read_text())
    assert manifest["entrances"][0]["authLevel"] == "public"  # devices fetch the source without a login
    # the same inputs give the same package
    assert main(["export", "olares-app", str(tmp_path / "again"), "--image", IMAGE, "--version", "1.0.0",
                 "--workers", "2"]) == ExitCode.OK
    assert (tmp_path / "again" / "marketsource-1.0.0.tgz").read_bytes() == data


def test_the_lint_gate_is_real() -> None:
    """The chart goes through the same rules as any app: a broken entrance is an error."""
    files = render_chart(SourceApp("marketsource", "1.0.0", IMAGE))
    files["OlaresManifest.yaml"] = files["OlaresManifest.yaml"].replace('authLevel: "public"', 'authLevel: "secret"')
    findings = lint_source(ChartSource("x", "marketsource", files), LintOptions(olares_version="1.12.6"))
    assert any(f.severity == "error" and f.rule == "manifest.entrances" for f in findings)


@pytest.mark.parametrize("app,message", [
    (SourceApp("marketsource", "1.0.0", "ghcr.io/example/olares-market:1.0.0"), "pin the image by digest"),
    (SourceApp("Market", "1.0.0", IMAGE), "an app name"),
    (SourceApp("marketsource", "1.0", IMAGE), "1.0"),
])
def test_bad_inputs_are_refused(app: SourceApp, message: str) -> None:
    with pytest.raises(InputError, match=message):
        render_chart(app)
