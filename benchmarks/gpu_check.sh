#!/usr/bin/env bash
# The GPU check, one script (benchmarks/README.md, "On a GPU"): the card, gridworld seed groups of APS on the
# GPU (benchmarks/gridworld_gpu.py), Atari pretraining throughput without and with the compiled update step,
# and a short Atari APS run (pretrain, identify, zero-shot, fine-tune, score) through the command line. Each
# step runs under its own time limit, the whole within 8 minutes. The logs and the run's scores go to OUTDIR
# (default runs/gpu_check), the run directory itself (checkpoints) to RUN_DIR (default OUTDIR/aps-pong).
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
  grid=(--steps 3200 --groups 3)
  bench=(--steps 64 --warmup 64 --small)
  run=(--atari.pretrain-steps 256 --atari.finetune-steps 128 --atari.task-id-steps 2000 --atari.eval-steps 1000
       --atari.max-frames-per-episode 400 --atari.min-replay-size 64 --atari.conv-channels 8 8 8
       --atari.psi-hidden 32 --atari.phi-hidden 32)
else  # the GPU sizes, each step under its own time limit (the whole within 8 minutes)
  grid=(--steps 8000 --groups 10 100)
  bench=(--steps 1000 --warmup 1600)  # each measured loop: 1,600 warm-up + 1,000 timed env steps, 8 games
  run=(--atari.pretrain-steps 3000 --atari.finetune-steps 1500 --atari.task-id-steps 1500
       --atari.eval-steps 16000)  # 4,000 eval steps over 8 envs finished no game of Pong (2026-11-27)
fi

step() {  # step NAME SECONDS COMMAND...: run it under a time limit, its output to the screen and
  local name=$1 limit=$2; shift 2  # OUTDIR/NAME.log, timed; a step that fails or overruns does not stop the rest
  echo "== $name: $*"
  local start=$SECONDS status=0
  timeout "$limit" "$@" 2>&1 | tee "$out/$name.log" || status=$?  # pipefail: the command's status
  echo "== $name: $((SECONDS - start)) s, exit status $status" | tee -a "$out/$name.log"
}

step card 30 "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
  torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")'
step gridworld 140 "$python" benchmarks/gridworld_gpu.py --device "$device" "${grid[@]}"
step throughput 110 "$python" benchmarks/atari_throughput.py --device "$device" "${bench[@]}"
step throughput_compiled 110 "$python" benchmarks/atari_throughput.py --device "$device" "${bench[@]}" --compile
step atari_run 90 "$python" -m aps_teach atari run --out "$run_dir" --game pong --method aps --device "$device" \
  --force --no-progress "${run[@]}"
cp "$run_dir/scores.csv" "$out/aps-pong-scores.csv" 2>/dev/null || echo "== the Atari run wrote no scores"
echo "== done: logs in $out"
