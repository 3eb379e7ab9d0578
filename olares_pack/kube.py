"""Kubernetes objects checked against the JSON schemas of a Kubernetes version (offline)."""

from __future__ import annotations

from typing import Any

import kubernetes_validate

# Olares installs k3s v1.32 (installer DefaultK3sVersion "v1.32.2-k3s").
DEFAULT_KUBE_VERSION = "1.32.0"


def schema_errors(obj: dict[str, Any], kube_version: str = DEFAULT_KUBE_VERSION) -> list[str]:
    """Messages for each way `obj` breaks its schema (strict: unknown fields are errors)."""
    try:
        kubernetes_validate.validate(obj, kube_version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        where = "/".join(str(p) for p in exc.path)
        return [f"{where}: {exc.message}" if where else exc.message]
    except kubernetes_validate.SchemaNotFoundError:
        return [f"no schema for {obj.get('apiVersion')}/{obj.get('kind')} in Kubernetes {kube_version}"]
    return []
