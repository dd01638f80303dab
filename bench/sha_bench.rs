#![allow(clippy::disallowed_methods)] // a benchmark program reads its inputs itself

//! SHA-256 implementations on this machine: sha2 (what bundlegate uses),
//! ring and aws-lc-rs, hashing the same 1 GiB in 1 MiB updates (verify's read
//! size), one run each. Run by bench/run: `cargo bench --bench sha_bench`.
//! With `BENCH_RESULTS` set (bench/run) it appends one row per implementation
//! (bench/lib.sh's columns): the faster alternative is the baseline, sha2 and
//! the other alternative are compared with it.

use std::io::Write;
use std::time::Instant;

const TOTAL_MIB: usize = 1024;

fn main() {
    let chunk = vec![0xa5u8; 1 << 20];
    let mut results: Vec<(&str, f64, String)> = Vec::new();

    let t = Instant::now();
    let mut h = <sha2::Sha256 as sha2::Digest>::new();
    for _ in 0..TOTAL_MIB {
        sha2::Digest::update(&mut h, &chunk);
    }
    results.push(("sha2", t.elapsed().as_secs_f64(), hex::encode(sha2::Digest::finalize(h))));

    let t = Instant::now();
    let mut c = ring::digest::Context::new(&ring::digest::SHA256);
    for _ in 0..TOTAL_MIB {
        c.update(&chunk);
    }
    results.push(("ring", t.elapsed().as_secs_f64(), hex::encode(c.finish().as_ref())));

    let t = Instant::now();
    let mut c = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    for _ in 0..TOTAL_MIB {
        c.update(&chunk);
    }
    results.push(("aws-lc-rs", t.elapsed().as_secs_f64(), hex::encode(c.finish().as_ref())));

    assert!(results.iter().all(|r| r.2 == results[0].2), "implementations disagree");
    let base = results[0].1;
    for (name, secs, _) in &results {
        println!("  {:<10} {:>6.0} MiB/s  ({:.2}x sha2's time)", name, TOTAL_MIB as f64 / secs, secs / base);
    }
    let Ok(path) = std::env::var("BENCH_RESULTS") else { return };
    let section = std::env::var("BENCH_SECTION").unwrap_or_else(|_| "-".into());
    let label = |name: &str| {
        let whose = if name == "sha2" { " (bundlegate's)" } else { "" };
        format!("SHA-256 {name}{whose}, 1 GiB in 1 MiB updates")
    };
    let fastest_alternative = if results[1].1 <= results[2].1 { results[1].0 } else { results[2].0 };
    let mut out = std::fs::OpenOptions::new().append(true).create(true).open(&path).expect("BENCH_RESULTS");
    for (name, secs, _) in &results {
        let base = if *name == fastest_alternative { "-".to_string() } else { label(fastest_alternative) };
        let row = [&*section, &label(name), &format!("{secs:.6}"), "s", "single run", "-", &base, "ok", "-", "-"];
        writeln!(out, "{}", row.join("\t")).expect("write BENCH_RESULTS");
    }
}
