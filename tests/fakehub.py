"""A local Hugging Face hub: the routes huggingface_hub (2.x) and the chart's download step call,
answered as the real hub answers them. Written from the client's code (huggingface_hub/hf_api.py
HfApi.model_info, list_repo_tree / _iter_repo_tree_pages, get_paths_info; hf_file_system.py;
file_download.py; utils/_http.py hf_raise_for_status and its X-Error-Code values) and checked
against it by tests/test_fakehub.py:

- GET  /api/models/{repo}[/revision/{rev}][?blobs=true]  -> {id, sha, siblings: [{rfilename, size, blobId, lfs}]}
- GET  /api/models/{repo}/tree/{rev}[/{path}]?recursive=&expand=  -> [{type, path, oid, size, lfs}], paged
       through a `Link: <…>; rel="next"` header (cursor)
- POST /api/models/{repo}/paths-info/{rev}  (form: paths=…, expand=…)
- GET/HEAD /{repo}/resolve/{rev}/{path}: a file kept in git is served here; an LFS file is a 302
  to its content address on another origin (a second server, /lfs/{sha256}), as the hub redirects
  to its CDN, with X-Repo-Commit, X-Linked-Etag and X-Linked-Size on the redirect itself (the
  client reads them there and does not follow a HEAD off the hub: utils/_http.py
  _httpx2_follow_hub_redirects_with_backoff); both honour Range (206 with Content-Range, 416 past the end)
- GET  /api/models/{repo}/refs  -> {branches, tags, converts: [{name, ref, targetCommit}]} (HfApi.list_repo_refs)
- GET  /api/models/{repo}/commits/{rev}  -> [{id, title, message, authors, date}], newest first, paged
       through `Link` as the tree is (HfApi.list_repo_commits)
- a renamed repository (`renames`): every route under the old name answers 307 with the same path
  under the new one, as the hub redirects renamed repositories; huggingface_hub's client follows
  redirects (utils/_http.py default_client_factory: follow_redirects=True, and
  _httpx2_follow_hub_redirects_with_backoff for HEAD /resolve, which follows redirects on the hub's
  own origin), so the model's `id` comes back as the new name
- errors as the hub sends them: RepoNotFound for a missing or private repo (401 to an anonymous
  request, 404 to an authenticated one), GatedRepo for a gated repo's file (401 without a token, 403
  with a token not granted access: the repo itself is listed to anyone), 404 + RevisionNotFound /
  EntryNotFound, 429 with Retry-After when told to (`fail_next`).

Files are LFS when their name says so (*.gguf, *.safetensors, *.bin: the hub's default
.gitattributes) or when they reach 10 MiB, as git-lfs on the hub. Every request is recorded.
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPO, REVISION = "acme/tiny-GGUF", "main"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
LFS_SUFFIXES = (".gguf", ".safetensors", ".bin")
LFS_MIN = 10 * 1024 * 1024
POINTER_SIZE = 134  # bytes of an LFS pointer file (version, oid, size lines)
PAGE = 50  # tree entries per page (the hub pages at 1000 without expand; smaller here to test paging)


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 - git's object id


@dataclass
class Repo:
    refs: dict[str, str] = field(default_factory=dict)  # branch or tag -> commit
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)  # commit -> path -> bytes
    private: bool = False
    gated: bool = False  # listed to anyone; its files only with the token (hub.token)
    dates: dict[str, str] = field(default_factory=dict)  # commit -> ISO date (default: one day per commit)
    titles: dict[str, str] = field(default_factory=dict)  # commit -> its message's first line
    tags: set[str] = field(default_factory=set)  # refs that are tags, not branches

    def history(self, commit: str) -> list[str]:
        """The commits up to `commit`, newest first (commits are kept in the order they were made)."""
        order = list(self.commits)
        return list(reversed(order[:order.index(commit) + 1]))

    def date(self, commit: str) -> str:
        return self.dates.get(commit) or f"2026-01-{list(self.commits).index(commit) % 28 + 1:02d}T00:00:00.000Z"


class FakeHub:
    def __init__(self) -> None:
        self.repos: dict[str, Repo] = {REPO: Repo({REVISION: COMMIT}, {COMMIT: {}})}
        self.requests: list[dict[str, str | None]] = []
        self.cut_first_after: int | None = None  # drop the first response after this many bytes
        self.bytes_served = 0
        self.redirect_lfs = True
        self.token: str | None = None  # the token a private repo needs
        self.ungranted_token: str | None = None  # a valid token not granted access to gated repos
        self.renames: dict[str, str] = {}  # old name -> new name: answered with a 307
        self.fail_next: list[tuple[int, dict[str, str]]] = []  # (status, headers) for the next requests
        self.url = ""  # set by serve()
        self.cdn_url = ""  # the other origin LFS files are redirected to

    @property
    def files(self) -> dict[str, bytes]:
        """The files of REPO at COMMIT (what `main` names)."""
        return self.repos[REPO].commits[COMMIT]

    def add_commit(self, repo: str, commit: str, files: dict[str, bytes], *refs: str, private: bool = False,
                   date: str | None = None, title: str | None = None) -> None:
        r = self.repos.setdefault(repo, Repo(private=private))
        r.commits[commit] = dict(files)
        if date:
            r.dates[commit] = date
        if title:
            r.titles[commit] = title
        for ref in refs:
            r.refs[ref] = commit

    @staticmethod
    def is_lfs(path: str, data: bytes) -> bool:
        return path.endswith(LFS_SUFFIXES) or len(data) >= LFS_MIN

    def entry(self, path: str, data: bytes) -> dict[str, object]:
        """One file as the tree and paths-info routes list it."""
        e: dict[str, object] = {"type": "file", "oid": git_blob_id(data), "size": len(data), "path": path}
        if self.is_lfs(path, data):
            e["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": POINTER_SIZE}
        return e

    def handler(self) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            # -- plumbing

            def send_json(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def hub_error(self, status: int, code: str | None, message: str) -> None:
                headers = {"X-Error-Message": message} | ({"X-Error-Code": code} if code else {})
                self.send_json(status, {"error": message}, headers)

            def record(self) -> None:
                hub.requests.append({"method": self.command, "path": self.path, "range": self.headers.get("Range"),
                                     "auth": self.headers.get("Authorization")})

            def injected(self) -> bool:
                if not hub.fail_next:
                    return False
                status, headers = hub.fail_next.pop(0)
                self.send_json(status, {"error": "injected"}, headers)
                return True

            def repo_of(self, name: str) -> Repo | None:
                """The repo, or None after answering as the hub does for a missing or private one."""
                repo = hub.repos.get(name)
                auth = self.headers.get("Authorization")
                if repo is not None and repo.private and (hub.token is None or auth != f"Bearer {hub.token}"):
                    repo = None
                if repo is None:
                    valid = {f"Bearer {t}" for t in (hub.token, hub.ungranted_token) if t}
                    if auth and hub.token is not None and auth not in valid:
                        self.hub_error(401, None, "Invalid credentials in Authorization header")
                    else:  # the hub tells an authenticated caller 404, an anonymous one 401
                        self.hub_error(404 if auth else 401, "RepoNotFound", "Repository not found")
                return repo

            def renamed(self) -> bool:
                """A 307 to the same route under the repository's new name, as the hub answers."""
                url = urllib.parse.urlsplit(self.path)
                parts = url.path.split("/")
                at = 3 if parts[1:3] == ["api", "models"] else 1
                name = "/".join(parts[at:at + 2])
                if name not in hub.renames:
                    return False
                parts[at:at + 2] = hub.renames[name].split("/")
                location = urllib.parse.urlunsplit(("", "", "/".join(parts), url.query, ""))
                self.send_json(307, {"message": f"Repository was renamed to {hub.renames[name]}"}, {"Location": location})
                return True

            def commit_of(self, repo: Repo, rev: str) -> str | None:
                rev = urllib.parse.unquote(rev)
                commit = repo.refs.get(rev) or (rev if rev in repo.commits else None)
                if commit is None:
                    self.hub_error(404, "RevisionNotFound", "Invalid rev id: " + rev)
                return commit

            def split(self) -> tuple[list[str], dict[str, list[str]]]:
                url = urllib.parse.urlsplit(self.path)
                return url.path.split("/"), urllib.parse.parse_qs(url.query)

            # -- routes

            def do_HEAD(self) -> None:
                self.do_GET()

            def do_GET(self) -> None:
                self.record()
                if self.injected() or self.renamed():
                    return
                parts, query = self.split()
                if parts[1:3] == ["api", "models"] and len(parts) == 6 and parts[5] == "refs":
                    repo = self.repo_of("/".join(parts[3:5]))
                    if repo is None:
                        return
                    def ref(name: str, commit: str, kind: str) -> dict[str, str]:
                        return {"name": name, "ref": f"refs/{kind}/{name}", "targetCommit": commit}
                    return self.send_json(200, {
                        "branches": [ref(n, c, "heads") for n, c in sorted(repo.refs.items()) if n not in repo.tags],
                        "tags": [ref(n, c, "tags") for n, c in sorted(repo.refs.items()) if n in repo.tags],
                        "converts": []})
                if parts[1:3] == ["api", "models"] and len(parts) == 5:
                    parts = [*parts, "revision", "main"]  # HfApi.model_info without a revision: the default branch
                if parts[1:3] == ["api", "models"] and len(parts) >= 7:
                    name, kind, rev, rest = "/".join(parts[3:5]), parts[5], parts[6], parts[7:]
                    found = self.repo_at(name, rev)
                    if found is None:
                        return
                    repo, commit = found
                    if kind == "revision" and not rest:
                        return self.model_info(name, commit, query.get("blobs") == ["true"])
                    if kind == "tree":
                        return self.tree(name, commit, urllib.parse.unquote("/".join(rest)), query)
                    if kind == "commits" and not rest:
                        log = [{"id": c, "title": repo.titles.get(c, f"commit {c[:7]}"),
                                "message": repo.titles.get(c, f"commit {c[:7]}"),
                                "authors": [{"user": name.split("/")[0]}], "date": repo.date(c)}
                               for c in repo.history(commit)]
                        return self.paged(log, query)
                if parts[1:3] == ["lfs", parts[2]] and len(parts) == 3:
                    return self.lfs(parts[2])
                if len(parts) >= 6 and parts[3] == "resolve":
                    return self.resolve("/".join(parts[1:3]), parts[4], urllib.parse.unquote("/".join(parts[5:])))
                self.hub_error(404, None, "Not Found")

            def do_POST(self) -> None:
                self.record()
                length = int(self.headers.get("Content-Length") or 0)
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                if self.injected() or self.renamed():
                    return
                parts, _ = self.split()
                if parts[1:3] == ["api", "models"] and len(parts) == 7 and parts[5] == "paths-info":
                    repo = self.repo_of("/".join(parts[3:5]))
                    if repo is None:
                        return
                    commit = self.commit_of(repo, parts[6])
                    if commit is None:
                        return
                    files = repo.commits[commit]
                    out: list[dict[str, object]] = []
                    for p in form.get("paths", []):
                        p = p.strip("/")
                        if p in files:
                            out.append(hub.entry(p, files[p]))
                        elif any(f.startswith(p + "/") for f in files):
                            out.append({"type": "directory", "oid": git_blob_id(p.encode()), "size": 0, "path": p})
                    return self.send_json(200, out)
                self.hub_error(404, None, "Not Found")

            def model_info(self, name: str, commit: str, blobs: bool) -> None:
                files = hub.repos[name].commits[commit]
                siblings = []
                for path in sorted(files):
                    s: dict[str, object] = {"rfilename": path}
                    if blobs:
                        e = hub.entry(path, files[path])
                        s |= {"size": e["size"], "blobId": e["oid"]}
                        if "lfs" in e:
                            lfs = e["lfs"]
                            assert isinstance(lfs, dict)
                            s["lfs"] = {"sha256": lfs["oid"], "size": lfs["size"], "pointerSize": lfs["pointerSize"]}
                    siblings.append(s)
                self.send_json(200, {"_id": name, "id": name, "modelId": name, "author": name.split("/")[0],
                                     "sha": commit, "private": hub.repos[name].private,
                                     "gated": "manual" if hub.repos[name].gated else False,
                                     "disabled": False, "tags": [], "downloads": 0, "likes": 0,
                                     "lastModified": "2026-01-01T00:00:00.000Z", "createdAt": "2026-01-01T00:00:00.000Z",
                                     "siblings": siblings})

            def tree(self, name: str, commit: str, under: str, query: dict[str, list[str]]) -> None:
                files = hub.repos[name].commits[commit]
                recursive = query.get("recursive", ["false"])[0].lower() == "true"
                prefix = under.strip("/") + "/" if under.strip("/") else ""
                entries: dict[str, dict[str, object]] = {}
                for path, data in files.items():
                    if not path.startswith(prefix):
                        continue
                    rest = path[len(prefix):]
                    segments = rest.split("/")
                    for i in range(1, len(segments)):
                        folder = prefix + "/".join(segments[:i])
                        if recursive or i == 1:
                            entries.setdefault(folder, {"type": "directory", "oid": git_blob_id(folder.encode()),
                                                        "size": 0, "path": folder})
                    if recursive or len(segments) == 1:
                        entries[path] = hub.entry(path, data)
                if prefix and not entries:
                    return self.hub_error(404, "EntryNotFound", f"{under} does not exist on {commit}")
                self.paged([entries[k] for k in sorted(entries)], query)

            def paged(self, ordered: list[dict[str, object]], query: dict[str, list[str]]) -> None:
                start = int(query.get("cursor", ["0"])[0])
                page = ordered[start:start + PAGE]
                headers = {}
                if start + PAGE < len(ordered):
                    nxt = urllib.parse.urlsplit(self.path)._replace(
                        query=urllib.parse.urlencode({**{k: v[0] for k, v in query.items()}, "cursor": start + PAGE}))
                    host = self.headers.get("Host")
                    headers["Link"] = f'<http://{host}{urllib.parse.urlunsplit(nxt)}>; rel="next"'
                self.send_json(200, page, headers)

            def repo_at(self, name: str, rev: str) -> tuple[Repo, str] | None:
                """The repo and the commit `rev` names, or None after answering as the hub does."""
                repo = self.repo_of(name)
                commit = None if repo is None else self.commit_of(repo, rev)
                return None if repo is None or commit is None else (repo, commit)

            def resolve(self, name: str, rev: str, path: str) -> None:
                found = self.repo_at(name, rev)
                if found is None:
                    return
                repo, commit = found
                auth = self.headers.get("Authorization")
                if repo.gated and (hub.token is None or auth != f"Bearer {hub.token}"):
                    if auth:  # a valid token whose account was not granted access
                        return self.hub_error(403, "GatedRepo", f"Access to model {name} is restricted and you are not "
                                              "in the authorized list. Visit the model page to ask for access.")
                    return self.hub_error(401, "GatedRepo", f"Access to model {name} is restricted. You must have access "
                                          "to it and be authenticated to access it. Please log in.")
                data = repo.commits[commit].get(path)
                if data is None:
                    return self.hub_error(404, "EntryNotFound", "Entry not found")
                common = {"X-Repo-Commit": commit, "Accept-Ranges": "bytes"}
                if hub.redirect_lfs and hub.is_lfs(path, data):
                    sha = hashlib.sha256(data).hexdigest()
                    self.send_response(302)
                    for k, v in (common | {"Location": f"{hub.cdn_url}/lfs/{sha}", "X-Linked-Etag": f'"{sha}"',
                                           "X-Linked-Size": str(len(data)), "Content-Length": "0"}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    return
                self.serve(data, common | {"ETag": f'"{git_blob_id(data)}"'})

            def lfs(self, sha: str) -> None:
                for repo in hub.repos.values():
                    for files in repo.commits.values():
                        for data in files.values():
                            if hashlib.sha256(data).hexdigest() == sha:
                                return self.serve(data, {"ETag": f'"{sha}"'})
                self.hub_error(404, None, "Not Found")

            def serve(self, data: bytes, headers: dict[str, str]) -> None:
                start, end = 0, len(data) - 1
                rng = self.headers.get("Range")
                if rng:
                    first, _, last = rng.removeprefix("bytes=").partition("-")
                    start = int(first)
                    end = min(int(last), len(data) - 1) if last else len(data) - 1
                    if start >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(data)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
                else:
                    self.send_response(200)
                body = data[start:end + 1]
                self.send_header("Content-Length", str(len(body)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command == "HEAD":
                    return
                hub.bytes_served += len(body)
                if hub.cut_first_after is not None:
                    cut, hub.cut_first_after = hub.cut_first_after, None
                    self.wfile.write(body[:cut])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

        return Handler


@contextmanager
def serve() -> Iterator[tuple[FakeHub, str]]:
    fake = FakeHub()
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), fake.handler()) for _ in range(2)]
    for server in servers:
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
    fake.url, fake.cdn_url = (f"http://127.0.0.1:{s.server_address[1]}" for s in servers)
    try:
        yield fake, fake.url
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
