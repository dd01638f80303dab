//! Parsers of outside text that adapters and commands read: plain text in,
//! typed values out, no I/O. Kept out of `adapters` so they build (and are
//! fuzzed) without the network stack, see `fuzz/`.

pub mod cmp;
pub mod golden;
pub mod oci;
pub mod prom;
pub mod sigstore;
pub mod snapshot;
