#!/usr/bin/env python3
"""Benchmark bundlegate's canary statistics against scipy on 1,000,000
samples per side: same data, same one-sided tests; prints p-values, their
differences, and the time ratio scipy / bundlegate.

    pip install scipy numpy        # only the benchmark needs them
    python3 bench/canary-stats.py [--n 1000000] [--profile bench]

The Rust side is bench/canary_stats_bench.rs (`cargo bench --bench
canary_stats_bench`). Each time is the best of N runs on both sides (N below);
with BENCH_RESULTS set (bench/run) the rows go there (bench/lib.sh's columns)
and the worst p-value difference to BENCH_NOTES.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy import stats

BOUNDS = np.array([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0])


def best(reps, f):
    t_best, out = float("inf"), None
    for _ in range(reps):
        t = time.perf_counter()
        out = f()
        t_best = min(t_best, time.perf_counter() - t)
    return t_best, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--profile", default="bench", help="cargo profile for the Rust side (bench or dev)")
    args = ap.parse_args()
    rng = np.random.default_rng(2)
    # Latencies in seconds, rounded to the millisecond so ties exist (the
    # tie correction is part of what is compared); candidate 1% slower.
    y = np.round(rng.lognormal(mean=-2.0, sigma=0.9, size=args.n), 3)
    x = np.round(rng.lognormal(mean=-2.0, sigma=0.9, size=args.n) * 1.01, 3)

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as d:
        paths = [os.path.join(d, n) for n in ("x.f64", "y.f64", "b.f64")]
        for p, a in zip(paths, (x, y, BOUNDS)):
            a.astype("<f8").tofile(p)
        cmd = ["cargo", "bench", "--quiet", "--profile", args.profile, "--bench", "canary_stats_bench", "--"] + paths
        rust = json.loads(subprocess.run(cmd, cwd=repo, check=True, capture_output=True, text=True).stdout)

    py = {}
    # Runs per test, the best kept; bench/canary_stats_bench.rs uses the same counts.
    reps = {"mannWhitney": 3, "mannWhitneyBinned": 3, "zTest": 20, "fisher": 3}
    py["mannWhitney"] = best(reps["mannWhitney"], lambda: stats.mannwhitneyu(x, y, alternative="greater", method="asymptotic"))
    # scipy has no binned form: expand bucket indices (what the binned test is equal to).
    bx = np.searchsorted(BOUNDS, x, side="left")
    by = np.searchsorted(BOUNDS, y, side="left")
    py["mannWhitneyBinned"] = best(reps["mannWhitneyBinned"], lambda: stats.mannwhitneyu(bx, by, alternative="greater", method="asymptotic"))
    ex, ey = int((x > 1.0).sum()), int((y > 1.0).sum())
    nx, ny = len(x), len(y)
    assert [ex, ey] == rust["errors"], (ex, ey, rust["errors"])

    def ztest():
        p = (ex + ey) / (nx + ny)
        z = (ex / nx - ey / ny) / np.sqrt(p * (1 - p) * (1 / nx + 1 / ny))
        return z, stats.norm.sf(z)

    py["zTest"] = best(reps["zTest"], ztest)
    py["fisher"] = best(reps["fisher"], lambda: stats.fisher_exact([[ex, nx - ex], [ey, ny - ey]], alternative="greater"))

    print(f"n = {nx:,} per side, errors {ex} / {ey}, cargo profile {args.profile}")
    print(f"{'test':<22}{'scipy s':>12}{'bundlegate s':>14}{'ratio':>12}{'p scipy':>24}{'p bundlegate':>24}{'|diff|':>10}")
    worst = 0.0
    section = os.environ.get("BENCH_SECTION", "-")
    rows = []
    for k, (t, res) in py.items():
        p_py = float(res[1]) if isinstance(res, tuple) else float(res.pvalue)
        r = rust[k]
        diff = abs(p_py - r["p"])
        worst = max(worst, diff)
        print(f"{k:<22}{t:>12.4f}{r['seconds']:>14.3e}{t / max(r['seconds'], 1e-9):>12.1f}{p_py:>24.16g}{r['p']:>24.16g}{diff:>10.1e}")
        label = f"{k}, {nx:,} samples per side"
        stat = f"best of {reps[k]}"
        rows.append([section, f"scipy {label}", f"{t:.6g}", "s", stat, "-", "-", "ok", "-", "-"])
        rows.append([section, f"bundlegate {label}", f"{r['seconds']:.6g}", "s", stat, "-", f"scipy {label}", "ok", "-", "-"])
    # The paired golden gate's exact McNemar test (a one-sided binomial on
    # the discordant prompts), case by case against scipy's binomtest.
    cases = rust["mcnemar"]["cases"]
    reps["mcnemar"] = 20
    t_py, p_py = best(reps["mcnemar"], lambda: [stats.binomtest(b, n, 0.5, alternative="greater").pvalue for b, n, _ in cases])
    mc_worst = max(abs(p - r) for p, (_, _, r) in zip(p_py, cases))
    worst = max(worst, mc_worst)
    t_rs = rust["mcnemar"]["seconds"]
    print(f"{'mcnemar':<22}{t_py:>12.4f}{t_rs:>14.3e}{t_py / max(t_rs, 1e-9):>12.1f}{'(' + str(len(cases)) + ' cases)':>24}{'':>24}{mc_worst:>10.1e}")
    label = f"mcnemar, {len(cases)} cases up to 100,000 discordant prompts"
    rows.append([section, f"scipy {label}", f"{t_py:.6g}", "s", "best of 20", "-", "-", "ok", "-", "-"])
    rows.append([section, f"bundlegate {label}", f"{t_rs:.6g}", "s", "best of 20", "-", f"scipy {label}", "ok", "-", "-"])
    verdict = "OK" if worst <= 1e-6 else "ABOVE 1e-6"
    print(f"worst p-value difference {worst:.1e} ({verdict})")
    if os.environ.get("BENCH_RESULTS"):
        with open(os.environ["BENCH_RESULTS"], "a") as f:
            f.writelines("\t".join(r) + "\n" for r in rows)
    if os.environ.get("BENCH_NOTES"):
        with open(os.environ["BENCH_NOTES"], "a") as f:
            f.write(f"{section}\tp-values, bundlegate vs scipy: worst difference {worst:.1e} over the five tests ({verdict}; must be <= 1e-6)\n")
    sys.exit(0 if worst <= 1e-6 else 1)


if __name__ == "__main__":
    main()
