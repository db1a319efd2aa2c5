# Sourced by the device-tool scripts: $OUT made, the carried wheels (.whl/, from
# tools/fetch_wheels.sh) installed to /tmp/site and put on PYTHONPATH with the repo, and the GPU,
# Python, torch and Triton versions written to $OUT/env.txt.
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site:$PWD
fi
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/env.txt"
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__)" | tee -a "$OUT/env.txt"
# the copy's .git may be older than its files: the sources' digest says which tree ran (compare it here:
# LC_ALL=C bash -c 'cat rltriton_lite/*.py notebooks/*.py | sha1sum': the C locale's order of the files)
git log -1 --format='commit %h %s (the copy'"'"'s .git)' 2>/dev/null | tee -a "$OUT/env.txt"
echo "sources $(LC_ALL=C bash -c 'cat rltriton_lite/*.py notebooks/*.py' | sha1sum | cut -c1-12)" | tee -a "$OUT/env.txt"
