#!/usr/bin/env bash
# One device-tool call: environment, the whole test suite on CUDA (GPU-marked tests included),
# the notebooks under nbmake, the demo. Logs go to $OUT.
# Device tool usage: carry [".whl"] (wheels of nbmake, Jupyter and jupytext: bash tools/fetch_wheels.sh) and run
#   bash tools/gpu_check.sh [pytest args]
# With -n 8 (pytest-xdist) add --dist loadgroup: the tests that take tens of GiB of GPU memory
# then share one worker.
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site:$PWD
fi
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/env.txt"
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__)" | tee -a "$OUT/env.txt"
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(tests notebooks)
timeout "${PYTEST_TIMEOUT:-480}" python3 -m pytest -q -p no:cacheprovider --maxfail=25 --durations=15 "${args[@]}" 2>&1 \
    | tee "$OUT/pytest.log" | grep -v -E '^\.+ *\[|^$' | tail -50
python3 -m rltriton_lite 2>&1 | tee "$OUT/demo.log"
