//! release.yaml text → parse → lint → render. Any outcome but a panic is fine:
//! errors must be `LoadError`s and diagnostics, never a crash.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    bundlegate::fuzzing::bundle_yaml(Path::new("fuzz/release.yaml"), text);
});
