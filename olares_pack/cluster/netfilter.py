"""The host's netfilter state before a node, and putting it back after.

The kubelet and kube-proxy write host-wide chains in both address families: kube-proxy its
KUBE-SERVICES/POSTROUTING/... (removed by `kube-proxy --cleanup`), the kubelet its canaries and
KUBE-FIREWALL in filter, nat and mangle, for IPv6 as well (measured here with kubelet v1.32.2:
`ip6tables -S` showed `-A INPUT -j KUBE-FIREWALL` and `-A OUTPUT -j KUBE-FIREWALL` after a node,
and `ip6 nat`'s KUBE-MARK-MASQ its MARK rule). iptables-nft also creates the tables those chains
live in, with base chains that every packet then traverses. What a node found is recorded in its
state file (`snapshot`); `restore` removes only the KUBE-* chains and the tables that were not
there, so a host that had its own is left with them.
"""

from __future__ import annotations

import shutil
import subprocess

FAMILIES = (("iptables", "ip"), ("ip6tables", "ip6"))
TABLES = ("filter", "nat", "mangle")


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), capture_output=True, text=True, check=False)


def _rules(program: str, table: str) -> list[str]:
    out = _run(program, "-t", table, "-S")
    return out.stdout.splitlines() if out.returncode == 0 else []


def _kube_chains(rules: list[str]) -> list[str]:
    return [r.split()[1] for r in rules if r.startswith("-N KUBE-")]


def _nft_tables() -> list[str] | None:
    """`family name` of each table, or None where the nft program is not installed."""
    nft = shutil.which("nft")
    if nft is None:
        return None
    out = _run(nft, "list", "tables")
    if out.returncode != 0:
        return None
    return sorted(line.removeprefix("table ").strip() for line in out.stdout.splitlines() if line.startswith("table "))


def snapshot() -> dict[str, list[str] | None]:
    """The KUBE-* chains per `family table`, and the nft tables, as the host has them now."""
    found: dict[str, list[str] | None] = {"tables": _nft_tables()}
    for program, family in FAMILIES:
        if shutil.which(program) is None:
            continue
        for table in TABLES:
            found[f"{family} {table}"] = sorted(_kube_chains(_rules(program, table)))
    return found


# What a node that recorded nothing (its state file is older than this module) is taken to have
# left: the chains the cleanup before this module removed, in the IPv4 filter and nat tables.
_UNRECORDED = ("KUBE-FIREWALL", "KUBE-MARK-MASQ", "KUBE-PROXY-CANARY", "KUBE-KUBELET-CANARY", "KUBE-MARK-DROP")


def restore(before: dict[str, list[str] | None] | None) -> None:
    """Remove the KUBE-* chains (with the rules that jump to them) and the then empty tables that
    `before` did not have."""
    for program, family in FAMILIES:
        if shutil.which(program) is None:
            continue
        for table in TABLES:
            key = f"{family} {table}"
            if before is None and key not in ("ip filter", "ip nat"):
                continue
            rules = _rules(program, table)
            if before is None:
                gone = [c for c in _kube_chains(rules) if c in _UNRECORDED]
            else:
                gone = [c for c in _kube_chains(rules) if c not in (before.get(key) or ())]
            _remove_chains(program, table, rules, gone)
    if before is not None and before.get("tables") is not None:
        _remove_tables(before["tables"])


def _remove_chains(program: str, table: str, rules: list[str], gone: list[str]) -> None:
    for rule in rules:
        words = rule.split()
        # a jump from a chain that stays (a built-in one) into one that goes
        if words[:1] == ["-A"] and words[1] not in gone and any(
                w in ("-j", "-g") and words[i + 1] in gone for i, w in enumerate(words[:-1])):
            _run(program, "-t", table, "-D", *words[1:])
    for op in ("-F", "-X"):  # every chain flushed before any is removed: they may jump to each other
        for chain in gone:
            _run(program, "-t", table, op, chain)


def _remove_tables(before: list[str]) -> None:
    nft = shutil.which("nft")
    if nft is None:
        return
    for table in _nft_tables() or []:
        if table in before:
            continue
        family, name = table.split(" ", 1)
        listing = _run(nft, "list", "table", family, name).stdout
        # only chains' declarations and policies left: no rule of anyone's is lost
        if not any(_is_rule(line) for line in listing.splitlines()):
            _run(nft, "delete", "table", family, name)


def _is_rule(line: str) -> bool:
    s = line.strip()
    return bool(s) and not (s.startswith(("table ", "chain ", "type ", "policy ", "}")) or s == "{")
