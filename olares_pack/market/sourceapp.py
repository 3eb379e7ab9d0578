"""`olares-pack export olares-app`: this market source as an Olares app, so that a maintainer can
host it on the Olares One itself.

The image is built from the repository's Dockerfile with the catalogue baked in (market-index.json,
packages/, icons); the chart runs `olares-pack serve` behind a public entrance (the market service
of each device that adds the source fetches it without a login) and is linted with the rules of
the current target (Olares 1.12.6+) before it is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from olares_pack import __version__, olares
from olares_pack.charts import package
from olares_pack.common import fsio
from olares_pack.common import versions as appver
from olares_pack.common.errors import InputError
from olares_pack.common.naming import NAME_RE, RESERVED_NAMES
from olares_pack.render import app as render

FILES = {
    "Chart.yaml": "source/Chart.yaml.j2",
    "values.yaml": "source/values.yaml.j2",
    "OlaresManifest.yaml": "source/OlaresManifest.yaml.j2",
    "owners": "owners.j2",
    ".helmignore": "helmignore.j2",
    "templates/deployment.yaml": "source/deployment.yaml.j2",
    "templates/service.yaml": "source/service.yaml.j2",
}
DIGEST_RE = re.compile(r"^[^\s@]+(:[\w.-]+)?@sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class SourceApp:
    name: str
    version: str
    image: str  # repository[:tag]@sha256:digest
    title: str = "LLM market source"
    port: int = 8080
    workers: int = 1
    # Measured: the server holds a 200-app x 10-version catalogue in 76 MiB (measurements/scale_bench.py).
    memory: tuple[str, str] = ("128Mi", "512Mi")
    cpu: tuple[str, str] = ("100m", "1")
    disk: str = "1Gi"

    def check(self) -> None:
        if not NAME_RE.match(self.name) or self.name in RESERVED_NAMES:
            raise InputError(f"{self.name!r}: an app name is 1-30 lower-case letters and digits, not a reserved name")
        if not DIGEST_RE.match(self.image):
            raise InputError(f"{self.image!r}: pin the image by digest (repository:tag@sha256:...), "
                             "as docker push or docker buildx imagetools inspect print it")
        try:
            appver.parse(self.version)
        except ValueError:
            raise InputError(f"{self.version!r} is not a semantic version (e.g. 1.0.0)") from None


def render_chart(app: SourceApp) -> dict[str, str]:
    app.check()
    env = render._environment()
    ctx = {
        "name": app.name, "version": app.version, "image": app.image, "title": app.title, "port": app.port,
        "workers": app.workers, "memory": app.memory, "cpu": app.cpu, "disk": app.disk, "tool_version": __version__,
        "icon": "https://raw.githubusercontent.com/beclab/apps/main/market/icon.png",
        "description": "An Olares market source of GPU LLM servers, served by olares-pack",
        "full_description": "The catalogue baked into this image, served on the four routes an Olares device "
                            "syncs from. Add its entrance URL as a market source on each device.",
        "upgrade": f"**{app.version}**: the catalogue as built into {app.image}",
        "app": SimpleNamespace(chart_owners=["olares-pack"]),  # what owners.j2 reads
    }
    files = {path: env.get_template(tpl).render(ctx) for path, tpl in FILES.items()}
    return dict(sorted(files.items()))


def export(app: SourceApp, out: Path) -> tuple[Path, list]:
    """Lint the chart for the current target; write OUT/<name>/ and OUT/<name>-<version>.tgz when
    it has no errors. Returns the package path and the findings."""
    from olares_pack.charts.source import ChartSource
    from olares_pack.lint import LintOptions, lint_source

    files = render_chart(app)
    findings = lint_source(ChartSource(f"{app.name} {app.version}", app.name, files, target=olares.CURRENT.name),
                           LintOptions(olares_version=olares.DEFAULT_OS_VERSION))
    if any(f.severity == "error" for f in findings):
        return out / package.archive_name(app.name, app.version), findings
    fsio.write_tree(files, out / app.name)
    tgz = out / package.archive_name(app.name, app.version)
    fsio.write_bytes_atomic(tgz, package.build_archive(app.name, files))
    return tgz, findings
