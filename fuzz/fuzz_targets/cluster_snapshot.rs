//! `kubectl get … -o yaml|json` snapshot text → cluster state → preflight.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    bundlegate::fuzzing::cluster_snapshot(text);
});
