#!/usr/bin/env bash
# The GPU check, one script (benchmarks/README.md, "On a GPU"): the card, gridworld seed groups of APS on the
# GPU (benchmarks/gridworld_gpu.py), Atari pretraining throughput without and with the compiled update step,
# and a slice of the first Atari study (docs/preregistration/atari_first.md: its update periods, APS and DQN on
# Boxing, shorter budgets, the two runs at once on the GPU) as a sweep through the command line, with each
# run's env-steps/s per phase and their sum. Each step runs under its own time limit, the whole within 8 minutes. The logs and the sweep's scores go
# to OUTDIR (default runs/gpu_check), the sweep itself (checkpoints) to RUN_DIR (default OUTDIR/study-slice).
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
run_dir=${RUN_DIR:-$out/study-slice}
mkdir -p "$out"
export PYTHONUNBUFFERED=1

if [ -n "${SMOKE:-}" ]; then  # toy sizes: the script's plumbing, not its numbers
  grid=(--steps 3200 --groups 3)
  bench=(--steps 64 --warmup 64 --small)
  run=(--atari.pretrain-steps 256 --atari.finetune-steps 128 --atari.task-id-steps 2000 --atari.eval-steps 1000
       --atari.max-frames-per-episode 400 --atari.min-replay-size 64 --atari.conv-channels 8 8 8
       --atari.psi-hidden 32 --atari.phi-hidden 32 --atari.k 3)
else  # the GPU sizes, each step under its own time limit (the whole within 8 minutes)
  grid=(--steps 8000 --groups 10 100)
  bench=(--steps 1000 --warmup 1600)  # each measured loop: 1,600 warm-up + 1,000 timed env steps, 8 games
  run=(--atari.pretrain-steps 6000 --atari.finetune-steps 3000 --atari.task-id-steps 2000
       --atari.eval-steps 16000)  # Boxing's games last about 1,800 steps
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
rm -rf "$run_dir"
step study_slice 150 "$python" -m aps_teach atari sweep --out "$run_dir" --games boxing --methods aps dqn \
  --device "$device" --runs-at-once 2 --no-progress --atari.pretrain-update-period 4 \
  --atari.finetune-update-period 1 "${run[@]}"
step study_rates 30 "$python" -c '
import csv, sys
from pathlib import Path
total = 0.0
for metrics in sorted(Path(sys.argv[1]).glob("runs/*/*/metrics.csv")):
    rows = [r for r in csv.DictReader(metrics.open()) if float(r["updates"] or 0) > 0]
    if rows:
        rate = sum(float(r["env_steps_per_s"]) for r in rows) / len(rows)
        total += rate
        print(f"{metrics.parent.parent.name} {metrics.parent.name}: {rate:.1f} env-steps/s")
print(f"summed over the runs phases (the two runs overlap in time): {total:.1f} env-steps/s")' "$run_dir"
cp "$run_dir/scores.csv" "$out/study-slice-scores.csv" 2>/dev/null || echo "== the study slice wrote no scores"
echo "== done: logs in $out"
