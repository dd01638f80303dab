//! A Prometheus `/api/v1/query` body (any HTTP status) → series → what the
//! canary reads of them (`bundlegate::fuzzing::prom_response`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let status = u16::from_le_bytes([data[0], data[1]]);
    let Ok(body) = std::str::from_utf8(&data[2..]) else { return };
    let _ = bundlegate::fuzzing::prom_response(status, body);
});
