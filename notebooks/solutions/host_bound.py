"""Solution: host_bound (notebook 09). Our float32 rows of the pass, by size; the last shape whose
wall time (µs) is above twice its GPU time (kernel_ms, in ms: times 1000). Every shape is looked
at: the ratio can rise again on few long rows (PPO's and CRR's forward at 64x16384)."""


def host_bound(rows, algorithm, pass_):
    mine = [r for r in rows if (r["impl"], r["dtype"], r["algorithm"], r["pass"])
            == ("rltriton_lite", "float32", algorithm, pass_)]
    above = [r["B"] * r["T"] for r in mine if r["full_call_us"] > 2 * 1e3 * r["kernel_ms"]]
    return max(above, default=0)


solution = host_bound
