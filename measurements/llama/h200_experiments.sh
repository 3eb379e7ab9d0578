#!/bin/bash
# ON THE GPU MACHINE (device `run`), after pack_cuda.sh and `devcarry.sh run`: the maintainer's
# experiments on the bundled app's arguments (llamacppqwen36mtpone, its released argv and env,
# started by `olares-pack bench --launch`) with the synthetic model of the real shape
# (olares_pack/vram/synth.py: 64 layers + MTP, `mix80` drafts: acceptance is built in, only speed
# effects carry over), recorded as a synthetic experiment with the engine logs as attachments.
#   run: EXP=p-min bash .devcarry/h200_experiments.sh .devcarry     carry: [".devcarry"]
#   EXP=p-min:     --spec-draft-p-min 0, 0.5, 0.7 against the version's own (one at a time)
#   EXP=n-max-pdl: --spec-draft-n-max 2 and PDL off (GGML_CUDA_PDL=0, ggml/src/ggml-cuda/common.cuh
#                  of b11434, ggml_cuda_kernel_launch) against the version's own (one at a time)
# Each fits one 10-minute call at ROUNDS=2 RUNS=2 WARMUPS=1 MAXTOK=1000. What comes back in $OUT:
# the experiment file and its .raw/ folder of engine logs (copy both to
# apps/llamacppqwen36mtpone/bench/experiments/) and the sweep's JSON.
set -u
DIR=$(cd "${1:-.devcarry}" && pwd)
APP=llamacppqwen36mtpone
EXP=${EXP:?p-min or n-max-pdl}
S=$SECONDS
export PYTHONUNBUFFERED=1
# the build pack_cuda.sh left on a still-warm machine, else the carried pieces
[ -x /root/lc/bin/llama-server ] || { mkdir -p /root/lc && cat $DIR/llama-cuda-bin.tar.xz.* | xz -d | tar x -C /root/lc; } || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $DIR/whl/*.whl || exit 1
[ -f /root/m.gguf ] || PYTHONPATH=$DIR/gguf-py python3 $DIR/synth.py /root/m.gguf 64 --accept mix80 || exit 1
echo "model ready at $((SECONDS-S)) s"
case $EXP in
  p-min) SWEEP=(--sweep "--spec-draft-p-min=0,0.5,0.7") ;;
  n-max-pdl) SWEEP=(--sweep "--spec-draft-n-max=2" --sweep-env "GGML_CUDA_PDL=0") ;;
  *) echo "EXP: p-min or n-max-pdl"; exit 2 ;;
esac
# the record is written into a copy of the app (the checkout's is main's); $OUT brings it back
cp -r apps /tmp/apps
# the checkout's own olares_pack (the cwd comes first on sys.path) must not shadow the carried one
cd /tmp
LOGS=/tmp/engine-logs
PYTHONPATH=$DIR:/tmp/site python3 -c "from olares_pack.cli import main; main()" bench $APP --apps-dir /tmp/apps \
  --launch /root/lc/bin/llama-server --model /root/m.gguf "${SWEEP[@]}" --one-at-a-time \
  --rounds ${ROUNDS:-2} --runs ${RUNS:-2} --warmups ${WARMUPS:-1} --max-tokens ${MAXTOK:-1000} --gpu \
  --engine-log $LOGS --format json --record --experiment $EXP-h200 \
  --synthetic-model "olares_pack/vram/synth.py --accept mix80: the shape of Qwen3.6-27B (64 layers + MTP block, Q4_K) with made-up weights whose drafts are 78 % accepted at n 3" \
  --note "measurements/llama/h200_experiments.sh EXP=$EXP: llama.cpp b11434 built for sm_90 (measurements/llama/pack_cuda.sh)" \
  > $OUT/sweep.json 2> >(tee $OUT/progress.log >&2)
rc=$?
E=/tmp/apps/$APP/bench/experiments
cp $E/$EXP-h200.json $OUT/ 2>/dev/null
# the record's attachments (one engine log per start), as one archive: $OUT returns 8 files at most
tar czf $OUT/$EXP-h200.raw.tgz -C $E $EXP-h200.raw 2>/dev/null
echo "rc $rc, total $((SECONDS-S)) s"
exit $rc
