//! A detached signature file (`model.sig`, `release.sig`): Sigstore bundle
//! → DSSE envelope → in-toto statement → the model-signing resources.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    bundlegate::fuzzing::sigstore_bundle(text);
});
