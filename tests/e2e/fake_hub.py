"""A local stand-in for the Hugging Face Hub and ModelScope, enough of their HTTP APIs for swift's downloads (what
huggingface_hub's file_download.py / hf_api.py and modelscope_hub's _legacy_api.py ask), with faults on demand.

    python fake_hub.py ROOT PORT_FILE

ROOT holds the repositories, read on every request so a test changes them between runs:
    ROOT/{models,datasets}/ORG/NAME/<commit>/...   a commit's files (40 hex digits)
    ROOT/{models,datasets}/ORG/NAME/refs/<name>    the commit a branch or tag names (main, master, v2)
    ROOT/{models,datasets}/ORG/NAME/TOKEN          a private repository: requests need "Authorization: Bearer <it>"
    ROOT/_cut       a file name: its download sends half of its bytes, then the connection is closed
    ROOT/_corrupt   a file name: its bytes are served with one byte changed (the advertised sha256 stays)
    ROOT/_norange   present: Range headers are ignored (the whole file, 200), as some CDNs and proxies do
Every request is appended to ROOT/_log.jsonl: method, path, Range and Authorization headers.

Hugging Face: GET /api/{models,datasets}/ORG/NAME/revision/REV?blobs=true; GET/HEAD [/datasets]/ORG/NAME/resolve/REV/PATH
(LFS files, *.safetensors and *.parquet, redirect to http://localhost:PORT/_cdn/... as the Hub redirects to its CDN,
with X-Linked-Etag / X-Linked-Size / X-Repo-Commit on the redirect). ModelScope: GET /api/v1/models/ORG/NAME/repo/files,
/api/v1/datasets/ORG/NAME/repo/tree (paged), /api/v1/{models,datasets}/ORG/NAME/repo?Revision=&FilePath=.
"""
import hashlib
import json
import os
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlsplit

ROOT = sys.argv[1]
LOG_LOCK = threading.Lock()
COMMIT_CHARS = set("0123456789abcdef")


