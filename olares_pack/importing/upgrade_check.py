"""A typed import's users' upgrade: the original chart installed on the real API server, then
upgraded to the typed render under the same release name (rehearse's flow: the administrator and a
second user, each from a clean slate). Accepted when no step is refused (an immutable field, a
resource the server rejects)."""

from __future__ import annotations

from olares_pack.cluster.controlplane import Cluster


def available() -> bool:
    from olares_pack.cluster import tools

    return tools.available() is not None


def problems(cluster: Cluster, name: str, line: str, original: tuple[str, bytes], typed: tuple[str, bytes]) -> list[str]:
    """What the server refused of the install of `original` (version, chart bytes) and its upgrade
    to `typed`; empty: accepted."""
    from olares_pack.rehearse import flow

    charts = {original[0]: original[1], typed[0]: typed[1]}
    steps = flow.rehearse(cluster, name, typed[0], {line: sorted(charts)}, lambda v, t: charts.get(v) if t == line else None,
                          froms=[original[0]])
    if not any(s.action == "upgrade" for s in steps):
        return [f"{s.action} {s.label} ({s.user}): {s.error or 'refused'}" for s in steps if not s.ok] or \
            ["the original did not install: no upgrade to judge"]
    if not flow.failed(steps):
        return []
    return [f"{s.action} {s.label} ({s.user}): {s.error or '; '.join(s.refused) or 'refused'}" for s in steps if not s.ok]


def typed_chart(app_yaml: str, line: str) -> tuple[str, bytes]:
    """The typed app's version and its chart for `line`, packaged as a release packages it."""
    import yaml

    from olares_pack.charts import package
    from olares_pack.importing.importer import render_app

    data = yaml.safe_load(app_yaml)
    files = render_app(data, line)
    return str(data["version"]), package.build_archive(str(data["name"]), files)
