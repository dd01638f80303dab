//! The Argo CD CMP environment (ARGOCD_APP_PARAMETERS JSON, PARAM_*,
//! ARGOCD_ENV_*) → resolved parameters. Input: NUL-separated `KEY=VALUE`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    bundlegate::fuzzing::cmp_params(text);
});
