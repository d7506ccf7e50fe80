"""The stream probe's rows by grid, spin, stages and copy path (% of each run's ceiling; one value a call that ran it,
calls 1-4 in order). Run here: python sp_table.py > sp_table.txt"""
import collections

rows = collections.defaultdict(dict)
for call in ("call1", "call2", "call3", "call4"):
    for line in open(f"{call}/stream_probe.txt"):
        p = line.split()
        if len(p) == 11 and p[0].isdigit():
            g, it, _mib, st, mode, nc, spin, us, _tb, oc, _of = p
            rows[(g, it, st, mode, nc, spin)][call] = (float(us), float(oc))
MODES = (("cp.async", "1", "cp"), ("bulk", "1", "bulk"), ("bulk", "5", "bulk5"), ("w-cp.async", "1", "wcp"),
         ("w-bulk", "1", "wbulk"), ("w-bulk", "5", "wbulk5"))
for g, it in (("256", "32"), ("264", "32"), ("528", "16"), ("256", "128")):
    print("grid", g, "iterations a CTA", it)
    for spin in ("0", "1000", "2000"):
        for st in ("2", "3", "4"):
            cells = []
            for mode, nc, name in MODES:
                d = rows.get((g, it, st, mode, nc, spin), {})
                cells.append(f"{name}:" + ("/".join(f"{v[1] * 100:.1f}" for _, v in sorted(d.items())) or "-"))
            print(f"  spin {spin:>4} S{st}: " + "  ".join(cells))
