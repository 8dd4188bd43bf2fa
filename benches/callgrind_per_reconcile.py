"""Prints a callgrind profile per reconcile, or per call of a micro bench's function (see
callgrind.sh).

Usage: callgrind_per_reconcile.py ENGINE PROFILE. The profile covers the bench's passes
(`steady_state::pass`); the reconciles in it are the calls of a function each engine calls
once a reconcile: the dynrec root reconciler's `reconcile_with` (which builds the
reconcile's future), the typed reconcile function's future. For the child template
(ENGINE `definition_child` or `rust_child_json`) the profile covers that function's calls.
"""

import re
import sys

MARKERS = {
    "dynrec": "as dynrec::reconcilers::contract::RootReconciler>::reconcile_with",
    "typed_kube_runtime": "steady_state::common::typed::typed_reconcile::{{closure}}",
    "definition_child": "micro::definition_child",
    "rust_child_json": "micro::rust_child_json",
}


def per_reconcile(path, marker):
    """The profile's totals by event, and how many reconciles they cover."""
    names, events, totals = {}, [], []
    callee, reconciles = "", 0
    for line in open(path, encoding="utf-8", errors="replace"):
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith(("totals:", "summary:")):
            totals = [int(n) for n in line.split()[1:]]
        elif match := re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line):
            kind, number, name = match.groups()
            if name:
                names[number] = name.strip()
            if kind == "cfn":
                callee = names.get(number, "")
        elif line.startswith("calls=") and callee.endswith(marker):
            reconciles += int(line.split("=")[1].split()[0])
    return dict(zip(events, totals)), reconciles


def main():
    engine, path = sys.argv[1], sys.argv[2]
    totals, reconciles = per_reconcile(path, MARKERS[engine])
    if not reconciles:
        sys.exit(f"{path}: no reconcile was counted (see {path}.log)")
    unit = "reconcile" if engine in ("dynrec", "typed_kube_runtime") else "call"
    each = lambda *names: sum(totals.get(n, 0) for n in names) / reconciles
    print(
        f"{engine}: {reconciles} {unit}s; per {unit}: "
        f"{each('Ir'):.0f} instructions, "
        f"{each('D1mr', 'D1mw'):.1f} L1 data misses, "
        f"{each('DLmr', 'DLmw'):.1f} L2 (1 MiB) misses"
    )


if __name__ == "__main__":
    main()
