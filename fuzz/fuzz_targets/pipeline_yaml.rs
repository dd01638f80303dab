//! Pipeline YAML (a repo file a pull request can change) → parse.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = bundlegate::pipeline::parse(std::path::Path::new("fuzz/pipeline.yaml"), text);
});
