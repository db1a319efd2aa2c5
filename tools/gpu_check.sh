#!/usr/bin/env bash
# One device-tool call: environment, the whole test suite on CUDA (GPU-marked tests included),
# the demo. Logs go to $OUT. Usage (device tool): bash tools/gpu_check.sh
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/env.txt"
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__)" | tee -a "$OUT/env.txt"
timeout "${PYTEST_TIMEOUT:-420}" python3 -m pytest -q -p no:cacheprovider --maxfail=25 --durations=15 tests "$@" 2>&1 \
    | tee "$OUT/pytest.log" | grep -v -E '^\.+ *\[|^$' | tail -60
python3 -m rltriton_lite 2>&1 | tee "$OUT/demo.log"
