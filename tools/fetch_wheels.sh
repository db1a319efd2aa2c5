#!/usr/bin/env bash
# The wheels the lent H200 lacks, into the git-ignored .whl/ (python 3.12, manylinux x86_64):
# the peers of the benchmark harness (torchrl and what it needs beyond the image, accelerated-scan)
# and what the notebooks' tests need there (nbmake, Jupyter's kernel and client, ipywidgets,
# jupytext; stable-baselines3 and gymnasium for the drop-ins' tests and notebook 10). Packages the image already has (pytest, pygments, packaging, psutil, attrs,
# typing-extensions, python-dateutil, markdown-it-py, pyyaml) are left out: two versions of one
# package stop the install. Run here (needs the network), then carry [".whl"] in device calls:
#   bash tools/fetch_wheels.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.whl
mkdir -p "$dest"
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64)
get() {  # get [--no-deps] SPEC...
    python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" \
        -d "$dest" "$@"
}
get --no-deps torchrl==0.14.1 tensordict==0.14.3 pyvers==0.2.3 hoptorch==0.1.4 accelerated-scan==0.3.1
get nbmake==1.5.5 ipywidgets==8.1.9 jupytext==1.19.6
get --no-deps stable-baselines3==2.9.2 gymnasium==1.4.0 cloudpickle==3.1.3 farama-notifications==0.0.6  # the drop-ins' oracles
get --no-deps verl==0.9.1  # integrations.verl's oracle: its source is read, the package never imported
for image_has in attrs iniconfig packaging pluggy psutil pygments pytest python_dateutil typing_extensions tzdata \
                 markdown_it_py mdurl pyyaml PyYAML; do
    rm -f "$dest/$image_has"-[0-9]*.whl
done
ls "$dest" | wc -l
du -sh "$dest"
