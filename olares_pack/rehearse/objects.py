"""What an install leaves on the server, read from Helm's record of each release (`helm get
manifest`), and what an upgrade changes in it: objects created, changed, removed, a workload
renamed, a persistent path (hostPath, PVC) that moved."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from olares_pack.common.yamlsrc import safe_load

WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet")
Key = tuple[str, str, str]  # kind, namespace, name

_SEPARATOR = re.compile(r"(?:^|\n)---\s*")


def parse(manifest: str, namespace: str) -> dict[Key, dict[str, Any]]:
    out: dict[Key, dict[str, Any]] = {}
    for doc in _SEPARATOR.split(manifest):
        if not doc.strip():
            continue
        obj = safe_load(doc)
        if not isinstance(obj, dict) or "kind" not in obj:
            continue
        meta = obj.get("metadata") or {}
        out[(str(obj["kind"]), str(meta.get("namespace") or namespace), str(meta.get("name", "")))] = obj
    return out


def show(key: Key) -> str:
    return f"{key[0]} {key[1]}/{key[2]}"


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}


def persistent_paths(objs: dict[Key, dict[str, Any]]) -> dict[str, str]:
    """Each persistent place a workload mounts -> the workload: a hostPath folder or a claim."""
    out: dict[str, str] = {}
    for key, obj in sorted(objs.items()):
        if key[0] not in WORKLOADS:
            continue
        for vol in _pod_spec(obj).get("volumes") or []:
            if not isinstance(vol, dict):
                continue
            if isinstance(vol.get("hostPath"), dict) and vol["hostPath"].get("path"):
                out.setdefault(f"hostPath {vol['hostPath']['path']}", show(key))
            elif isinstance(vol.get("persistentVolumeClaim"), dict):
                out.setdefault(f"PVC {key[1]}/{vol['persistentVolumeClaim'].get('claimName')}", show(key))
        for tpl in (obj.get("spec") or {}).get("volumeClaimTemplates") or []:
            out.setdefault(f"PVC template {key[1]}/{(tpl.get('metadata') or {}).get('name')}", show(key))
    return out


@dataclass
class Changes:
    created: list[Key] = field(default_factory=list)
    changed: list[Key] = field(default_factory=list)
    removed: list[Key] = field(default_factory=list)
    renamed: list[tuple[Key, Key]] = field(default_factory=list)  # a workload removed -> one created
    moved: list[tuple[str, str]] = field(default_factory=list)  # a persistent path gone -> (path, workload)
    added_paths: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"created": [show(k) for k in self.created], "changed": [show(k) for k in self.changed],
                "removed": [show(k) for k in self.removed],
                "renamed": [{"from": show(a), "to": show(b)} for a, b in self.renamed],
                "moved_paths": [{"path": p, "was_mounted_by": w} for p, w in self.moved],
                "new_paths": list(self.added_paths)}


def compare(before: dict[Key, dict[str, Any]], after: dict[Key, dict[str, Any]]) -> Changes:
    ch = Changes(created=sorted(set(after) - set(before)), removed=sorted(set(before) - set(after)),
                 changed=sorted(k for k in set(before) & set(after) if before[k] != after[k]))
    gone = [k for k in ch.removed if k[0] in WORKLOADS]
    new = [k for k in ch.created if k[0] in WORKLOADS]
    for old in gone:
        # the same kind in the same namespace: the engine renamed (the old pod and the new one both
        # ask for the GPU while the rollout runs)
        match = [k for k in new if k[0] == old[0] and k[1] == old[1]]
        if match:
            ch.renamed.append((old, match[0]))
            new.remove(match[0])
    old_paths, new_paths = persistent_paths(before), persistent_paths(after)
    ch.moved = [(p, w) for p, w in old_paths.items() if p not in new_paths]
    ch.added_paths = [p for p in new_paths if p not in old_paths]
    return ch
