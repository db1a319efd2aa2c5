#!/usr/bin/env bash
# Export the peers that the benchmark loads from a path (not from a wheel) into the git-ignored
# .peers/ folder, so that a device call can carry it: `python -m rltriton_lite.bench --peer-path
# .peers/rl-triton/src` (benchmarks/README.md, "Peers").
#
# rl-triton (github simonsays1980/rl-triton): its src/ from a bare mirror of the repository, at
# REV (default HEAD), into .peers/rl-triton/src; the commit goes to .peers/rl-triton/COMMIT,
# which the harness records. It needs only torch and triton. Never copied into the repo.
#
#   bash tools/fetch_peers.sh [REV]        # RL_TRITON_MIRROR overrides the mirror's path
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mirror=${RL_TRITON_MIRROR:-/work/.mirror/simonsays1980+rl-triton/repo}
rev=${1:-HEAD}
dest="$root/.peers/rl-triton"

if ! git -C "$mirror" rev-parse --verify -q "$rev^{commit}" >/dev/null; then
  echo "fetch_peers: no commit $rev in $mirror (a bare git mirror of simonsays1980/rl-triton;" \
       "set RL_TRITON_MIRROR)" >&2
  exit 1
fi
rm -rf "$dest"
mkdir -p "$dest"
git -C "$mirror" archive "$rev" src | tar -x -C "$dest"
git -C "$mirror" rev-parse "$rev^{commit}" >"$dest/COMMIT"
echo "rl-triton $(cut -c1-12 "$dest/COMMIT") -> ${dest#"$root"/}/src (--peer-path .peers/rl-triton/src)"
