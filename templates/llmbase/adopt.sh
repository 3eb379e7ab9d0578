#!/bin/sh
# Adopts the model copies an earlier version of the app kept flat in the shared Hugging Face
# store (olares-pack's per-user download step wrote <store>/hf-files/<repo>/<revision>/<file>)
# into the hub cache llm-init reads, so that an upgrade does not download them again.
#
# llm-init (v1.1.0 and later) downloads with `hf download` into the cache (beclab/model-console
# internal/adapter/hfwrap/runner.go, Run and buildArgs, at 075f459f). huggingface_hub asks the hub
# for each file's etag and skips the download when <cache>/models--<org>--<name>/blobs/<etag> exists,
# linking the snapshot to it (huggingface_hub src/huggingface_hub/file_download.py,
# _hf_hub_download_to_cache_dir: "we have the blob already, but not the pointer"). An LFS file's
# etag is its sha256; a small file kept in git has its git blob sha1 as etag. So each old file is
# hard-linked under the names its content gives it: a blob whose name the hub does not publish is
# never used, and a damaged copy is downloaded again, never served.
#
# A folder that is itself a hub cache of the model (an earlier download step's snapshot_download
# into <store>/hub/models--<org>--<name>) already names its blobs by etag: they are linked under
# the same names, without hashing.
#
# Hard links: nothing is copied or moved (same folder tree, no second 15 GB), the old path keeps
# working for a version that still reads it. A file already linked (more than one name) was
# adopted before and is not hashed again. Where a version before this step downloaded the same
# bytes again, the old name is made a link to the cache's blob: the second copy's space is freed.
#   ADOPT_FROM  folders under $HF_HUB_CACHE, one per line: flat copies, or a hub cache (blobs/)
#   ADOPT_INTO  the model's cache folder name (models--<org>--<name>)
set -eu

log() { printf '[olares-pack-adopt] %s\n' "$*"; }
cache=${HF_HUB_CACHE:-/cache/hf/hub}
blobs="$cache/$ADOPT_INTO/blobs"
small=10485760  # Hugging Face keeps files above 10 MB in LFS only: their etag is the sha256

printf '%s\n' "$ADOPT_FROM" | while IFS= read -r rel; do
  [ -n "$rel" ] || continue
  [ -d "$cache/$rel" ] || { log "no earlier copy in $rel"; continue; }
  if [ -d "$cache/$rel/blobs" ]; then
    mkdir -p "$blobs"
    for b in "$cache/$rel"/blobs/*; do
      name=${b##*/}
      case $name in *.incomplete | *.lock | '*') continue ;; esac
      if [ ! -e "$blobs/$name" ]; then
        ln "$b" "$blobs/$name" || log "$rel/blobs/$name: not linked"
      elif [ "$(stat -c %i "$b")" != "$(stat -c %i "$blobs/$name")" ]; then
        ln -f "$blobs/$name" "$b" || true  # the same etag downloaded twice: keep one copy
      fi
    done
    log "$rel: blobs linked"
    continue
  fi
  find "$cache/$rel" -type f ! -name '*.part' ! -name '*.incomplete' | while IFS= read -r f; do
    if [ "$(stat -c %h "$f")" -gt 1 ]; then
      log "${f#"$cache"/}: adopted before"
      continue
    fi
    mkdir -p "$blobs"
    size=$(stat -c %s "$f")
    sha=$(sha256sum "$f" | cut -d ' ' -f 1)
    # a link that cannot be made costs a download, never the start: the step always succeeds
    if [ -e "$blobs/$sha" ]; then
      # downloaded again by a version before this step: the same bytes twice; keep one
      ln -f "$blobs/$sha" "$f" && log "${f#"$cache"/}: already in the cache, the copy now shares its blob" || true
      continue
    fi
    ln "$f" "$blobs/$sha" || { log "${f#"$cache"/}: not linked"; continue; }
    if [ "$size" -le "$small" ]; then
      git=$({ printf 'blob %s\000' "$size"; cat "$f"; } | sha1sum | cut -d ' ' -f 1)
      [ -e "$blobs/$git" ] || ln "$f" "$blobs/$git" || true
    fi
    log "${f#"$cache"/}: $size bytes, blob $sha"
  done
done
