"""Kubernetes objects checked against the JSON schemas of a Kubernetes version (offline).

The schemas are kubernetes-validate's; its `validate()` re-reads the multi-megabyte definitions
file on every call, so the compiled validator of each kind is cached here (same files, same
resolution rules). The verdict comes from jsonschema-rs: 4 us an object against 540 us for the
Python validator, on the 48 objects of six example charts (a one-off measurement of issue #14,
not a committed bench; measurements/lint_bench.py shows the effect on lint). Only an object it refuses
goes through the Python validator, whose messages the findings quote.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import jsonschema_rs

# Olares installs k3s v1.32 (installer DefaultK3sVersion "v1.32.2-k3s").
from olares_pack.olares import DEFAULT_KUBE_VERSION

if TYPE_CHECKING:
    import jsonschema
    from referencing import Registry

# kubernetes-validate's schema files are read from its package folder without importing the
# package: its import pulls in the Python jsonschema (with attrs and referencing), 0.1-0.2 s that a
# lint of third-party charts spent before its first chart (43 % of a 48-chart lint was imports).
# The Python validator is imported only to word the error of an object jsonschema-rs refuses.


@lru_cache(maxsize=None)
def _schemas_root() -> str:
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("kubernetes_validate")
    return os.path.join(list(spec.submodule_search_locations)[0], "kubernetes-json-schema")


def _major_minor(version: str) -> str:
    return re.sub(r"^(\d+\.\d+).*", r"\1", version)  # as kubernetes_validate.utils.major_minor


def _all_versions() -> list[str]:
    """The Kubernetes versions with schemas, oldest first (kubernetes_validate.utils.all_versions)."""
    names = [re.sub(r"^v([^-]*).*", r"\1", n) for n in os.listdir(_schemas_root()) if re.match(r"^v([^-]*).*", n)]
    return sorted(names, key=lambda v: tuple(int(x) if x.isdigit() else 0 for x in v.split(".")))


@lru_cache(maxsize=None)
def _schema_dir(kube_version: str, strict: bool) -> str:
    wanted = _major_minor(kube_version.lstrip("v"))
    versions = [v for v in _all_versions() if _major_minor(v) <= wanted]
    if not versions:
        from kubernetes_validate.utils import VersionNotSupportedError

        raise VersionNotSupportedError(version=wanted)
    return f"v{versions[-1]}-local" + ("-strict" if strict else "")


def _load(path: str) -> Any:
    with open(os.path.join(_schemas_root(), path), encoding="utf-8") as f:
        return json.load(f)


@lru_cache(maxsize=None)
def _definitions(schema_dir: str) -> Any:
    return _load(f"{schema_dir}/_definitions.json")  # 1.3 MB for v1.32: read once, not once per kind


@lru_cache(maxsize=None)
def _registry(schema_dir: str) -> Registry:
    from referencing import Registry, Resource

    return Resource.from_contents(_definitions(schema_dir)) @ Registry()


@lru_cache(maxsize=None)
def _schema(schema_dir: str, kind: str, api_version: str) -> Any:
    """A kind's schema, None when kubernetes-validate has none (a custom resource)."""
    # rbac.authorization.k8s.io/v1 -> rbac-v1, as kubernetes-validate names its files
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        return _load(f"{schema_dir}/{kind.lower()}-{group}.json")
    except FileNotFoundError:
        return None


@lru_cache(maxsize=None)
def _validator(schema_dir: str, kind: str, api_version: str) -> jsonschema.protocols.Validator | None:
    schema = _schema(schema_dir, kind, api_version)
    if schema is None:
        return None
    import jsonschema
    from referencing import Resource

    registry = Resource.from_contents(schema) @ _registry(schema_dir)
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


@lru_cache(maxsize=None)
def _fast_validator(schema_dir: str, kind: str, api_version: str) -> Any:
    schema = _schema(schema_dir, kind, api_version)
    if schema is None:
        return None
    definitions = _definitions(schema_dir)
    # every $ref of a kind's schema points into the one definitions file ("/api/_definitions.json"
    # against the default base URI): a registry holding it, built once, spares converting the
    # 1.3 MB of definitions for each kind (5 → 1 ms a kind); the retriever answers any other URI
    return jsonschema_rs.validator_for(schema, registry=_rs_registry(schema_dir), retriever=lambda uri: definitions)


@lru_cache(maxsize=None)
def _rs_registry(schema_dir: str) -> Any:
    return jsonschema_rs.Registry([("json-schema:///api/_definitions.json", _definitions(schema_dir))])


def _first_error(obj: dict[str, Any], kube_version: str, strict: bool) -> str | None | bool:
    """The first schema error, None when valid, False when the kind has no schema."""
    validator = _validator(_schema_dir(kube_version, strict), str(obj.get("kind", "")), str(obj.get("apiVersion", "")))
    if validator is None:
        return False
    err = next(iter(validator.iter_errors(obj)), None)
    if err is None:
        return None
    where = "/".join(str(p) for p in err.path)
    return f"{where}: {err.message}" if where else err.message


