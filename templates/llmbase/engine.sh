#!/bin/sh
# Engine wrapper of an olares-pack shared LLM app (mounted at /llm-init/wrappers/engine.sh).
# 1. Waits for llm-init's sentinel ($RUN_DIR/model_download_finish): the model is in the Hugging
#    Face cache ($HF_HUB_CACHE), as in the official wrappers (beclab/apps llamacppllmbasev3).
# 2. Checks every file of MODEL_FILES ("name|size|sha256" lines) against the sizes and sha256
#    olares-pack recorded: once per file (a stamp in $VERIFY_DIR remembers the verdict for this
#    exact file: its size and modification time), before the engine starts. A file that differs
#    stops here: the engine never starts on a truncated or substituted model. Where this app
#    version records no sha256, the file is checked against the name Hugging Face's cache gave
#    its blob: huggingface_hub stores a download as blobs/<etag>, and an LFS file's etag is the
#    sha256 Hugging Face publishes for it (llm-init downloads with `hf download`).
# 3. Starts the engine on the verified snapshot with ENGINE_ARGS (the clone dialog's value;
#    llm-init's $RUN_DIR/engine_args handoff wins when it is there, as in the official wrappers).
set -eu

log() { printf '[olares-pack-engine] %s\n' "$*"; }
SENTINEL=${SENTINEL:-$RUN_DIR/model_download_finish}
ENGINE_ARGS_FILE=${ENGINE_ARGS_FILE:-$RUN_DIR/engine_args}
WAIT_INTERVAL=${WAIT_INTERVAL:-5}
WAIT_TIMEOUT=${WAIT_TIMEOUT:-3600}
ENGINE_ARGS_WAIT_TIMEOUT=${ENGINE_ARGS_WAIT_TIMEOUT:-60}
TERMINATION_LOG=${TERMINATION_LOG:-/dev/termination-log}

# fail MESSAGE: the log line and the container's termination message (the pod's status).
fail() {
  log "$1"
  printf '%s\n' "$1" >"$TERMINATION_LOG" 2>/dev/null || true
  exit "${2:-1}"
}

elapsed=0
while [ ! -f "$SENTINEL" ]; do
  [ "$elapsed" -lt "$WAIT_TIMEOUT" ] || fail "timed out after ${WAIT_TIMEOUT}s waiting for llm-init ($SENTINEL)"
  log "waiting for the model download ($SENTINEL, ${elapsed}s)"
  sleep "$WAIT_INTERVAL"
  elapsed=$((elapsed + WAIT_INTERVAL))
done

# The snapshot folder of MODEL_REPO at MODEL_REVISION (a commit, or a branch through refs/).
repo_dir="$HF_HUB_CACHE/models--$(printf '%s' "$MODEL_REPO" | sed 's#/#--#g')"
rev=$MODEL_REVISION
if [ -f "$repo_dir/refs/$rev" ]; then rev=$(tr -d '\r\n' <"$repo_dir/refs/$rev"); fi
snapshot="$repo_dir/snapshots/$rev"
if [ ! -d "$snapshot" ]; then
  # llm-init fetches the repository's default revision: take its only snapshot, the checksums
  # below say whether it holds the files olares-pack recorded.
  set -- "$repo_dir"/snapshots/*
  [ "$#" -eq 1 ] && [ -d "$1" ] || fail "no snapshot of $MODEL_REPO at $MODEL_REVISION in $HF_HUB_CACHE"
  snapshot=$1
fi

size_of() { wc -c <"$1" | tr -d ' '; }
sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d ' ' -f 1
  else python3 -c 'import hashlib,sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for b in iter(lambda: f.read(1 << 20), b""):
        h.update(b)
print(h.hexdigest())' "$1"
  fi
}
# The identity of a file's bytes as the file system shows them: size and modification time.
identity() { stat -L -c '%s-%Y' "$1" 2>/dev/null || size_of "$1"; }

mkdir -p "$VERIFY_DIR"
bad=""
while IFS='|' read -r name size sum; do
  [ -n "$name" ] || continue
  path="$snapshot/$name"
  [ -f "$path" ] || fail "MODEL CHECK FAILED: $name is not in the downloaded model ($snapshot); the engine does not start"
  key=$(printf '%s' "$name" | sed 's#[^A-Za-z0-9._-]#_#g')
  stamp="$VERIFY_DIR/$key"
  want="$size|$sum|$(identity "$path")"
  if [ -f "$stamp" ] && [ "$(sed -n 1p "$stamp")" = "$want" ]; then
    verdict=$(sed -n 2p "$stamp")
    log "$name: checked before ($verdict)"
  else
    got_size=$(size_of "$path")
    verdict=ok
    if [ -n "$size" ] && [ "$got_size" != "$size" ]; then
      verdict="size $got_size bytes, expected $size"
    elif [ -n "$sum" ]; then
      log "$name: checking sha256 of $got_size bytes"
      got_sum=$(sha256_of "$path")
      [ "$got_sum" = "$sum" ] || verdict="sha256 $got_sum, expected $sum"
    else
      blob=$(readlink "$path" 2>/dev/null || true)
      blob=${blob##*/}
      case $blob in
        *[!0-9a-f]* | "") blob="" ;;
      esac
      if [ "${#blob}" -eq 64 ]; then
        log "$name: this app version records no sha256; checking $got_size bytes against the sha256 Hugging Face's cache names it by"
        got_sum=$(sha256_of "$path")
        [ "$got_sum" = "$blob" ] || verdict="sha256 $got_sum, but Hugging Face published $blob for it"
      else
        log "$name: NOT VERIFIED: this app version records no sha256 and the cache does not name the file by one"
      fi
    fi
    printf '%s\n%s\n' "$want" "$verdict" >"$stamp.tmp" && mv "$stamp.tmp" "$stamp"
    log "$name: $verdict"
  fi
  [ "$verdict" = ok ] || bad="$bad $name: $verdict;"
