//! SHA-256 implementations on this machine: sha2 (what bundlegate uses),
//! ring and aws-lc-rs, hashing the same 1 GiB in 1 MiB updates (verify's read
//! size). Run by bench/run: `cargo run --release --example sha_bench`.

use std::time::Instant;

fn main() {
    let chunk = vec![0xa5u8; 1 << 20];
    let total_mib = 1024;
    let mut results = Vec::new();

    let t = Instant::now();
    let mut h = <sha2::Sha256 as sha2::Digest>::new();
    for _ in 0..total_mib {
        sha2::Digest::update(&mut h, &chunk);
    }
    let a = hex::encode(sha2::Digest::finalize(h));
    results.push(("sha2", t.elapsed().as_secs_f64()));

    let t = Instant::now();
    let mut c = ring::digest::Context::new(&ring::digest::SHA256);
    for _ in 0..total_mib {
        c.update(&chunk);
    }
    let b = hex::encode(c.finish().as_ref());
    results.push(("ring", t.elapsed().as_secs_f64()));

    let t = Instant::now();
    let mut c = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    for _ in 0..total_mib {
        c.update(&chunk);
    }
    let d = hex::encode(c.finish().as_ref());
    results.push(("aws-lc-rs", t.elapsed().as_secs_f64()));

    assert!(a == b && b == d, "implementations disagree");
    let base = results[0].1;
    for (name, secs) in results {
        println!("  {:<10} {:>6.0} MiB/s  ({:.2}x sha2's time)", name, total_mib as f64 / secs, secs / base);
    }
}
