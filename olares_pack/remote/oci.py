"""A small OCI distribution client: what a tag names, and whether it runs on linux/amd64.

It speaks the distribution API as registries serve it (OCI distribution-spec v1.1, "Pulling
manifests" and "Listing tags"; Docker's token authentication, docs.docker.com/registry/spec/auth):
a request answered 401 with `WWW-Authenticate: Bearer realm=…,service=…,scope=…` is retried
with a token from the realm (anonymous, or with the credentials of the Docker config), one
answered `Basic realm=…` with those credentials. A registry on loopback is spoken to over plain
HTTP, as Docker treats 127.0.0.0/8 and localhost as insecure registries by default.

Why not a library: oras (PyPI `oras` 0.2.43, oras/decorator.py retry) retries every failure
with sleeps of 2 + 3^n seconds (no network means minutes before an answer) and turns every
refusal into a ValueError without the status or Retry-After; python-dxf (12.1.1) refuses
credentials over plain HTTP (DXFAuthInsecureError), so a loopback registry with a password cannot
be read, and reads no Docker config. Both pull in `requests`; this module uses httpx, which
huggingface_hub already depends on.

Every failure is a RegistryError (exit 2) with one line a user can act on.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import ipaddress
import json
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from olares_pack.common.errors import RegistryError, TagNotFound

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
INDEXES = (OCI_INDEX, DOCKER_LIST)
MANIFESTS = (OCI_MANIFEST, DOCKER_MANIFEST)
ACCEPT = ", ".join((OCI_INDEX, DOCKER_LIST, OCI_MANIFEST, DOCKER_MANIFEST))

DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"
# Docker's config keys Docker Hub credentials under its v1 index URL (docker/cli config/credentials)
DOCKER_HUB_KEYS = ("https://index.docker.io/v1/", "index.docker.io", "docker.io", "registry-1.docker.io")
AMD64 = ("linux", "amd64")  # the Olares One's platform
TAG_PAGES = 20  # tags/list pages read at most for the nearest-tag hint




# ---------------------------------------------------------------- names


@dataclass(frozen=True)
class ImageName:
    """An image repository split the way Docker splits it (docker/distribution reference.ParseNormalizedNamed)."""

    registry: str  # host[:port] as written, docker.io for Docker Hub
    path: str  # the repository inside the registry (library/ added to Docker Hub's one-word names)

    @classmethod
    def parse(cls, repository: str) -> ImageName:
        first, _, rest = repository.partition("/")
        if rest and ("." in first or ":" in first or first == "localhost"):
            registry, path = first, rest
        else:
            registry, path = DOCKER_HUB, repository
        if registry in ("index.docker.io", "registry-1.docker.io"):
            registry = DOCKER_HUB
        if registry == DOCKER_HUB and "/" not in path:
            path = f"library/{path}"
        return cls(registry, path)

    def __str__(self) -> str:
        return f"{self.registry}/{self.path}"

    @property
    def host(self) -> str:
        return DOCKER_HUB_API if self.registry == DOCKER_HUB else self.registry

    @property
    def loopback(self) -> bool:
        return is_loopback(self.registry)

    @property
    def base_url(self) -> str:
        return f"{'http' if self.loopback else 'https'}://{self.host}/v2/{self.path}"


def is_loopback(registry: str) -> bool:
    host = registry[1:registry.find("]")] if registry.startswith("[") else registry.split(":")[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# ---------------------------------------------------------------- credentials


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str  # or an identity token when username is <token>
    source: str  # where they were found, for messages

    @property
    def identity_token(self) -> str | None:
        return self.password if self.username == "<token>" else None


def _config_files() -> list[tuple[str, Path | None, str | None]]:
    """(label, path, text) of the credential stores Docker, podman and skopeo read, in order."""
    out: list[tuple[str, Path | None, str | None]] = []
    if text := os.environ.get("DOCKER_AUTH_CONFIG"):  # GitLab CI's convention: config.json as a variable
        out.append(("DOCKER_AUTH_CONFIG", None, text))
    if auth_file := os.environ.get("REGISTRY_AUTH_FILE"):  # containers-auth.json(5): podman, skopeo
        out.append((auth_file, Path(auth_file), None))
    docker_dir = Path(os.environ["DOCKER_CONFIG"]) if os.environ.get("DOCKER_CONFIG") else Path.home() / ".docker"
    out.append((str(docker_dir / "config.json"), docker_dir / "config.json", None))
    return out


def _keys_for(registry: str) -> tuple[str, ...]:
    if registry == DOCKER_HUB:
        return DOCKER_HUB_KEYS
    return (registry, f"https://{registry}", f"http://{registry}", f"https://{registry}/v1/", f"https://{registry}/v2/")


def _helper(name: str, registry: str, source: str) -> Credentials | None:
    """docker-credential-<name> get, as the Docker CLI calls credential helpers."""
    server = DOCKER_HUB_KEYS[0] if registry == DOCKER_HUB else registry
    try:
        proc = subprocess.run([f"docker-credential-{name}", "get"], input=server, capture_output=True, text=True,  # noqa: S603
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RegistryError(f"{registry}: the credential helper docker-credential-{name} named in {source} "
                            f"cannot run: {exc}") from None
    if proc.returncode != 0:
        return None  # "credentials not found in native keychain": anonymous, as Docker does
    data = json.loads(proc.stdout or "{}")
    return Credentials(data.get("Username", ""), data.get("Secret", ""), f"{source} (docker-credential-{name})")


def credentials_for(registry: str) -> Credentials | None:
    """The credentials Docker would use for `registry`, or None (anonymous)."""
    for label, path, text in _config_files():
        if text is None:
            if path is None or not path.is_file():
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise RegistryError(f"{path}: cannot read: {exc.strerror}") from None
        try:
            config = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RegistryError(f"{label}: not a Docker config file: {exc}") from None
        if not isinstance(config, dict):
            raise RegistryError(f"{label}: not a Docker config file: expected a JSON object")
        helpers = config.get("credHelpers") or {}
        for key in _keys_for(registry):
            if key in helpers:
                return _helper(str(helpers[key]), registry, label)
        auths = config.get("auths") or {}
        for key in _keys_for(registry):
            entry = auths.get(key)
            if not isinstance(entry, dict):
                continue
            if entry.get("identitytoken"):
                return Credentials("<token>", str(entry["identitytoken"]), label)
            if entry.get("auth"):
                try:
                    user, _, password = base64.b64decode(entry["auth"]).decode().partition(":")
                except ValueError:
                    raise RegistryError(f"{label}: auths.{key}.auth is not base64 of user:password") from None
                return Credentials(user, password, label)
            if entry.get("username"):
                return Credentials(str(entry["username"]), str(entry.get("password", "")), label)
        if config.get("credsStore"):
            found = _helper(str(config["credsStore"]), registry, label)
            if found:
                return found
    return None


# ---------------------------------------------------------------- results


@dataclass(frozen=True)
class Platform:
    os: str
    architecture: str
    variant: str = ""

    def __str__(self) -> str:
        return "/".join(p for p in (self.os, self.architecture, self.variant) if p)


@dataclass(frozen=True)
class Resolved:
    """What a reference (a tag or a digest) names on its registry."""

    image: ImageName
    reference: str
    digest: str  # sha256 of the manifest bytes the registry serves (an index for multi-arch images)
    media_type: str
    platforms: tuple[Platform, ...]

    def offers(self, os_name: str = AMD64[0], arch: str = AMD64[1]) -> bool:
        return any(p.os == os_name and p.architecture == arch for p in self.platforms)


# ---------------------------------------------------------------- the client


def _challenge(header: str) -> tuple[str, dict[str, str]]:
    scheme, _, rest = header.strip().partition(" ")
    params = {m.group(1).lower(): m.group(2) if m.group(2) is not None else m.group(3)
              for m in re.finditer(r'(\w+)=(?:"([^"]*)"|([^,\s]*))', rest)}
    return scheme.lower(), params


def _errors_text(resp: httpx.Response) -> str:
    """The registry's own error codes and messages (distribution-spec "Error codes")."""
    try:
        errors = resp.json().get("errors") or []
        text = "; ".join(f"{e.get('code', '?')}: {e.get('message', '')}".rstrip(": ") for e in errors if isinstance(e, dict))
    except (ValueError, AttributeError):
        text = ""
    return text or f"HTTP {resp.status_code} {resp.reason_phrase}".strip()


