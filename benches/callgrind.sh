#!/usr/bin/env bash
# Counts what one steady-state reconcile costs, for dynrec and the typed baseline, under
# valgrind's callgrind: instructions, and misses of a simulated 32 KiB L1 data cache and
# 1 MiB L2 (this VM's sizes). Unlike the timed benches, the counts do not drift with the
# VM's neighbours: two runs of one build agree, so a change of a few percent shows.
#
#   benches/callgrind.sh [WIDGETS]   (default 300; about a minute an engine; STEADY_STATE_BENCH=path
#                                     counts a steady-state bench built before, e.g. with
#                                     `--features bench-mimalloc`)
#   benches/callgrind.sh template    (the widgets child template, per call; MICRO_BENCH=path
#                                     counts a micro bench built before, to compare builds)
#
# Only the passes are counted (callgrind collects inside `steady_state::pass`), not the
# server or the convergence before them; a pass is its reconciles and the bench's loop
# (each Widget's key is formatted, as for both engines). The reconcile's own future is
# inlined into the pass, so the reconciles are counted by a function each engine calls
# once a reconcile (see callgrind_per_reconcile.py). The profiles stay in target/callgrind/
# for `callgrind_annotate`.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${CARGO_TARGET_DIR:-target}/callgrind
mkdir -p "$out"

# The executable of the bench $1, built if need be.
bench_executable() {
    cargo bench --bench "$1" --no-run --message-format=json 2>/dev/null |
        python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == sys.argv[1] and m.get("executable"):
        print(m["executable"])' "$1"
}

if [ "${1:-}" = template ]; then
    # Only the calls are counted, each inclusive of its callees: the definition's child
    # (bind `self`, build, default the namespace), and the Rust `json!` and its reading with
    # `from_json` (the bench's `rust_child`, which is inlined).
    micro=${MICRO_BENCH:-$(bench_executable micro)}
    for call in definition_child rust_child_json; do
        case $call in
            definition_child) bench=definition_cel collect=(--toggle-collect=micro::definition_child) ;;
            rust_child_json) bench=rust_json_from_json collect=(--toggle-collect=micro::rust_child_json
                --toggle-collect=dynrec::object::json::from_json) ;;
        esac
        profile="$out/micro-$call.out"
        valgrind --tool=callgrind --cache-sim=yes --D1=32768,8,64 --LL=1048576,8,64 \
            --callgrind-out-file="$profile" "${collect[@]}" \
            "$micro" --bench "widgets_child_template/$bench\$" --profile-time 1 >"$profile.log" 2>&1
        python3 benches/callgrind_per_reconcile.py "$call" "$profile"
    done
    exit
fi
widgets=${1:-300}
bench=${STEADY_STATE_BENCH:-$(bench_executable steady_state)}
for engine in dynrec typed_kube_runtime; do
    profile="$out/steady_state-$widgets-$engine.out"
    STEADY_STATE_WIDGETS=$widgets valgrind --tool=callgrind --cache-sim=yes \
        --D1=32768,8,64 --LL=1048576,8,64 --callgrind-out-file="$profile" \
        --toggle-collect='*steady_state::pass*' \
        "$bench" --bench "steady_state/$widgets/$engine" --profile-time 1 >"$profile.log" 2>&1
    python3 benches/callgrind_per_reconcile.py "$engine" "$profile"
done
