#!/bin/sh
# Model download step (init container): the engine container starts only if this exits 0.
# - MODEL_FILES lists "name|size|sha256|urlpath" lines: each file is fetched from
#   $HF_ENDPOINT/<urlpath> (<repo>/resolve/<revision>/<name>, percent-encoded per segment by
#   olares-pack) into $MODEL_DIR, resuming a partial download (<name>.part) and skipping a file
#   already present with the right size and sha256. A file whose sha256 the app version does not
#   record is checked against the sha256 and size Hugging Face publishes for it: the resolve URL
#   answers an LFS file with X-Linked-Etag (its sha256) and X-Linked-Size before redirecting to
#   the content (huggingface_hub file_download.py reads them there too).
# - An empty MODEL_FILES fetches the whole repo into the hub cache $MODEL_CACHE (huggingface_hub).
# - HF_TOKEN is optional: public repos need none. It never reaches a command line (curl reads it
#   from a config on stdin, GNU wget from a private wgetrc, python3 from the environment).
# - Everything is written inside $MODEL_DIR, the app's own folder of the shared store, and only
#   files there are ever replaced or removed.
set -eu
umask 077

endpoint="${HF_ENDPOINT:-https://huggingface.co}"
endpoint="${endpoint%/}"
token="${HF_TOKEN:-}"
attempts="${DOWNLOAD_ATTEMPTS:-5}"
delay="${DOWNLOAD_RETRY_DELAY:-10}"

log() { echo "[download] $*"; }
have() { command -v "$1" >/dev/null 2>&1; }
size_of() { if [ -f "$1" ]; then wc -c <"$1" | tr -d ' '; else echo 0; fi; }

sha256_of() {
  if have sha256sum; then sha256sum "$1" | cut -d ' ' -f 1
  elif have python3; then python3 -c 'import hashlib,sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for b in iter(lambda: f.read(1 << 20), b""):
        h.update(b)
print(h.hexdigest())' "$1"
  else log "no sha256sum or python3 in this image: cannot verify $1"; return 1
  fi
}

# The header line for curl's config syntax: backslashes and quotes escaped.
curl_header() { printf 'header = "Authorization: Bearer %s"\n' "$(printf '%s' "$token" | sed 's/[\\"]/\\&/g')"; }

# fetch URL PART: append to PART from where it stopped (HTTP Range). -g: brackets in a file
# name are characters, not a curl glob.
fetch() {
  if have curl; then
    if [ -n "$token" ]; then
      curl_header | curl -K - -g -fsSL -C - -o "$2" "$1"
    else
      curl -g -fsSL -C - -o "$2" "$1"
    fi
  elif have wget && { [ -z "$token" ] || wget --version 2>/dev/null | grep -q "GNU Wget"; }; then
    if [ -n "$token" ]; then
      rc=$(mktemp)
      printf 'header = Authorization: Bearer %s\n' "$token" >"$rc"
      status=0
      WGETRC="$rc" wget -q -c -O "$2" "$1" || status=$?
      rm -f "$rc"
      return "$status"
    fi
    wget -q -c -O "$2" "$1"
  elif have python3; then
    python3 - "$1" "$2" <<'PY'
import os, sys, urllib.request
url, part = sys.argv[1], sys.argv[2]
have = os.path.getsize(part) if os.path.exists(part) else 0
req = urllib.request.Request(url)
if os.environ.get("HF_TOKEN"):
    req.add_header("Authorization", "Bearer " + os.environ["HF_TOKEN"])
if have:
    req.add_header("Range", "bytes=%d-" % have)
with urllib.request.urlopen(req, timeout=60) as resp:
    mode = "ab" if have and resp.status == 206 else "wb"
    with open(part, mode) as out:
        while True:
            chunk = resp.read(1 << 20)
            if not chunk:
                break
            out.write(chunk)
PY
  else
    log "no curl, wget or python3 in this image"; return 1
  fi
}

# progress FILE TOTAL: log the size of FILE every 30 s until killed (TERM also ends its sleep,
# which would otherwise hold the log pipe open).
progress() {
  trap 'kill "$nap" 2>/dev/null; exit 0' TERM
  while :; do
    sleep "${DOWNLOAD_PROGRESS_EVERY:-30}" &
    nap=$!
    wait "$nap"
    log "$(basename "$1"): $(size_of "$1") of ${2:-?} bytes"
  done
}

# resolve_headers URL: the headers of the resolve URL's own answer (its redirect is not followed).
resolve_headers() {
  if have curl; then
    if [ -n "$token" ]; then
      curl_header | curl -K - -g -fsSI "$1"
    else
      curl -g -fsSI "$1"
    fi
  elif have python3; then
    python3 - "$1" <<'PY'
import os, sys, urllib.error, urllib.request
class Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None
req = urllib.request.Request(sys.argv[1], method="HEAD")
if os.environ.get("HF_TOKEN"):
    req.add_header("Authorization", "Bearer " + os.environ["HF_TOKEN"])
try:
    resp = urllib.request.build_opener(Stay).open(req, timeout=60)
except urllib.error.HTTPError as exc:
    if exc.code >= 400:
        sys.exit(1)
    resp = exc
for k, v in resp.headers.items():
    print("%s: %s" % (k, v))
PY
  else
    return 1
  fi
}