# The strict schemas are the loose ones with `additionalProperties: false` added to objects
# (tests/test_kube.py checks it for every version kubernetes-validate ships): an object the loose
# schema accepts breaks the strict one only by unknown fields. Their first error, as the Python
# validator words it, is found by walking the strict schema as that validator does (each
# keyword in the schema's order, properties in the schema's order, items in the list's), with no
# need of its 0.1 s import. Where the walk cannot be sure of that order or wording (a subschema
# with unknown fields under a combinator, two unknown fields under one `additionalProperties`
# schema: the Python validator visits those in a set's order), it answers None.
_APPLICATORS = {"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "prefixItems",
                "contains", "patternProperties", "propertyNames", "unevaluatedItems", "unevaluatedProperties",
                "$dynamicRef", "dependencies", "additionalItems"}
_LOCAL_REF = re.compile(r"(?:/api/_definitions\.json)?#/\$defs/([A-Za-z0-9_.-]+)")


class _Unsure(Exception):
    pass


def _first_unknown_field(obj: dict[str, Any], schema_dir: str, kind: str, api_version: str) -> str | None:
    schema = _schema(schema_dir, kind, api_version)
    if schema is None:
        return None
    try:
        found = _walk(obj, schema, (), _definitions(schema_dir)["$defs"])
    except (_Unsure, KeyError, TypeError):
        return None
    if found is None:
        return None
    path, extras = found
    names = sorted(extras, key=str)
    message = "Additional properties are not allowed (%s %s unexpected)" % (
        ", ".join(repr(e) for e in names), "was" if len(names) == 1 else "were")
    where = "/".join(str(p) for p in path)
    return f"{where}: {message}" if where else message


def _walk(instance: Any, schema: Any, path: tuple[Any, ...], defs: dict[str, Any]) -> tuple[tuple[Any, ...], list[str]] | None:
    """The first `additionalProperties: false` that `instance` breaks under `schema`: its path and
    the unknown fields; None when there is none."""
    if schema is True:
        return None
    if not isinstance(schema, dict):
        raise _Unsure
    for key, value in schema.items():
        if key == "$ref":
            m = _LOCAL_REF.fullmatch(value) if isinstance(value, str) else None
            if m is None:
                raise _Unsure
            found = _walk(instance, defs[m.group(1)], path, defs)
        elif key == "properties":
            if not isinstance(instance, dict):
                continue
            found = None
            for name, sub in value.items():
                if name in instance and (found := _walk(instance[name], sub, (*path, name), defs)) is not None:
                    break
        elif key == "items":
            if not isinstance(instance, list):
                continue
            found = None
            for i, item in enumerate(instance):
                if (found := _walk(item, value, (*path, i), defs)) is not None:
                    break
        elif key == "additionalProperties":
            if not isinstance(instance, dict):
                continue
            if "patternProperties" in schema:
                raise _Unsure  # another wording, and fields the patterns match are not unknown
            known = schema.get("properties", {})
            extras = [k for k in instance if k not in known]
            if value is False:
                found = (path, extras) if extras else None
            elif isinstance(value, dict):
                hits = [h for k in extras if (h := _walk(instance[k], value, (*path, k), defs)) is not None]
                if len(hits) > 1:
                    raise _Unsure
                found = hits[0] if hits else None
            else:
                found = None
        elif key in _APPLICATORS:
            # the same in the loose schema (nothing in it to add an unknown-field error), which
            # accepted the object: no error here either
            text = json.dumps(value)
            if "additionalProperties" in text or "$ref" in text:
                raise _Unsure
            continue
        else:
            continue  # an assertion the loose schema checked already, or an annotation
        if found is not None:
            return found
    return None


def check(obj: dict[str, Any], kube_version: str = DEFAULT_KUBE_VERSION) -> tuple[str, str] | None:
    """(severity, message) for the first way `obj` breaks its schema, or None.

    error: the API server rejects it (wrong type, missing field); warning: an unknown field,
    which the API server drops with a warning; info: a kind without a published schema (a CRD).
    """
    if not obj.get("kind") or not obj.get("apiVersion"):
        return "error", "an object without kind or apiVersion"
    # The strict schemas only add "no unknown fields": an object they accept is valid, and the
    # loose pass (the API server's verdict) is needed only for the objects they refuse.
    kind, api_version = str(obj.get("kind", "")), str(obj.get("apiVersion", ""))
    fast = _fast_validator(_schema_dir(kube_version, True), kind, api_version)
    if fast is not None and fast.is_valid(obj):
        return None
    if fast is not None and _fast_validator(_schema_dir(kube_version, False), kind, api_version).is_valid(obj):
        # valid but for unknown fields: worded here when it can be, sparing the Python validator
        unknown = _first_unknown_field(obj, _schema_dir(kube_version, True), kind, api_version)
        if unknown is not None:
            return "warning", f"{unknown} (the API server drops unknown fields)"
    strict = _first_error(obj, kube_version, strict=True)
    if strict is None:
        return None
    loose = _first_error(obj, kube_version, strict=False)
    if loose is False:
        return "info", f"no schema for {obj.get('apiVersion')}/{obj.get('kind')} in Kubernetes {kube_version} (a custom resource?)"
    if loose is not None:
        return "error", str(loose)
    return "warning", f"{strict} (the API server drops unknown fields)"


def schema_errors(obj: dict[str, Any], kube_version: str = DEFAULT_KUBE_VERSION) -> list[str]:
    """Every schema problem of `obj`, unknown fields included (what olares-pack's own charts must pass)."""
    found = check(obj, kube_version)
    return [found[1]] if found else []
