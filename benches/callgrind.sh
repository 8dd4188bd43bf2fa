#!/usr/bin/env bash
# Counts what one steady-state reconcile costs, for dynrec and the typed baseline, under
# valgrind's callgrind: instructions, and misses of a simulated 32 KiB L1 data cache and
# 1 MiB L2 (this VM's sizes). Unlike the timed benches, the counts do not drift with the
# VM's neighbours: two runs of one build agree, so a change of a few percent shows.
#
#   benches/callgrind.sh [WIDGETS]   (default 300; about a minute an engine)
#
# Only the passes are counted (callgrind collects inside `steady_state::pass`), not the
# server or the convergence before them; a pass is its reconciles and the bench's loop
# (each Widget's key is formatted, as for both engines). The reconcile's own future is
# inlined into the pass, so the reconciles are counted by a function each engine calls
# once a reconcile (see callgrind_per_reconcile.py). The profiles stay in target/callgrind/
# for `callgrind_annotate`.
set -euo pipefail
cd "$(dirname "$0")/.."
widgets=${1:-300}
bench=$(cargo bench --bench steady_state --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "steady_state" and m.get("executable"):
        print(m["executable"])')
out=target/callgrind
mkdir -p "$out"
for engine in dynrec typed_kube_runtime; do
    profile="$out/steady_state-$widgets-$engine.out"
    STEADY_STATE_WIDGETS=$widgets valgrind --tool=callgrind --cache-sim=yes \
        --D1=32768,8,64 --LL=1048576,8,64 --callgrind-out-file="$profile" \
        --toggle-collect='*steady_state::pass*' \
        "$bench" --bench "steady_state/$widgets/$engine" --profile-time 1 >"$profile.log" 2>&1
    python3 benches/callgrind_per_reconcile.py "$engine" "$profile"
done