def _error_codes(resp: httpx.Response) -> set[str]:
    try:
        return {str(e.get("code")) for e in resp.json().get("errors") or [] if isinstance(e, dict)}
    except (ValueError, AttributeError):
        return set()


@dataclass
class RegistryClient:
    """One client for a run; bearer tokens are kept per registry and scope."""

    credentials: Callable[[str], Credentials | None] = credentials_for
    timeout: float = 30.0
    transport: httpx.BaseTransport | None = None
    _tokens: dict[tuple[str, str], str] = field(default_factory=dict)
    _http: httpx.Client | None = None

    @property
    def http(self) -> httpx.Client:
        if self._http is None:
            self._http = httpx.Client(timeout=self.timeout, follow_redirects=True, transport=self.transport,
                                      headers={"User-Agent": "olares-pack"})
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- HTTP with the token dance

    def _send(self, method: str, url: str, image: ImageName, headers: dict[str, str]) -> httpx.Response:
        try:
            return self.http.request(method, url, headers=headers)
        except httpx.TimeoutException:
            raise RegistryError(f"{image.registry}: no answer within {self.timeout:g} s ({method} {url})") from None
        except httpx.HTTPError as exc:
            raise RegistryError(f"{image.registry}: cannot reach the registry (no network?): {exc}") from None

    def request(self, method: str, url: str, image: ImageName, headers: dict[str, str] | None = None) -> httpx.Response:
        """`method url`, authenticating as the registry's challenge asks; the response is
        returned whatever its status, except refusals (401, 403, 429, 5xx), which raise."""
        headers = dict(headers or {})
        scope = f"repository:{image.path}:pull"
        token = self._tokens.get((image.registry, scope))
        if token:
            headers["Authorization"] = f"Bearer {token}"
        resp = self._send(method, url, image, headers)
        creds: Credentials | None = None
        if resp.status_code == 401:
            # no credentials sent yet, or a kept token that expired: answer the challenge once
            self._tokens.pop((image.registry, scope), None)
            headers.pop("Authorization", None)
            scheme, params = _challenge(resp.headers.get("WWW-Authenticate", ""))
            creds = self.credentials(image.registry)
            if scheme == "bearer" and params.get("realm"):
                token = self._token(image, params, scope, creds)
                self._tokens[(image.registry, scope)] = token
                headers["Authorization"] = f"Bearer {token}"
            elif scheme == "basic" and creds is not None:
                headers["Authorization"] = "Basic " + base64.b64encode(f"{creds.username}:{creds.password}".encode()).decode()
            elif scheme == "basic":
                raise RegistryError(f"{image}: unauthorised: {image.registry} needs a user and password "
                                    f"(docker login {image.registry}, or DOCKER_CONFIG)")
            else:
                raise RegistryError(f"{image}: unauthorised: {image.registry} asks for {scheme or 'an unknown'} "
                                    "authentication, which olares-pack does not speak (Bearer and Basic only)")
            resp = self._send(method, url, image, headers)
        self._raise_common(resp, image, creds, bearer=headers.get("Authorization", "").startswith("Bearer"))
        return resp

    def _token(self, image: ImageName, params: dict[str, str], scope: str, creds: Credentials | None) -> str:
        realm = params["realm"]
        query = {"scope": params.get("scope") or scope}
        if params.get("service"):
            query["service"] = params["service"]
        try:
            if creds is not None and creds.identity_token:
                # Docker's OAuth2 refresh-token grant (docs.docker.com/registry/spec/auth/oauth)
                resp = self.http.post(realm, data={"grant_type": "refresh_token", "refresh_token": creds.identity_token,
                                                   "client_id": "olares-pack", **query})
            else:
                auth = (creds.username, creds.password) if creds else None
                resp = self.http.get(realm, params={**query, "client_id": "olares-pack"}, auth=auth)
        except httpx.HTTPError as exc:
            raise RegistryError(f"{image.registry}: cannot reach its token service {realm} (no network?): {exc}") from None
        if resp.status_code in (401, 403):
            who = f"the credentials of {creds.username} from {creds.source}" if creds else "an anonymous token"
            raise RegistryError(f"{image}: unauthorised: the token service {realm} refused {who} "
                                f"({_errors_text(resp)})")
        self._raise_common(resp, image, creds, bearer=False, what=f"the token service {realm}")
        try:
            data = resp.json()
            return str(data.get("token") or data["access_token"])
        except (ValueError, KeyError, AttributeError):
            raise RegistryError(f"{image.registry}: the token service {realm} answered no token") from None

    def _raise_common(self, resp: httpx.Response, image: ImageName, creds: Credentials | None, *, bearer: bool,
                      what: str | None = None) -> None:
        what = what or image.registry
        if resp.status_code == 429:
            after = resp.headers.get("Retry-After")
            raise RegistryError(f"{image}: rate-limited: {what} answered 429 Too Many Requests"
                                + (f"; retry after {after} s" if after and after.isdigit() else
                                   f"; retry after {after}" if after else "")
                                + ("" if creds else " (an anonymous pull limit: docker login raises it)"))
        if resp.status_code == 401:
            if creds is not None:
                raise RegistryError(f"{image}: unauthorised: {what} refused the credentials of {creds.username} "
                                    f"from {creds.source} ({_errors_text(resp)})")
            if bearer:
                # Docker Hub and ghcr.io hand anonymous tokens for any name, then refuse the pull
                raise RegistryError(f"{image}: unauthorised: a private repository, or none of that name "
                                    f"({_errors_text(resp)}); log in with docker login {image.registry} if it is yours")
            raise RegistryError(f"{image}: unauthorised: {what} answered 401 ({_errors_text(resp)})")
        if resp.status_code == 403:
            raise RegistryError(f"{image}: {what} refuses access (403: {_errors_text(resp)})")
        if resp.status_code >= 500:
            raise RegistryError(f"{image}: {what} is refusing requests ({_errors_text(resp)}); try again later")

    # -- the API

    def manifest(self, image: ImageName, reference: str) -> tuple[str, str, bytes]:
        """(digest, media type, bytes) of the manifest `reference` names."""
        resp = self.request("GET", f"{image.base_url}/manifests/{reference}", image, {"Accept": ACCEPT})
        if resp.status_code == 404:
            self._not_found(resp, image, reference)
        if resp.status_code != 200:
            raise RegistryError(f"{image}:{reference}: {image.registry} answered {_errors_text(resp)}")
        body = resp.content
        media = resp.headers.get("Content-Type", "").split(";")[0].strip()
        try:
            declared = json.loads(body).get("mediaType")
        except (ValueError, AttributeError):
            declared = None
        media = declared or media
        if media not in INDEXES + MANIFESTS:
            raise RegistryError(f"{image}:{reference}: unknown media type {media or '(none)'!r}: expected an OCI index "
                                "or manifest, or a Docker manifest list or v2 manifest")
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        said = resp.headers.get("Docker-Content-Digest")
        if said and said.startswith("sha256:") and said != digest:
            raise RegistryError(f"{image}:{reference}: the registry says the manifest is {said} but its bytes hash to {digest}")
        if reference.startswith("sha256:") and digest != reference:
            raise RegistryError(f"{image}@{reference}: the registry served a manifest whose bytes hash to {digest}")
        return digest, media, body

    def head_digest(self, image: ImageName, reference: str) -> str | None:
        """The digest `reference` names now (HEAD, GET when the registry sends no digest), or None if it names nothing."""
        resp = self.request("HEAD", f"{image.base_url}/manifests/{reference}", image, {"Accept": ACCEPT})
        if resp.status_code == 404:
            return None
        said = resp.headers.get("Docker-Content-Digest")
        if resp.status_code == 200 and said:
            return said
        try:
            return self.manifest(image, reference)[0]
        except TagNotFound:
            return None

    def _not_found(self, resp: httpx.Response, image: ImageName, reference: str) -> None:
        codes = _error_codes(resp)
        answer = _errors_text(resp)
        if "NAME_UNKNOWN" in codes:
            raise RegistryError(f"{image}: no such repository on {image.registry} ({answer})")
        nearest: list[str] = []
        if not reference.startswith("sha256:"):
            tags = self.tags(image)
            nearest = difflib.get_close_matches(reference, tags or [], n=5, cutoff=0.4) if tags else []
        sep = "@" if reference.startswith("sha256:") else ":"
        hint = f"; nearest tags: {', '.join(nearest)}" if nearest else ""
        raise TagNotFound(f"{image}{sep}{reference}: not found on {image.registry} ({answer}){hint}", nearest)

    def list_tags(self, image: ImageName, page_size: int = 1000, max_pages: int = 200) -> list[str]:
        """Every tag of the repository (distribution-spec "Listing tags": `?n=` pages, the next one
        named by the `Link: <…>; rel="next"` header); unlike tags(), a registry that cannot be
        read raises, so that silence is never taken for "no newer tag"."""
        out: list[str] = []
        url: str | None = f"{image.base_url}/tags/list?n={page_size}"
        for _ in range(max_pages):
            if url is None:
                return out
            resp = self.request("GET", url, image)
            if resp.status_code == 404:
                raise RegistryError(f"{image}: no such repository on {image.registry} ({_errors_text(resp)})")
            if resp.status_code != 200:
                raise RegistryError(f"{image}: listing its tags: {image.registry} answered {_errors_text(resp)}")
            try:
                out += [str(t) for t in resp.json().get("tags") or []]
            except (ValueError, AttributeError):
                raise RegistryError(f"{image}: listing its tags: {image.registry} answered no JSON tag list") from None
            m = re.match(r"\s*<([^>]+)>", resp.headers.get("Link", ""))
            url = str(httpx.URL(url).join(m.group(1))) if m else None
        raise RegistryError(f"{image}: more than {max_pages} pages of tags; stopped reading")

    def config(self, image: ImageName, reference: str) -> dict[str, Any]:
        """The image config (image-spec "Image Configuration": created, os, architecture…) of
        `reference`, the linux/amd64 image of an index."""
        digest, media, body = self.manifest(image, reference)
        data: dict[str, Any] = json.loads(body)
        if media in INDEXES:
            chosen = next((m for m in data.get("manifests") or []
                           if (m.get("platform") or {}).get("os") == AMD64[0]
                           and (m.get("platform") or {}).get("architecture") == AMD64[1]), None)
            if chosen is None:
                raise RegistryError(f"{image}:{reference} ({digest}) offers no linux/amd64 image")
            _, _, body = self.manifest(image, str(chosen["digest"]))
            data = json.loads(body)
        blob = (data.get("config") or {}).get("digest")
        if not blob:
            raise RegistryError(f"{image}:{reference}: the manifest names no config blob")
        resp = self.request("GET", f"{image.base_url}/blobs/{blob}", image)
        if resp.status_code != 200:
            raise RegistryError(f"{image}: its config blob {blob}: {image.registry} answered {_errors_text(resp)}")
        try:
            cfg = resp.json()
        except ValueError:
            raise RegistryError(f"{image}: its config blob {blob} is not JSON") from None
        if not isinstance(cfg, dict):
            raise RegistryError(f"{image}: its config blob {blob} is not a JSON object")
        return cfg

    def tags(self, image: ImageName) -> list[str] | None:
        """The repository's tags (tags/list, following Link pages), or None if the registry does not list them."""
        out: list[str] = []
        url: str | None = f"{image.base_url}/tags/list?n=1000"
        for _ in range(TAG_PAGES):
            if url is None:
                break
            try:
                resp = self.request("GET", url, image)
            except RegistryError:
                return out or None
            if resp.status_code != 200:
                return out or None
            try:
                out += [str(t) for t in resp.json().get("tags") or []]
            except (ValueError, AttributeError):
                return out or None
            link = resp.headers.get("Link", "")
            m = re.match(r"\s*<([^>]+)>", link)
            url = str(httpx.URL(url).join(m.group(1))) if m else None
        return out

    def platforms(self, image: ImageName, media: str, body: bytes) -> tuple[Platform, ...]:
        data: dict[str, Any] = json.loads(body)
        if media in INDEXES:
            found = []
            for m in data.get("manifests") or []:
                p = m.get("platform") or {}
                if p.get("os") and p.get("architecture") and p.get("os") != "unknown":  # attestations: unknown/unknown
                    found.append(Platform(p["os"], p["architecture"], p.get("variant", "")))
            return tuple(found)
        config = data.get("config") or {}
        digest = config.get("digest")
        if not digest:
            raise RegistryError(f"{image}: the manifest names no config blob")
        resp = self.request("GET", f"{image.base_url}/blobs/{digest}", image)
        if resp.status_code != 200:
            raise RegistryError(f"{image}: its config blob {digest}: {image.registry} answered {_errors_text(resp)}")
        try:
            cfg = resp.json()
        except ValueError:
            raise RegistryError(f"{image}: its config blob {digest} is not JSON") from None
        return (Platform(str(cfg.get("os", "")), str(cfg.get("architecture", "")), str(cfg.get("variant", "") or "")),)

    def resolve(self, image: ImageName, reference: str) -> Resolved:
        digest, media, body = self.manifest(image, reference)
        return Resolved(image, reference, digest, media, self.platforms(image, media, body))


def resolve_amd64(client: RegistryClient, repository: str, tag: str) -> Resolved:
    """The digest `repository:tag` names, refusing an image that does not offer linux/amd64."""
    image = ImageName.parse(repository)
    found = client.resolve(image, tag)
    if not found.offers(*AMD64):
        offered = ", ".join(sorted({str(p) for p in found.platforms})) or "no platform"
        raise RegistryError(f"{image}:{tag} ({found.digest}) offers {offered} only; the Olares One runs linux/amd64")
    return found
