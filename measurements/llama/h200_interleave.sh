#!/bin/bash
# On the GPU machine (the `run` tool), from the checkout's root with DIR carried (what h200.sh
# needs): olares-pack's harness and llama-benchy 0.4.0 on the same llama-server, INTERLEAVED in
# rounds (harness, then llama-benchy, ROUNDS times), so that both tools measure the same minutes
# of a server whose speed drifts over a session (h200.sh measured them one after the other: 128 vs
# 125 t/s, and the server itself went from 128-129 to 120-123 t/s). Then the harness-overhead pairs.
#   bash DIR/h200_interleave.sh DIR
set -u
DIR=$(cd "${1:-.devcarry}" && pwd)
S=$SECONDS
export PYTHONUNBUFFERED=1
# the build pack_cuda.sh left on a still-warm machine, else the carried pieces
[ -x /root/lc/bin/llama-server ] || { mkdir -p /root/lc && cat $DIR/llama-cuda-bin.tar.xz.* | xz -d | tar x -C /root/lc; } || exit 1
BIN=/root/lc/bin
export LD_LIBRARY_PATH=$BIN
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $DIR/whl/*.whl || exit 1
PYTHONPATH=$DIR/gguf-py python3 $DIR/synth.py /root/m.gguf 64 --accept mix80 || exit 1
ARGS="--parallel 1 --ctx-size 262144 --n-gpu-layers 99 --flash-attn on --cache-type-k q4_0 --cache-type-v q4_0 --batch-size 512 --ubatch-size 512 --threads 16 --jinja --spec-type draft-mtp --spec-draft-n-max 3"
$BIN/llama-server -m /root/m.gguf --alias qwen3.6-27b-mtp --host 127.0.0.1 --port 8000 $ARGS > $OUT/server.log 2>&1 &
PID=$!
for i in $(seq 120); do curl -sf localhost:8000/health >/dev/null && break; kill -0 $PID || { tail -20 $OUT/server.log; exit 1; }; sleep 1; done
cd /tmp
echo "server up after $((SECONDS-S)) s: $($BIN/llama-server --version 2>&1 | head -1)"
export PYTHONPATH=$DIR
mkdir -p ~/.cache/llama-benchy && python3 $DIR/benchy_offline.py ~/.cache/llama-benchy /root/tok.json
for r in $(seq ${ROUNDS:-3}); do
  python3 -m olares_pack.bench http://127.0.0.1:8000 --warmups 1 --runs ${RUNS:-2} --json $OUT/harness-$r.json || exit 1
  PYTHONPATH=/tmp/site timeout 150 python3 -m llama_benchy --base-url http://127.0.0.1:8000/v1 --model qwen3.6-27b-mtp \
    --tokenizer /root/tok.json --pp ${BENCHY_PP:-640} --tg 2000 --exact-tg --runs ${RUNS:-2} --no-cache --skip-coherence \
    --latency-mode none --format json --save-result $OUT/benchy-$r.json > /dev/null 2>&1 || echo "llama-benchy round $r failed"
  echo "round $r done at $((SECONDS-S)) s"
done
timeout ${OVERHEAD_S:-200} python3 $DIR/bench_overhead.py http://127.0.0.1:8000 ${PAIRS:-8} ${OVERHEAD_TOKENS:-1000} --json $OUT/overhead.json
echo "total $((SECONDS-S)) s"