done <<EOF
$MODEL_FILES
EOF
[ -z "$bad" ] || fail "MODEL CHECK FAILED:$bad the file differs from the one this app version was released with (truncated or replaced download); the engine does not start. Remove it from the Hugging Face cache so llm-init downloads it again." 3
log "model verified: $snapshot"

elapsed=0
while [ ! -f "$ENGINE_ARGS_FILE" ] && [ "$elapsed" -lt "$ENGINE_ARGS_WAIT_TIMEOUT" ]; do
  sleep "$WAIT_INTERVAL"
  elapsed=$((elapsed + WAIT_INTERVAL))
done
if [ -f "$ENGINE_ARGS_FILE" ]; then
  ENGINE_ARGS=$(tr -d '\r\n' <"$ENGINE_ARGS_FILE")
  log "ENGINE_ARGS from $ENGINE_ARGS_FILE"
fi

set -f  # ENGINE_ARGS is split on white space, never globbed
# shellcheck disable=SC2086
case "$ENGINE_KIND" in
  llamacpp)
    bin=${LLAMA_SERVER_BIN:-}
    if [ -z "$bin" ]; then
      if [ -x /app/llama-server ]; then bin=/app/llama-server; else bin=$(command -v llama-server || true); fi
    fi
    [ -n "$bin" ] || fail "llama-server not found in the engine image" 127
    first=$(printf '%s\n' "$MODEL_FILES" | sed -n '1s/|.*//p')
    log "starting $bin on $first: ${ENGINE_ARGS:-} ${ENGINE_EXTRA_ARGS:-}"
    exec "$bin" --model "$snapshot/$first" --alias "$MODEL_NAME" --host 0.0.0.0 --port "$LLAMACPP_PORT" \
      ${ENGINE_ARGS:-} ${ENGINE_EXTRA_ARGS:-}
    ;;
  vllm)
    bin=${VLLM_BIN:-$(command -v vllm || true)}
    log "starting vllm on $snapshot: ${ENGINE_ARGS:-}"
    if [ -n "$bin" ]; then
      exec "$bin" serve "$snapshot" --served-model-name "$MODEL_NAME" --host 0.0.0.0 --port "$VLLM_PORT" \
        ${ENGINE_ARGS:-}
    fi
    exec python3 -m vllm.entrypoints.openai.api_server --model "$snapshot" --served-model-name "$MODEL_NAME" \
      --host 0.0.0.0 --port "$VLLM_PORT" ${ENGINE_ARGS:-}
    ;;
  *) fail "unknown ENGINE_KIND ${ENGINE_KIND:-<empty>}" ;;
esac
