#!/usr/bin/env bash
# The GPU check, one script (benchmarks/README.md, "On a GPU"): the card, Atari pretraining throughput with and
# without the compiled update step, and a short Atari APS run (pretrain, identify, zero-shot, fine-tune,
# score) through the command line. The logs, the run's scores and metrics go to OUTDIR (default runs/gpu_check),
# the run directory itself (checkpoints) to RUN_DIR (default OUTDIR/aps-pong).
#
#     bash benchmarks/gpu_check.sh [OUTDIR]                 # on a CUDA machine, from the repository root
#     DEVICE=cpu SMOKE=1 bash benchmarks/gpu_check.sh       # the same steps at toy sizes, to try it first
#
# PYTHON (default python3) must import aps_teach (installed, or this checkout on PYTHONPATH).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/gpu_check}
device=${DEVICE:-cuda}
python=${PYTHON:-python3}
run_dir=${RUN_DIR:-$out/aps-pong}
mkdir -p "$out"
export PYTHONUNBUFFERED=1

if [ -n "${SMOKE:-}" ]; then  # toy sizes: the script's plumbing, not its numbers
  bench=(--steps 64 --warmup 64 --small)
  run=(--atari.pretrain-steps 256 --atari.finetune-steps 128 --atari.task-id-steps 2000 --atari.eval-steps 1000
       --atari.max-frames-per-episode 400 --atari.min-replay-size 64 --atari.conv-channels 8 8 8
       --atari.psi-hidden 32 --atari.phi-hidden 32)
  compile=()
else  # each measured loop: 1,600 warm-up + 4,000 timed env steps, 8 games, one update per env step (the paper's)
  bench=(--steps 4000 --warmup 1600)
  run=(--atari.pretrain-steps 30000 --atari.finetune-steps 10000 --atari.task-id-steps 5000
       --atari.eval-steps 20000)
  compile=(--compile)
fi

step() {  # step NAME COMMAND...: run it, its output to the screen and OUTDIR/NAME.log, timed
  local name=$1; shift
  echo "== $name: $*"
  local start=$SECONDS
  "$@" 2>&1 | tee "$out/$name.log"
  echo "== $name: $((SECONDS - start)) s" | tee -a "$out/$name.log"
}

step card "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
  torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")'
step throughput "$python" benchmarks/atari_throughput.py --device "$device" "${bench[@]}"
step atari_run "$python" -m aps_teach atari run --out "$run_dir" --game pong --method aps --device "$device" \
  --force --no-progress "${run[@]}"
cp "$run_dir/scores.csv" "$out/aps-pong-scores.csv"
for phase in pretrain finetune; do
  cp "$run_dir/$phase/metrics.csv" "$out/aps-pong-$phase-metrics.csv"
done
if [ ${#compile[@]} -gt 0 ]; then
  step throughput_compiled "$python" benchmarks/atari_throughput.py --device "$device" "${bench[@]}" "${compile[@]}"
fi
echo "== done: logs in $out"
