"""`serve` and `export`: the market source."""

from __future__ import annotations

from pathlib import Path

import click

from olares_pack import olares
from olares_pack.cli.group import cli
from olares_pack.cli.options import default_version_option, root_option
from olares_pack.common.errors import ExitCode


@cli.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0 for every interface).")
@click.option("--port", default=8080, show_default=True, type=int, help="Port to listen on.")
@click.option("--tls-cert", type=click.Path(path_type=Path, dir_okay=False, exists=True), help="PEM certificate: serve HTTPS.")
@click.option("--tls-key", type=click.Path(path_type=Path, dir_okay=False, exists=True), help="PEM private key of --tls-cert.")
@click.option("--base-url", default="", help="Public URL of this source (icons under it), e.g. https://market.example.org")
@root_option
@click.option("--reload-on-change", is_flag=True, help="Reload when market-index.json changes (SIGHUP always reloads).")
@default_version_option
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Processes sharing the listening socket, each with its own copy of the catalogue.")
@click.option("--strict", is_flag=True,
              help="Refuse to start (exit 2) when a chart the ledger lists is missing, unreadable or changed, "
                   "rather than serving the rest and answering that chart 503 (for CI).")
def serve_cmd(host: str, port: int, tls_cert: Path | None, tls_key: Path | None, base_url: str, root: Path,
              reload_on_change: bool, default_version: str, workers: int, strict: bool) -> int:
    """Serve market-index.json and packages/ as an Olares market source."""
    from olares_pack.market import server

    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("--tls-cert and --tls-key go together")
    olares.parse_os_version(default_version)
    server.run(root, host=host, port=port, tls_cert=tls_cert, tls_key=tls_key,
               reload_every=2.0 if reload_on_change else None, default_version=default_version, base_url=base_url,
               workers=workers, strict=strict)
    return ExitCode.OK


@cli.group("export")
def export_group() -> None:
    """Write the market source for another host."""


@export_group.command("cloudflare")
@click.argument("out", type=click.Path(path_type=Path, file_okay=False))
@click.option("--name", default="olares-market", show_default=True, help="The Worker's name on Cloudflare.")
@root_option
@default_version_option
def export_cloudflare(out: Path, name: str, root: Path, default_version: str) -> int:
    """A Cloudflare Worker project serving the four routes from precomputed bytes, charts as static
    assets. Deploy it with `npx wrangler deploy` in OUT."""
    from olares_pack.common import console
    from olares_pack.market import cloudflare

    olares.parse_os_version(default_version)
    served = cloudflare.export(root, out, name=name, default_version=default_version)
    console.info(f"wrote {out} ({served} charts); deploy with: cd {out} && npm install && npx wrangler deploy")
    return ExitCode.OK


@export_group.command("olares-app")
@click.argument("out", type=click.Path(path_type=Path, file_okay=False))
@click.option("--image", required=True, help="The image built from this repository's Dockerfile, pinned by digest "
              "(registry/olares-market:1.0.0@sha256:...).")
@click.option("--version", "version", required=True, help="The app's version: raise it with every new catalogue "
              "baked into the image (a device re-syncs an app only when its version changes).")
@click.option("--name", default="marketsource", show_default=True, help="The app's name on the device.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 16), help="serve --workers in the pod.")
def export_olares_app(out: Path, image: str, version: str, name: str, workers: int) -> int:
    """A chart that runs this market source on an Olares device (1.12.6+), linted before it is
    written: OUT/<name>/ and OUT/<name>-<version>.tgz."""
    from olares_pack.common import console
    from olares_pack.lint.output import print_findings
    from olares_pack.market import sourceapp

    tgz, findings = sourceapp.export(sourceapp.SourceApp(name, version, image, workers=workers), out)
    print_findings(findings, [f"{name} {version}"])
    if any(f.severity == "error" for f in findings):
        console.error(f"{name} {version}: lint found errors; nothing was written")
        return ExitCode.FINDINGS
    console.info(f"wrote {tgz}; install it on the device (Market -> My Olares -> upload) and add its entrance URL "
                 "as a market source")
    return ExitCode.OK