# published URL: "size|sha256" as Hugging Face publishes them for an LFS file, or nothing.
published() {
  headers=$(resolve_headers "$1" 2>/dev/null | tr -d '\r') || return 0
  etag=$(printf '%s\n' "$headers" | sed -n 's/^[Xx]-[Ll]inked-[Ee]tag: *"\{0,1\}\([0-9a-f]\{64\}\)"\{0,1\} *$/\1/p' | head -n 1)
  linked=$(printf '%s\n' "$headers" | sed -n 's/^[Xx]-[Ll]inked-[Ss]ize: *\([0-9][0-9]*\) *$/\1/p' | head -n 1)
  if [ -n "$etag" ]; then printf '%s|%s\n' "$linked" "$etag"; fi
}

verified() {  # verified FILE SIZE SHA256
  [ -f "$1" ] || return 1
  if [ -n "$2" ] && [ "$(size_of "$1")" != "$2" ]; then return 1; fi
  if [ -n "$3" ] && [ "$(sha256_of "$1")" != "$3" ]; then return 1; fi
  return 0
}

inside() {  # inside PATH: a relative path of plain segments (no leading /, no . or ..)
  case "/$1/" in
    //*|*/./*|*/../*|*//*) return 1 ;;
  esac
  return 0
}

download_file() {  # download_file NAME SIZE SHA256 URLPATH
  name=$1 size=$2 sum=$3 urlpath=$4
  if ! inside "$name" || [ -z "$urlpath" ]; then
    log "refusing file name $name: not a plain path inside $MODEL_DIR"
    return 1
  fi
  out="$MODEL_DIR/$name"
  part="$out.part"
  url="$endpoint/$urlpath"
  if [ -z "$sum" ]; then
    pub=$(published "$url")
    if [ -n "$pub" ]; then
      sum=${pub#*|}
      size=${size:-${pub%%|*}}
      log "$name: this app version records no sha256; checking against the one Hugging Face publishes ($sum)"
    else
      log "$name: NOT VERIFIED: this app version records no sha256 and Hugging Face published none"
    fi
  fi
  if verified "$out" "$size" "$sum"; then
    log "$name: present and verified, skipped"
    return 0
  fi
  mkdir -p "$(dirname "$out")"
  if [ -f "$out" ]; then
    # Only verified files are ever renamed into place: this one is another version or damaged.
    log "$name: present but wrong size or checksum; downloading again"
    rm -f "$out"
  fi
  if [ -n "$size" ] && verified "$part" "$size" "$sum"; then
    mv "$part" "$out"
    log "$name: completed by an earlier run, verified"
    return 0
  fi
  log "$name: fetching $url (resuming at $(size_of "$part") bytes)"
  progress "$part" "$size" &
  ticker=$!
  n=1
  until fetch "$url" "$part"; do
    if [ "$n" -ge "$attempts" ]; then
      kill "$ticker" 2>/dev/null || true
      log "$name: failed after $n attempts"
      return 1
    fi
    log "$name: attempt $n failed, retrying in $((n * delay)) s"
    sleep $((n * delay))
    n=$((n + 1))
  done
  kill "$ticker" 2>/dev/null || true
  if ! verified "$part" "$size" "$sum"; then
    log "$name: size or sha256 does not match ${size:-?} bytes, sha256 ${sum:-?} (got $(size_of "$part") bytes)"
    rm -f "$part"
    return 1
  fi
  mv "$part" "$out"
  log "$name: done ($(size_of "$out") bytes)"
}

if [ -z "${MODEL_FILES:-}" ]; then
  log "fetching $MODEL_REPO@$MODEL_REVISION into $MODEL_CACHE"
  exec python3 -c 'import os
from huggingface_hub import snapshot_download
path = snapshot_download(os.environ["MODEL_REPO"], revision=os.environ["MODEL_REVISION"],
                         cache_dir=os.environ["MODEL_CACHE"], token=os.environ.get("HF_TOKEN") or None)
print("[download] snapshot ready at " + path)'
fi

case "$MODEL_DIR" in
  "$MODELS_ROOT"/hf-files/*) ;;
  *) log "MODEL_DIR $MODEL_DIR is not inside $MODELS_ROOT/hf-files"; exit 1 ;;
esac
if ! inside "${MODEL_DIR#"$MODELS_ROOT"/}"; then
  log "MODEL_DIR $MODEL_DIR is not a plain path"; exit 1
fi
mkdir -p "$MODEL_DIR"
printf '%s\n' "$MODEL_FILES" | while IFS='|' read -r name size sum urlpath; do
  [ -n "$name" ] || continue
  download_file "$name" "$size" "$sum" "$urlpath"
done
log "all files ready in $MODEL_DIR"
