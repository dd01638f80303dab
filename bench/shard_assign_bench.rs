#![allow(clippy::disallowed_methods)] // a benchmark program reads its inputs itself

//! Times the shard assignment alone (what every `audit --shard K/N` computes
//! before it audits anything) on the items of a generated tree, for
//! `bench/audit-shards.sh`. Usage: `cargo bench --bench shard_assign_bench --
//! ITEMS.tsv N`, where each line is `bundle id<TAB>weight[<TAB>…]` (the
//! weight: the bundle file's bytes). Prints one JSON object: the best of 20
//! runs in seconds and the weight balance (max/mean over the N shards). A bare `cargo bench` (no inputs) says so and times nothing.

use std::time::Instant;

#[path = "args.rs"]
mod args;

use bundlegate::checks::audit::shard::{assign, Item};

fn main() {
    let Some(args) = args::inputs(2, "shard_assign_bench ITEMS.tsv N") else { return };
    let text = std::fs::read_to_string(&args[0]).unwrap_or_else(|e| panic!("{}: {e}", args[0]));
    let n: u32 = args[1].parse().expect("N");
    let items: Vec<Item> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut cols = l.split('\t');
            let (id, bytes) = (cols.next().expect("id"), cols.next().expect("id<TAB>weight"));
            Item { id: id.to_string(), bytes: bytes.parse().expect("weight"), sha256: None }
        })
        .collect();
    let mut best = f64::INFINITY;
    let mut out = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        out = assign(&items, n);
        best = best.min(t.elapsed().as_secs_f64());
    }
    let mut load = vec![0u128; n as usize];
    for (i, s) in out.iter().enumerate() {
        load[*s as usize] += items[i].bytes as u128;
    }
    let mean = load.iter().sum::<u128>() as f64 / f64::from(n);
    let max = *load.iter().max().unwrap_or(&0) as f64;
    println!(
        "{{\"items\": {}, \"shards\": {n}, \"seconds\": {best:.6}, \"maxOverMean\": {:.4}, \"load\": {:?}}}",
        items.len(),
        if mean > 0.0 { max / mean } else { 1.0 },
        load
    );
}
