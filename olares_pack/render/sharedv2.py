"""The shared form for Olares 1.12.3-1.12.5 (the `legacy` target): an apiVersion v2 app of two
sub-charts, one engine for every user of the device.

Read from the installer and the catalogues that ship this form (app-service as the index holds
it: helm_ops_install.go at commit 12069e9d, helm_ops_upgrade.go at 063426f7; the 1.12.3-1.12.5
tags could not be resolved to commits, and that the form installs there rests on the official
catalogue shipping it for >=1.12.3-0,<1.12.6):

- beclab/Olares framework/app-service/pkg/appinstaller/v2/helm_ops_install.go, HelmOpsV2.Install
  and HelmOpsV2.install: an app with several charts needs one `shared: true` chart ("multi-charts
  app must have at least one cluster shared chart"); each `spec.subCharts` entry is installed in
  order from the folder of its name, with the sub-chart's name as the Helm release name; a shared
  chart only for an administrator ("Skipping installation of shared chart ... for non-admin user")
  and only once ("already installed, skipping"), into the namespace `<chart>-shared`; the other
  charts into `<chart>-<owner>` (framework/app-service/pkg/appcfg, Chart.Namespace). The
  administrator's `.Values.admin` is set to the owner (values["admin"] = OwnerName).
- beclab/Olares PR #2098 (app-service, tapr: implement shared entrances; target v1.12.3):
  `sharedEntrances` in OlaresManifest.yaml, registered as `<appid>-<name>.shared.olares.com`.
- beclab/apps llamacppgptoss120bggufv2 (olares `>=1.12.3-0,<1.12.6`, the official catalogue's
  shared llama.cpp app for these releases): manifest 0.11.0 apiVersion v2, the server sub-chart
  `<app>server` (`shared: true`, its templates under the administrator guard), the per-user
  client `<app>` (an openresty proxy to `<service>.<app>server-shared`), the `sharedentrances-api`
  Service on port 80 and `sharedEntrances` port 0, `options.appScope` clusterScoped/appRef for
  the administrator and a mandatory application dependency on the app for everyone else.
- aamsellem/olares-one-market (third-party, manifest 0.10.0 apiVersion v2, e.g.
  llamacppdiffusiongemma26a4bone): the same shape.

What stays as in the per-user form: the `download` init container that fetches the model and
checks each file's size and sha256 before the engine starts (templates/download.sh), the engine's
probes (no llm-init on these releases: the official v2 apps run their own downloader), the
Hugging Face token Secret, the flat 0.10.0 resource fields.
"""

from __future__ import annotations

from olares_pack.apps.manifest import App, ChartApp
from olares_pack.olares import TargetProfile

API_VERSION = "v2"
SHARED_HOST = "sharedentrances-api"
# The client container's requests and limits (the official client's), and the non-administrator
# envelope its manifest declares (llamacppgptoss120bggufv2/OlaresManifest.yaml, the else branch).
CLIENT_CPU = ("10m", "500m")
CLIENT_MEMORY = ("64Mi", "500Mi")
CLIENT_DISK = ("50Mi", "200Mi")
# The installer's administrator test, as the official v2 charts write it.
ADMIN_IF = "{{- if and .Values.admin .Values.bfl.username (eq .Values.admin .Values.bfl.username) }}"
ADMIN_END = "{{- end }}"


def active(app: App, target: TargetProfile) -> bool:
    """Whether this app renders in the v2 shared form for this target: a shared app (engine.shared)
    on a target without workloadReplicas (the 0.10.0 manifests of 1.12.3-1.12.5)."""
    return not isinstance(app, ChartApp) and app.engine.shared and not target.workload_replicas


def server_chart(app: App) -> str:
    return f"{app.name}server"


def context(app: App) -> dict[str, object]:
    server = server_chart(app)
    return {
        "api_version": API_VERSION,
        "server": server,
        "client": app.name,
        "namespace": f"{server}-shared",
        "shared_host": SHARED_HOST,
        "upstream": f"http://{app.service_name}.{server}-shared:{app.server.port}",
        "proxy_image": app.engine.proxy.ref,
        "client_cpu": CLIENT_CPU,
        "client_memory": CLIENT_MEMORY,
        "client_disk": CLIENT_DISK,
        "admin_if": ADMIN_IF,
    }


def guarded(text: str) -> str:
    """A server template rendered for the administrator only, as the official server charts are
    (the installer skips the shared chart for anyone else; the guard keeps a render that reads
    the values the same)."""
    return f"{ADMIN_IF}\n{text.rstrip()}\n{ADMIN_END}\n"
