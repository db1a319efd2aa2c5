#!/usr/bin/env bash
# One device-tool call: environment, the whole test suite on CUDA (GPU-marked tests included),
# the notebooks under nbmake, the demo. Logs go to $OUT.
# Device tool usage: carry [".whl"] (wheels of nbmake, Jupyter and jupytext: bash tools/fetch_wheels.sh) and run
#   bash tools/gpu_check.sh [pytest args]
# With -n 8 (pytest-xdist) add --dist loadgroup: the tests that take tens of GiB of GPU memory
# then share one worker.
source "$(dirname "$0")/device_env.sh"
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(tests notebooks)
timeout "${PYTEST_TIMEOUT:-480}" python3 -m pytest -q -p no:cacheprovider --maxfail=25 --durations=15 "${args[@]}" 2>&1 \
    | tee "$OUT/pytest.log" | grep -v -E '^\.+ *\[|^$' | tail -50
python3 -m rltriton_lite 2>&1 | tee "$OUT/demo.log"
