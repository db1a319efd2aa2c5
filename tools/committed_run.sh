#!/usr/bin/env bash
# The data notebooks 05-09, 13 and 14 read, in one device-tool call: the harness at the shapes RL
# code uses (float32; peers and anchors; one process per shape, so a peer that breaks the CUDA
# context costs its shape only, and that shape is rerun without accelerated-scan), 16384x1024 for
# ours and the anchors alone, then the wall-time probe and the CUDA-graph replay probe.
# Device tool usage: carry [".whl", ".peers"] (bash tools/fetch_wheels.sh; tools/fetch_peers.sh) and run
#   bash tools/committed_run.sh
# then, here: python -m rltriton_lite.bench --merge <OUT>/r/*.json --out benchmarks/results/<gpu>-<date>.json
set -u
source "$(dirname "$0")/device_env.sh"
mkdir -p "$OUT/r"
# the harness's default peers but accelerated-scan (for a shape whose CUDA context it broke)
without_acc=$(python3 -c "from rltriton_lite.bench import PEERS
print(','.join(p.impl for p in PEERS if p.default and p.impl != 'accelerated_scan'))")
for shape in 16x128 4096x128 64x16384; do
    python3 -m rltriton_lite.bench --quick --peer-path .peers/rl-triton/src --shapes "$shape" --dtypes float32 \
        --out "$OUT/r/$shape.json" >> "$OUT/bench.log" 2>&1
    rc=$?
    echo "committed_run: $shape exit $rc at $SECONDS s" | tee -a "$OUT/bench.log"
    if [ "$rc" -ne 0 ]; then  # the CUDA context is gone: the shape again, without accelerated-scan
        python3 -m rltriton_lite.bench --quick --peer-path .peers/rl-triton/src --peers "$without_acc" \
            --shapes "$shape" --dtypes float32 --out "$OUT/r/$shape.json" >> "$OUT/bench.log" 2>&1
        echo "committed_run: $shape without accelerated_scan exit $? at $SECONDS s" | tee -a "$OUT/bench.log"
    fi
done
python3 -m rltriton_lite.bench --quick --peers none --shapes 16384x1024 --dtypes float32 \
    --out "$OUT/r/16384x1024.json" >> "$OUT/bench.log" 2>&1
echo "committed_run: 16384x1024 exit $? at $SECONDS s" | tee -a "$OUT/bench.log"
rm -f "$OUT"/r/*.png "$OUT"/r/*.md  # made again on merge
timeout 120 python3 tools/graph_replay_probe.py > "$OUT/graph_replay.txt" 2>&1
echo "committed_run: graph replay exit $? at $SECONDS s" | tee -a "$OUT/bench.log"
timeout 200 python3 tools/wall_probe.py > "$OUT/wall.txt" 2>&1
echo "committed_run: wall probe exit $? at $SECONDS s" | tee -a "$OUT/bench.log"