def read_text(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def repo_dir(kind, repo):
    return os.path.join(ROOT, kind, *repo.split("/"))


def resolve_commit(kind, repo, revision):
    base = repo_dir(kind, repo)
    if len(revision) == 40 and set(revision) <= COMMIT_CHARS and os.path.isdir(os.path.join(base, revision)):
        return revision
    commit = read_text(os.path.join(base, "refs", revision))
    return commit or None


def files_of(kind, repo, commit):
    top = os.path.join(repo_dir(kind, repo), commit)
    out = []
    for dirpath, _, names in os.walk(top):
        for name in sorted(names):
            full = os.path.join(dirpath, name)
            out.append((os.path.relpath(full, top).replace(os.sep, "/"), full))
    return sorted(out)


def is_lfs(path):
    return path.endswith(".safetensors") or path.endswith(".parquet")


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def content(path, full):
    with open(full, "rb") as f:
        data = f.read()
    if read_text(os.path.join(ROOT, "_corrupt")) == path.rsplit("/", 1)[-1]:
        data = data[:-1] + bytes([data[-1] ^ 0xFF])
    return data


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self):
        entry = {"method": self.command, "path": self.path, "range": self.headers.get("Range", ""),
                 "auth": self.headers.get("Authorization", ""), "cookie": self.headers.get("Cookie", "")}
        with LOG_LOCK, open(os.path.join(ROOT, "_log.jsonl"), "a") as f:
            f.write(json.dumps(entry) + "\n")

    def reply(self, status, body=b"", headers=None, content_type="application/json"):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def authorized(self, kind, repo):
        token = read_text(os.path.join(repo_dir(kind, repo), "TOKEN"))
        return not token or self.headers.get("Authorization", "") == "Bearer " + token

    def send_bytes(self, path, data, extra_headers=None):
        """The file with Range support; the _cut file gets half of what was asked, then a closed connection."""
        start = 0
        status = 200
        rng = self.headers.get("Range", "")
        headers = dict(extra_headers or {})
        if rng.startswith("bytes=") and rng.endswith("-") and not os.path.exists(os.path.join(ROOT, "_norange")):
            start = int(rng[len("bytes="):-1])
            if start >= len(data):
                return self.reply(416, b"", {"Content-Range": "bytes */%d" % len(data)})
            status = 206
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, len(data) - 1, len(data))
        body = data[start:]
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command == "HEAD":
            return
        if read_text(os.path.join(ROOT, "_cut")) == path.rsplit("/", 1)[-1] and len(body) > 1:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        self.wfile.write(body)

    # ---- Hugging Face ------------------------------------------------------------------------------------------
    def hf_info(self, kind, repo, revision):
        if not os.path.isdir(repo_dir(kind, repo)):
            return self.reply(404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
        if not self.authorized(kind, repo):
            return self.reply(401, {"error": "Invalid credentials"}, {"X-Error-Code": "RepoNotFound"})
        commit = resolve_commit(kind, repo, revision)
        if commit is None:
            return self.reply(404, {"error": "Invalid rev id: " + revision}, {"X-Error-Code": "RevisionNotFound"})
        siblings = []
        for path, full in files_of(kind, repo, commit):
            with open(full, "rb") as f:
                data = f.read()
            sibling = {"rfilename": path, "size": len(data), "blobId": git_blob_id(data)}
            if is_lfs(path):
                sibling["lfs"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "pointerSize": 134}
            siblings.append(sibling)
        self.reply(200, {"id": repo, "sha": commit, "siblings": siblings})

    def hf_resolve(self, kind, repo, revision, path):
        if not os.path.isdir(repo_dir(kind, repo)) or not self.authorized(kind, repo):
            return self.reply(401, {"error": "Invalid credentials"}, {"X-Error-Code": "RepoNotFound"})
        commit = resolve_commit(kind, repo, revision)
        files = dict(files_of(kind, repo, commit)) if commit else {}
        if path not in files:
            return self.reply(404, {"error": "Entry not found"}, {"X-Error-Code": "EntryNotFound"})
        with open(files[path], "rb") as f:
            real = f.read()
        if is_lfs(path):
            sha = hashlib.sha256(real).hexdigest()
            port = self.server.server_address[1]
            location = "http://localhost:%d/_cdn/%s/%s/%s/%s" % (port, kind, repo, commit, quote(path))
            return self.reply(302, b"", {"Location": location, "X-Linked-Etag": '"%s"' % sha, "X-Linked-Size": str(len(real)),
                                         "X-Repo-Commit": commit, "ETag": '"%s"' % git_blob_id(real)})
        self.send_bytes(path, content(path, files[path]), {"ETag": '"%s"' % git_blob_id(real), "X-Repo-Commit": commit})

    def cdn(self, rest):
        kind, org, name, commit, path = rest.split("/", 4)
        path = unquote(path)
        files = dict(files_of(kind, org + "/" + name, commit))
        if path not in files:
            return self.reply(404, b"NoSuchKey", content_type="text/plain")
        self.send_bytes(path, content(path, files[path]), {"ETag": '"cdn-etag"'})

    # ---- ModelScope --------------------------------------------------------------------------------------------
    def ms_listing(self, kind, repo, query):
        if not os.path.isdir(repo_dir(kind, repo)):
            return self.reply(404, {"Code": 10010205001, "Success": False, "Message": "repo not exists"})
        if not self.authorized(kind, repo):
            return self.reply(401, {"Code": 10010205002, "Success": False, "Message": "unauthorized"})
        revision = query.get("Revision", ["master"])[0]
        commit = resolve_commit(kind, repo, revision)
        if commit is None:
            return self.reply(404, {"Code": 10010205003, "Success": False, "Message": "Revision %s not found" % revision})
        entries, dirs = [], set()
        for path, full in files_of(kind, repo, commit):
            parts = path.split("/")
            for i in range(1, len(parts)):
                dirs.add("/".join(parts[:i]))
            with open(full, "rb") as f:
                data = f.read()
            entries.append({"Name": parts[-1], "Path": path, "Type": "blob", "Size": len(data),
                            "Sha256": hashlib.sha256(data).hexdigest(), "Revision": commit})
        entries = [{"Name": d.rsplit("/", 1)[-1], "Path": d, "Type": "tree"} for d in sorted(dirs)] + entries
        if kind == "datasets":
            page, size = int(query.get("PageNumber", ["1"])[0]), int(query.get("PageSize", ["200"])[0])
            entries = entries[(page - 1) * size: page * size]
        self.reply(200, {"Code": 200, "Data": {"Files": entries}, "Success": True})

    def ms_file(self, kind, repo, query):
        if not self.authorized(kind, repo):
            return self.reply(401, {"Code": 10010205002, "Success": False, "Message": "unauthorized"})
        revision = query.get("Revision", ["master"])[0]
        path = query.get("FilePath", [""])[0]
        commit = resolve_commit(kind, repo, revision)
        files = dict(files_of(kind, repo, commit)) if commit else {}
        if path not in files:
            return self.reply(404, {"Code": 10010205004, "Success": False, "Message": "file not exists"})
        self.send_bytes(path, content(path, files[path]))

    def route(self):
        self.record()
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split("/")[1:]]
        query = parse_qs(url.query)
        if parts[:1] == ["_cdn"]:
            return self.cdn(url.path[len("/_cdn/"):])
        if parts[:1] == ["api"] and len(parts) >= 6 and parts[1] in ("models", "datasets") and parts[4] == "revision":
            return self.hf_info(parts[1], parts[2] + "/" + parts[3], "/".join(parts[5:]))
        if parts[:2] == ["api", "v1"] and len(parts) >= 6 and parts[2] in ("models", "datasets"):
            kind, repo = parts[2], parts[3] + "/" + parts[4]
            if parts[5:] in (["repo", "files"], ["repo", "tree"]):
                return self.ms_listing(kind, repo, query)
            if parts[5:] == ["repo"]:
                return self.ms_file(kind, repo, query)
        kind = "models"
        if parts[:1] == ["datasets"]:
            kind, parts = "datasets", parts[1:]
        if len(parts) >= 5 and parts[2] == "resolve":
            raw = url.path.split("/")[1:]
            raw = raw[1:] if kind == "datasets" else raw
            return self.hf_resolve(kind, parts[0] + "/" + parts[1], parts[3], unquote("/".join(raw[4:])))
        self.reply(404, {"error": "no route " + url.path})

    do_GET = route
    do_HEAD = route


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, sys.argv[2])
    server.serve_forever()


if __name__ == "__main__":
    main()
