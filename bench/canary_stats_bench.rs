#![allow(clippy::disallowed_methods)] // a benchmark program reads its inputs itself

//! Times bundlegate's canary statistics on large inputs so
//! `bench/canary-stats.py` can compare them with scipy (same data, same
//! tests). Usage: `cargo bench --bench canary_stats_bench -- X.f64 Y.f64
//! BOUNDS.f64` — little-endian f64 files written by the script. Prints one
//! JSON object. A bare `cargo bench` (no inputs) says so and times nothing.

use std::time::Instant;

#[path = "args.rs"]
mod args;

use bundlegate::checks::canary::statistics as c;

fn read_f64(path: &str) -> Vec<f64> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    b.chunks_exact(8).map(|ch| f64::from_le_bytes(ch.try_into().expect("8 bytes"))).collect()
}

/// Best of `reps` runs, in seconds, and the last result.
fn time<T>(reps: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::INFINITY;
    let mut out = None;
    for _ in 0..reps {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed().as_secs_f64());
        out = Some(r);
    }
    (best, out.expect("reps > 0"))
}

fn main() {
    let Some(args) = args::inputs(3, "canary_stats_bench X.f64 Y.f64 BOUNDS.f64") else { return };
    let (x, y, bounds) = (read_f64(&args[0]), read_f64(&args[1]), read_f64(&args[2]));

    let (t_mwu, mwu) = time(3, || c::mann_whitney_u(&x, &y).expect("finite samples"));

    // Binned: bucket counts per `le` (+Inf last), as Prometheus would have them.
    let bin = |v: &[f64]| {
        let mut counts = vec![0f64; bounds.len() + 1];
        for s in v {
            counts[bounds.partition_point(|b| b < s)] += 1.0;
        }
        counts
    };
    // Timed on the bucket counts only: that is what the canary has (scipy is
    // handed the pre-binned values too).
    let (cx, cy) = (bin(&x), bin(&y));
    let (t_binned, binned) = time(3, || c::mann_whitney_binned(&cx, &cy).expect("finite counts"));

    // Error counts: a value above 1.0 counts as an error (about 1% here).
    let ex = x.iter().filter(|v| **v > 1.0).count() as u64;
    let ey = y.iter().filter(|v| **v > 1.0).count() as u64;
    let (nx, ny) = (x.len() as u64, y.len() as u64);
    let (t_z, z) = time(20, || c::two_proportion_z(ex as f64, nx as f64, ey as f64, ny as f64).expect("valid counts"));
    let (t_fisher, fisher) = time(3, || c::fisher_exact_greater(ex, nx, ey, ny).expect("valid counts"));

    // The paired golden gate's exact McNemar test: P(X >= b | b + c, 1/2),
    // over golden-set sizes from a handful of discordant prompts to 100,000.
    let cases: Vec<(u64, u64)> = [
        (1, 1),
        (3, 4),
        (8, 10),
        (15, 20),
        (30, 50),
        (60, 100),
        (520, 1000),
        (5100, 10_000),
        (50_300, 100_000),
        (0, 7),
    ]
    .into_iter()
    .collect();
    let (t_mcnemar, mcnemar) = time(20, || {
        cases.iter().map(|&(b, n)| c::binom_test_greater(b, n, 0.5).expect("valid counts").p_value).collect::<Vec<_>>()
    });
    let mcnemar_cases: Vec<serde_json::Value> =
        cases.iter().zip(&mcnemar).map(|(&(b, n), p)| serde_json::json!([b, n, p])).collect();

    println!(
        "{}",
        serde_json::json!({
            "n": [nx, ny],
            "errors": [ex, ey],
            "mannWhitney": {"seconds": t_mwu, "u": mwu.statistic, "p": mwu.p_value},
            "mannWhitneyBinned": {"seconds": t_binned, "u": binned.statistic, "p": binned.p_value},
            "zTest": {"seconds": t_z, "z": z.statistic, "p": z.p_value},
            "fisher": {"seconds": t_fisher, "p": fisher.p_value},
            "mcnemar": {"seconds": t_mcnemar, "cases": mcnemar_cases},
        })
    );
}
