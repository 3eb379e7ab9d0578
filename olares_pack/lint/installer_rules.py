"""Manifest rules the installer's checker (beclab/Olares framework/oac) gained after 1.12.6's first
rule set: the `ports` entries, and the olares dependency of v1/v2 manifests. Which releases refuse
on them is in lint/findings.py (RULES), with the pull requests they came from."""

from __future__ import annotations

from olares_pack.common.errors import InputError
from olares_pack.lint.context import MANIFEST, ChartContext
from olares_pack.lint.manifest_rules import ENTRANCE_HOST, ENTRANCE_NAME
from olares_pack.olares import LEGACY, admits

PROTOCOLS = ("", "tcp", "udp")
# The versions the checker samples just outside the v1/v2 window: a constraint that admits one of
# them is refused (oac internal/manifest/validate.go, olaresDepRulePreV3's forbidden samples).
LEGACY_FORBIDDEN = ("1.12.2", "1.12.6", "2.0.0")


def _port_in_range(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535


def service_ports(ctx: ChartContext) -> None:
    """`ports[]` (ports exposed outside the cluster): name, host, port, exposePort, protocol."""
    ports = ctx.manifest.get("ports")
    if not isinstance(ports, list):
        return
    seen: set[str] = set()
    for i, p in enumerate(ports):
        if not isinstance(p, dict):
            continue

        def bad(field: str, message: str, hint: str = "", i: int = i) -> None:
            ctx.add("manifest.ports", f"ports[{i}].{field}: {message}", file=MANIFEST, path=f"ports[{i}].{field}",
                    loc=("ports", i, field) if field in ports[i] else ("ports", i), hint=hint)

        name = p.get("name")
        if not name:
            bad("name", "a port needs a name")
        elif not ENTRANCE_NAME.match(str(name)):
            bad("name", f"{name!r} must match ^[a-z0-9A-Z-]*$ (letters, digits and '-')",
                hint=f"name: {str(name).replace('_', '-')}" if "_" in str(name) else "")
        elif str(name) in seen:
            bad("name", f"{name!r} names two ports: names must be unique")
        seen.add(str(name))
        host = p.get("host")
        if not host:
            bad("host", "a port needs the Service it exposes (host)")
        elif not ENTRANCE_HOST.match(str(host)):
            bad("host", f"{host!r} is not a Service name (^[a-z]([-a-z0-9]*[a-z0-9])$)")
        if p.get("port") in (None, 0):
            bad("port", "a port needs its port number")
        elif not _port_in_range(p.get("port")):
            bad("port", f"{p.get('port')!r} is not between 1 and 65535")
        expose = p.get("exposePort")
        if expose not in (None, 0) and not _port_in_range(expose):
            bad("exposePort", f"{expose!r} is not between 1 and 65535 (0 or none: the platform picks one)")
        protocol = p.get("protocol")
        if protocol is not None and protocol not in PROTOCOLS:
            bad("protocol", f"{protocol!r} must be tcp, udp or empty (lower case)",
                hint=f"protocol: {str(protocol).lower()}" if str(protocol).lower() in PROTOCOLS else "")


def legacy_window(ctx: ChartContext) -> None:
    """A manifest below 0.12.0 declares the olares system dependency, inside the v1/v2 window."""
    if ctx.modern or not ctx.manifest:
        return
    dep = ctx.olares_dependency
    if dep is None:
        ctx.add("manifest.legacy-window", "options.dependencies has no {name: olares, type: system} entry: the installer refuses "
                "v1/v2 manifests without one", file=MANIFEST, path="options.dependencies",
                hint=f"{{name: olares, type: system, version: '{LEGACY.dependency}'}}")
        return
    if ctx.api_version == "v3":
        return  # a v3 manifest below 0.12.0: its window is manifest.olares-dependency's
    constraint = str(dep.get("version") or "")
    try:
        admitted = [v for v in LEGACY_FORBIDDEN if admits(constraint, v)]
    except InputError as exc:
        ctx.add("manifest.legacy-window", f"olares dependency {constraint!r} is not a version constraint: {exc}", file=MANIFEST,
                path="options.dependencies")
        return
    if admitted:
        ctx.add("manifest.legacy-window", f"olares dependency {constraint!r} admits {', '.join(admitted)}: a v1/v2 manifest must "
                f"restrict Olares to {LEGACY.dependency!r}", file=MANIFEST, path="options.dependencies",
                hint=f"version: '{LEGACY.dependency}' (Olares 1.12.6 and newer install only 0.12.0/v3 charts)")


RULES = [service_ports, legacy_window]
