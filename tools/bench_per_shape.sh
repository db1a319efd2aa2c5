#!/usr/bin/env bash
# The benchmark harness, one process per shape, inside one device-tool call; then merged.
# A peer that breaks the CUDA context (accelerated-scan's bf16 backward did once) costs its own
# shape only, and a call cut at its time limit keeps every shape finished before it.
# Device tool usage: carry [".whl"] (the peers' wheels: bash tools/fetch_wheels.sh) and run
#   bash tools/bench_per_shape.sh SECONDS [SHAPE:DTYPES ...]
# e.g. bash tools/bench_per_shape.sh 540 16384x1024:float32,bfloat16 4096x128:float32
# The per-shape JSONs and their log go to $OUT/r; merge them anywhere (no GPU needed) with
#   python -m rltriton_lite.bench --merge r/*.json --out benchmarks/results/<gpu>-<date>.json
set -u
budget=${1:?seconds}
shift
specs=("$@")
[ ${#specs[@]} -eq 0 ] && specs=(16384x1024:float32,bfloat16 4096x128:float32,bfloat16 8x131072:float32
                                 64x16384:float32 1x1048576:float32 1024x1024:float32 16x128:float32)
source "$(dirname "$0")/device_env.sh"
mkdir -p "$OUT/r"
end=$((SECONDS + budget))
for spec in "${specs[@]}"; do
    shape=${spec%%:*}
    dtypes=${spec#*:}
    left=$((end - SECONDS))
    if [ "$left" -lt 30 ]; then
        echo "bench_per_shape: no time left for $shape" | tee -a "$OUT/r/bench.log"
        continue
    fi
    timeout "$left" python3 -m rltriton_lite.bench --quick --shapes "$shape" --dtypes "$dtypes" \
        --out "$OUT/r/$shape.json" >> "$OUT/r/bench.log" 2>&1
    echo "bench_per_shape: $shape exit $? at $SECONDS s" | tee -a "$OUT/r/bench.log"
    rm -f "$OUT"/r/*.png "$OUT"/r/*.md  # the files that come back are few: the report is made on merge
done
