//! The golden set: a JSONL file of requests with expectations, then one
//! answer body judged against each. Input: the file, NUL, the answer.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    bundlegate::fuzzing::golden(text);
});
