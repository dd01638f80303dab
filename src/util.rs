//! Small helpers shared by several modules.

use std::time::Duration;

/// The longest duration any option or environment variable may name: every
/// duration bundlegate reads is a wait, a window or an age, and a week is
/// already far past any CI job's limit. Larger values are refused rather
/// than clamped, so a typo (`150000h`) is reported instead of becoming a hang.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(7 * 86400);

/// Parse `90s`, `30m`, `2h`, `1h30m`, `500ms`, `1.5h`, `1d`, or plain
/// seconds, refusing anything that is not a finite, non-negative duration of
/// at most [`MAX_DURATION`]; the error says why.
pub(crate) fn try_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty duration (e.g. 300ms, 90s, 15m, 2h)".into());
    }
    let too_long = || format!("`{s}` is longer than the maximum of 7d");
    if let Ok(n) = s.parse::<u64>() {
        return if n > MAX_DURATION.as_secs() { Err(too_long()) } else { Ok(Duration::from_secs(n)) };
    }
    let bad = || format!("`{s}` is not a duration (e.g. 300ms, 90s, 15m, 1h30m, 1d)");
    let mut total = 0f64;
    let mut num = String::new();
    let mut any = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let unit = if c == 'm' && chars.peek() == Some(&'s') {
            chars.next();
            0.001
        } else {
            match c {
                'h' => 3600.0,
                'm' => 60.0,
                's' => 1.0,
                'd' => 86400.0,
                _ => return Err(bad()),
            }
        };
        let n: f64 = num.parse().map_err(|_| bad())?;
        total += n * unit;
        num.clear();
        any = true;
    }
    if !num.is_empty() || !any {
        return Err(bad());
    }
    // Digits and '.' only, so NaN, infinities and negatives cannot be typed;
    // the checks still guard `from_secs_f64`, which panics on any of them.
    if !total.is_finite() || total < 0.0 {
        return Err(bad());
    }
    if total > MAX_DURATION.as_secs_f64() {
        return Err(too_long());
    }
    Ok(Duration::from_secs_f64(total))
}

/// [`try_duration`] without the reason, for callers that substitute a default.
pub(crate) fn parse_duration(s: &str) -> Option<Duration> {
    try_duration(s).ok()
}

/// Human bytes: 1.5 GiB.
pub(crate) fn human_bytes(n: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

/// A sha256 as bundles, images and registries write it: 64 lowercase hex.
pub(crate) fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

pub(crate) fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(data))
}

/// base64 of the bytes a hex digest encodes (S3's x-amz-checksum-sha256 form).
pub(crate) fn b64_of_hex(h: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(hex::decode(h).unwrap_or_default())
}

/// A property test's settings: its own number of cases, lowered (never
/// raised) by `BUNDLEGATE_PROP_CASES`, which mutation runs set since every
/// mutant re-runs every property; no regression files, since a failure
/// prints its input.
#[cfg(test)]
pub(crate) fn prop_config(cases: u32) -> proptest::test_runner::Config {
    let cap = std::env::var("BUNDLEGATE_PROP_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(u32::MAX);
    proptest::test_runner::Config { cases: cases.min(cap), failure_persistence: None, ..Default::default() }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn durations() {
        assert_eq!(parse_duration("30m"), Some(Duration::from_secs(1800)));
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("45"), Some(Duration::from_secs(45)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("x"), None);
        assert_eq!(parse_duration("10"), Some(Duration::from_secs(10)));
        assert_eq!(parse_duration("m"), None);
        assert_eq!(parse_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("7d"), Some(MAX_DURATION));
    }

    #[test]
    fn durations_outside_input_cannot_overflow() {
        // Each of these panicked in `Duration::from_secs_f64` or overflowed.
        for s in [
            "99999999999999999999999h",
            "1e400s",
            "184467440737095516160s",
            "inf",
            "NaN",
            "-5s",
            "8d",
            "604801",
            "1..5s",
            "s",
            "",
        ] {
            let e = try_duration(s).unwrap_err();
            assert!(!e.is_empty(), "{s}");
        }
        assert!(try_duration("8d").unwrap_err().contains("maximum of 7d"));
    }
}
