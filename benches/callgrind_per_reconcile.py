"""Prints a callgrind profile of the steady-state bench per reconcile (see callgrind.sh).

Usage: callgrind_per_reconcile.py ENGINE PROFILE. A reconcile is one call of the bench's
`Running::reconcile` future from outside it (each completes in one poll: the cache answers).
"""

import re
import sys

RECONCILE = "Running::reconcile::{{closure}}"


def per_reconcile(path):
    """The profile's totals by event, and how many reconciles they cover."""
    names, events, totals = {}, [], []
    caller, callee, reconciles = "", "", 0
    for line in open(path, encoding="utf-8", errors="replace"):
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith(("totals:", "summary:")):
            totals = [int(n) for n in line.split()[1:]]
        elif match := re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line):
            kind, number, name = match.groups()
            if name:
                names[number] = name
            if kind == "fn":
                caller = names.get(number, "")
            else:
                callee = names.get(number, "")
        elif line.startswith("calls=") and RECONCILE in callee and RECONCILE not in caller:
            reconciles += int(line.split("=")[1].split()[0])
    return dict(zip(events, totals)), reconciles


def main():
    engine, path = sys.argv[1], sys.argv[2]
    totals, reconciles = per_reconcile(path)
    if not reconciles:
        sys.exit(f"{path}: no reconcile was counted (see {path}.log)")
    each = lambda *names: sum(totals.get(n, 0) for n in names) / reconciles
    print(
        f"{engine}: {reconciles} reconciles; per reconcile: "
        f"{each('Ir'):.0f} instructions, "
        f"{each('D1mr', 'D1mw'):.1f} L1 data misses, "
        f"{each('DLmr', 'DLmw'):.1f} L2 (1 MiB) misses"
    )


if __name__ == "__main__":
    main()
