//! Exact Kubernetes quantities (`resource.Quantity`) as integer milli-units,
//! and the checked request arithmetic built on them (a pod's effective
//! requests). Separate because every other pass only consumes these numbers.

use std::collections::BTreeMap;

use crate::bundle::Loaded;
use crate::diag::Code;
use crate::diag::Diagnostic;

use super::state::{ContainerResources, Pod, Quantities};

/// The largest value (in base units) a quantity may have: the scheduler and
/// the quota controller hold quantities as `int64` (`Quantity.Value()`), and
/// apimachinery caps binary-SI quantities there too. Above it a number can
/// only be a typo or an attack, and summing it would overflow.
pub(crate) const MAX_UNITS: i128 = i64::MAX as i128;

/// Parse a quantity into thousandths of its base unit, rounding up like
/// `Quantity.MilliValue()`. Grammar (apimachinery `resource.Quantity`):
/// `[+-]digits[.digits][suffix]` (`digits.` and `.digits` too), suffix one
/// of n u m "" k M G T P E, Ki Mi Gi Ti Pi Ei, or `e`/`E` + signed integer.
/// A request or capacity is never negative, so negative values are refused
/// (Kubernetes' validation refuses them too), as is anything above
/// [`MAX_UNITS`]. The result is in `0..=MAX_UNITS * 1000`.
pub(crate) fn parse_milli(s: &str) -> Result<i128, String> {
    let bad = |why: &str| format!("`{s}` is not a Kubernetes quantity ({why})");
    let b = s.as_bytes();
    let mut i = 0;
    let mut neg = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        neg = b[i] == b'-';
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_part = &s[int_start..i];
    let mut frac_part = "";
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let fs = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        frac_part = &s[fs..i];
    }
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(bad("no digits"));
    }
    let suffix = &s[i..];
    // (power of ten, power of 1024)
    let (dec_exp, bin_exp): (i32, u32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 1),
        "Mi" => (0, 2),
        "Gi" => (0, 3),
        "Ti" => (0, 4),
        "Pi" => (0, 5),
        "Ei" => (0, 6),
        x if x.len() > 1 && (x.starts_with('e') || x.starts_with('E')) => {
            let e: i32 = x[1..].parse().map_err(|_| bad("bad exponent"))?;
            if !(-40..=40).contains(&e) {
                return Err(bad("exponent out of range"));
            }
            (e, 0)
        }
        _ => return Err(bad("unknown suffix")),
    };
    let frac_part = frac_part.trim_end_matches('0');
    let digits = format!("{int_part}{frac_part}");
    let digits = digits.trim_start_matches('0');
    if digits.len() > 36 {
        return Err(bad("too many digits"));
    }
    let mantissa: i128 = if digits.is_empty() { 0 } else { digits.parse().map_err(|_| bad("bad digits"))? };
    // value × 1000 = mantissa × 10^(dec_exp + 3 − frac_len) × 1024^bin_exp
    let p10 = dec_exp + 3 - frac_part.len() as i32;
    let overflow = || bad("out of range");
    let numer = mantissa.checked_mul(1024i128.checked_pow(bin_exp).ok_or_else(overflow)?).ok_or_else(overflow)?;
    let v = if p10 >= 0 {
        numer.checked_mul(10i128.checked_pow(p10 as u32).ok_or_else(overflow)?).ok_or_else(overflow)?
    } else {
        // Round up (towards +∞ for the magnitude), as Kubernetes' ScaledValue
        // does; a divisor beyond i128 leaves a positive value below one milli.
        match 10i128.checked_pow((-p10) as u32) {
            Some(denom) => numer / denom + i128::from(numer % denom != 0),
            None => i128::from(numer != 0),
        }
    };
    if neg && v != 0 {
        return Err(bad("negative; a resource amount is never below zero"));
    }
    if v > MAX_UNITS * 1000 {
        return Err(bad("out of range: above 2^63-1, the largest amount Kubernetes represents"));
    }
    Ok(v)
}

/// Milli-units as the scheduler compares them: CPU in millicores, every
/// other resource in whole units (`Quantity.Value()` rounds up).
pub(crate) fn parse_for(resource: &str, s: &str) -> Result<i128, String> {
    let m = parse_milli(s)?;
    if resource == "cpu" {
        // CPU compares as `MilliValue()`, itself an int64.
        if m > MAX_UNITS {
            return Err(format!("`{s}` is out of range for cpu: above 2^63-1 millicores"));
        }
        return Ok(m);
    }
    Ok((m + 999) / 1000 * 1000)
}

fn trim(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Human form: cores for CPU, Ki/Mi/Gi for byte resources, plain numbers otherwise.
pub(crate) fn format(resource: &str, milli: i128) -> String {
    let units = milli as f64 / 1000.0;
    let bytes = resource == "memory"
        || resource == "ephemeral-storage"
        || resource.starts_with("hugepages-")
        || resource.ends_with(".memory");
    if bytes {
        let a = units.abs();
        for (suffix, f) in [("Ti", 1u64 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)] {
            if a >= f as f64 {
                return format!("{}{suffix}", trim(units / f as f64, 1));
            }
        }
        return trim(units, 0);
    }
    trim(units, 3)
}

pub(super) type Res = BTreeMap<String, i128>;

/// Sums are checked: an overflow is an error naming the resource, never a wrap
/// that turns a full node into an empty one.
pub(super) fn add_into(acc: &mut Res, other: &Res) -> Result<(), String> {
    for (k, v) in other {
        let e = acc.entry(k.clone()).or_insert(0);
        *e = e.checked_add(*v).ok_or_else(|| format!("{k}: the sum of requests overflows"))?;
    }
    Ok(())
}

fn max_into(acc: &mut Res, other: &Res) {
    for (k, v) in other {
        let e = acc.entry(k.clone()).or_insert(0);
        *e = (*e).max(*v);
    }
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Which {
    Requests,
    Limits,
}

/// One container's requests (or limits). API defaulting makes a request equal
/// to the limit when only the limit is set, so do the same here.
fn container_res(c: &ContainerResources, which: Which) -> Result<Res, String> {
    let mut out = Res::new();
    let parse = |m: &Quantities, out: &mut Res| -> Result<(), String> {
        for (k, v) in m {
            if !out.contains_key(k) {
                out.insert(k.clone(), parse_for(k, v).map_err(|e| format!("{k}: {e}"))?);
            }
        }
        Ok(())
    };
    match which {
        Which::Requests => {
            parse(&c.requests, &mut out)?;
            parse(&c.limits, &mut out)?;
        }
        Which::Limits => parse(&c.limits, &mut out)?,
    }
    Ok(out)
}

/// A pod's effective requests as the scheduler computes them:
/// max(sum(containers) + sidecars, each regular init container + sidecars
/// started before it) + overhead.
pub(super) fn pod_res(p: &Pod, which: Which) -> Result<Res, String> {
    // The API server refuses a pod without containers, so none means the
    // snapshot lost the spec: what it requests is unknown, not zero.
    if p.containers.is_empty() {
        return Err("no spec.containers (every pod has at least one): its requests are unknown".into());
    }
    let mut sum = Res::new();
    for c in &p.containers {
        add_into(&mut sum, &container_res(c, which)?)?;
    }
    let mut sidecars = Res::new();
    let mut init_max = Res::new();
    for (c, sidecar) in &p.init_containers {
        let r = container_res(c, which)?;
        if *sidecar {
            add_into(&mut sidecars, &r)?;
        } else {
            let mut at = sidecars.clone();
            add_into(&mut at, &r)?;
            max_into(&mut init_max, &at);
        }
    }
    add_into(&mut sum, &sidecars)?;
    max_into(&mut sum, &init_max);
    if which == Which::Requests {
        let mut over = Res::new();
        for (k, v) in &p.overhead {
            over.insert(k.clone(), parse_for(k, v).map_err(|e| format!("overhead {k}: {e}"))?);
        }
        add_into(&mut sum, &over)?;
    }
    Ok(sum)
}

/// The bundle's own requests and limits must be quantities the scheduler can
/// use (BG209): finite, non-negative, in range. Pure; lint runs it too, so a
/// bad request is caught before any cluster is read.
pub fn bundle_quantity_diagnostics(l: &Loaded) -> Vec<Diagnostic> {
    let r = &l.bundle.spec.serving.resources;
    let mut out = Vec::new();
    for (kind, m) in [("requests", &r.requests), ("limits", &r.limits)] {
        for (k, v) in m {
            if let Err(e) = parse_for(k, &v.0) {
                let field = format!("spec.serving.resources.{kind}.{k}");
                out.push(Diagnostic::new(Code::ResourceQuantityInvalid, format!("{field}: {e}")).at(l.span(&field)).field(&field).help(
                    "write a non-negative Kubernetes quantity: `500m` or `2` for cpu, `8Gi` for memory, an integer for extended resources like nvidia.com/gpu",
                ));
            }
        }
    }
    out
}

/// A resource with a domain prefix other than `kubernetes.io/`
/// (apimachinery's `IsNativeResource` is its negation).
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `IsExtendedResourceName`: not native, not a quota's `requests.` name.
fn is_extended(name: &str) -> bool {
    !is_native(name) && !name.starts_with("requests.")
}

/// `IsOvercommitAllowed`: native resources but hugepages.
fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !name.starts_with("hugepages-")
}

/// Kubernetes' own validation of a container's requests and limits
/// (`ValidateResourceRequirements`), which refuses the pod at the API
/// server: an extended resource is a whole number (BG023); a resource not
/// overcommitted (extended, hugepages) has a limit wherever it is requested
/// (BG024) and its request equals that limit, and any request is at most
/// its limit (BG025). A limit alone implies the request. Quantities that do
/// not parse are BG209's.
pub(crate) fn kubernetes_resource_rules(l: &Loaded) -> Vec<Diagnostic> {
    let r = &l.bundle.spec.serving.resources;
    let mut out = Vec::new();
    let at = |kind: &str, k: &str| format!("spec.serving.resources.{kind}.{k}");
    let d = |code: Code, field: String, msg: String| Diagnostic::new(code, msg).at(l.span(&field)).field(field);
    for (kind, m) in [("requests", &r.requests), ("limits", &r.limits)] {
        for (k, v) in m.iter().filter(|(k, _)| is_extended(k)) {
            if parse_milli(&v.0).is_ok_and(|x| x % 1000 != 0) {
                out.push(d(Code::ExtendedResourceFractional, at(kind, k), format!("{}: `{}` is not a whole number; Kubernetes counts `{k}` in whole units (must be an integer)", at(kind, k), v.0))
                    .help(format!("request whole units of `{k}` (`1`, `2`), never a fraction (`500m`, `0.5`)")));
            }
        }
    }
    for (k, req) in &r.requests {
        let Ok(q) = parse_milli(&req.0) else { continue };
        match r.limits.get(k) {
            None if !overcommit_allowed(k) => out.push(
                d(Code::ResourceLimitMissing, at("limits", k), format!("{} is requested ({}) without a limit; Kubernetes does not overcommit `{k}`: Limit must be set for non overcommitable resources", at("requests", k), req.0))
                    .help(format!("set `limits.{k}: {}` (a limit alone is enough: the request defaults to it)", req.0)),
            ),
            None => {}
            Some(lim) => {
                let Ok(lq) = parse_milli(&lim.0) else { continue };
                if q != lq && !overcommit_allowed(k) {
                    out.push(d(Code::RequestLimitMismatch, at("requests", k), format!("{} is {}, its limit {}; Kubernetes does not overcommit `{k}`: the request must be equal to the limit", at("requests", k), req.0, lim.0))
                        .help(format!("set both to the same amount, or only `limits.{k}`")));
                } else if q > lq {
                    out.push(d(Code::RequestLimitMismatch, at("requests", k), format!("{} is {}, above its limit {}: a request must be less than or equal to its limit", at("requests", k), req.0, lim.0))
                        .help(format!("raise `limits.{k}` or lower `requests.{k}`")));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_exactly() {
        assert_eq!(parse_milli("500m").unwrap(), 500);
        assert_eq!(parse_milli("2").unwrap(), 2000);
        assert_eq!(parse_milli("1.5").unwrap(), 1500);
        assert_eq!(parse_milli("8Gi").unwrap(), 8 * (1i128 << 30) * 1000);
        assert_eq!(parse_milli("512Mi").unwrap(), 512 * (1i128 << 20) * 1000);
        assert_eq!(parse_milli("1e3").unwrap(), 1_000_000);
        assert_eq!(parse_milli("1E3").unwrap(), 1_000_000);
        assert_eq!(parse_milli("1k").unwrap(), 1_000_000);
        assert_eq!(parse_milli("1M").unwrap(), 1_000_000_000);
        assert_eq!(parse_milli("1E").unwrap(), 1_000_000_000_000_000_000_000);
        assert_eq!(parse_milli("0.1").unwrap(), 100);
        assert_eq!(parse_milli(".5").unwrap(), 500);
        assert_eq!(parse_milli("12.5").unwrap(), 12_500);
        assert_eq!(parse_milli("0").unwrap(), 0);
        // Below a millicore rounds up, like MilliValue().
        assert_eq!(parse_milli("1n").unwrap(), 1);
        assert_eq!(parse_milli("100u").unwrap(), 1);
        assert_eq!(parse_milli("1500u").unwrap(), 2);
        assert_eq!(parse_milli("1.0001").unwrap(), 1001);
        for bad in ["", "abc", "1Gb", "1 Gi", "Gi", "1.2.3", "1e", "--1", "1ki", "1e99"] {
            assert!(parse_milli(bad).is_err(), "{bad:?} should not parse");
        }
    }

    /// Boundary and hostile values, each with what Kubernetes would make of
    /// it: `Ok(milli)` or an error containing the given words.
    #[test]
    fn quantity_table_with_boundaries() {
        const MAX: i128 = i64::MAX as i128;
        let ok: &[(&str, i128)] = &[
            ("100m", 100),
            ("0.1", 100),
            ("1e-3", 1),
            ("+1", 1000),
            ("1.", 1000),
            ("-0", 0),
            ("1.5Gi", 3 * (1i128 << 29) * 1000),
            ("1Ki", 1_024_000),
            ("1Ti", (1i128 << 40) * 1000),
            ("1Pi", (1i128 << 50) * 1000),
            ("7Ei", 7 * (1i128 << 60) * 1000),
            ("9223372036854775807", MAX * 1000),
            ("1e-40", 1),
            ("0.0000000000000000000000000000000000001e-40", 1),
            ("1T", 1_000_000_000_000_000),
            ("2P", 2_000_000_000_000_000_000),
            // 36 significant digits, the most read: 100.000…1 rounds up.
            ("0.100000000000000000000000000000000001", 101),
            // Exactly whole millis below the point: no rounding up.
            ("1000000n", 1),
            ("2000u", 2),
        ];
        for (q, want) in ok {
            assert_eq!(parse_milli(q), Ok(*want), "{q}");
        }
        let bad: &[(&str, &str)] = &[
            ("-1", "negative"),
            ("-100m", "negative"),
            ("-1.5Gi", "negative"),
            ("9223372036854775808", "out of range"),  // 2^63
            ("18446744073709551616", "out of range"), // 2^64
            ("1e30", "out of range"),
            ("8Ei", "out of range"),
            ("1e40", "out of range"),
            ("∞", "no digits"),
            ("inf", "no digits"),
            ("NaN", "no digits"),
            ("1.5.Gi", "unknown suffix"),
            (" 1", "no digits"),
            ("1 ", "unknown suffix"),
            ("0x10", "unknown suffix"),
            ("1e3.5", "bad exponent"),
            // A lone `e` is no exponent (nor a suffix).
            ("1e", "unknown suffix"),
            ("0.1000000000000000000000000000000000001", "too many digits"),
        ];
        for (q, why) in bad {
            let e = parse_milli(q).expect_err(q);
            assert!(e.contains(why) && e.contains(&format!("`{q}`")), "{q}: {e}");
        }
        // CPU compares millicores as int64: 2^63 millicores is out of range.
        assert!(parse_for("cpu", "9223372036854775808m").is_err());
        assert_eq!(parse_for("cpu", "9223372036854775807m"), Ok(MAX));
        assert_eq!(parse_for("memory", "9223372036854775807"), Ok(MAX * 1000));
    }

    /// The audit asked whether `+1` and `-0` are quantities. apimachinery's
    /// `ParseQuantity` takes an optional sign (`+1` is 1, `-0` is zero, so
    /// not negative), `digits.`, `.digits`, `e`/`E` + a signed integer, and
    /// `E` alone is exa; validation then refuses any negative request or
    /// limit (`-1n` too). We agree on all of these. Where its code is laxer
    /// than its documented grammar (`-`, `+`, `.`, `Gi` with no digits all
    /// parse as 0), we keep the grammar and refuse: a diagnostic, never a
    /// wrong PASS. Surrounding spaces are refused as `ParseQuantity` does
    /// (only JSON decoding trims them).
    #[test]
    fn quantity_grammar_agrees_with_kubernetes_parse_quantity() {
        let ok: &[(&str, i128)] = &[
            ("+1", 1000),
            ("-0", 0),
            ("-0.0m", 0),
            ("+0.5", 500),
            (".5", 500),
            ("5.", 5000),
            ("1.G", 1_000_000_000_000),
            ("1e+3", 1_000_000),
            ("1E3", 1_000_000),
            ("1E", 1_000_000_000_000_000_000_000),
            ("0.5m", 1),
            ("1n", 1),
        ];
        for (q, want) in ok {
            assert_eq!(parse_milli(q), Ok(*want), "{q}");
        }
        for q in [
            "-1", "-1n", "-0.001m", "+-1", "++1", "1K", "1ki", "1e", "1e3.5", "1.5.Gi", "-", "+", ".", "Gi", " 1", "1 ",
        ] {
            assert!(parse_milli(q).is_err(), "{q} should be refused");
        }
    }

    proptest::proptest! {
        #![proptest_config(crate::util::prop_config(500))]

        /// Any string: never a panic, never a negative or out-of-range value.
        #[test]
        fn quantity_parse_is_total_and_bounded(q in "\\PC{0,24}|[+-]?[0-9]{0,25}(\\.[0-9]{0,12})?(m|k|Ki|Mi|Gi|Ti|Pi|Ei|M|G|T|P|E|e-?[0-9]{1,3})?") {
            if let Ok(v) = parse_milli(&q) {
                proptest::prop_assert!((0..=MAX_UNITS * 1000).contains(&v), "{q} → {v}");
            }
            for r in ["cpu", "memory", "nvidia.com/gpu"] {
                if let Ok(v) = parse_for(r, &q) {
                    proptest::prop_assert!(v >= 0);
                }
            }
        }

        /// Integers and binary suffixes are exact: n, nKi, nm.
        #[test]
        fn quantity_exact_for_integers(n in 0u64..(1u64 << 40)) {
            proptest::prop_assert_eq!(parse_milli(&n.to_string()), Ok(i128::from(n) * 1000));
            proptest::prop_assert_eq!(parse_milli(&format!("{n}Ki")), Ok(i128::from(n) * 1024 * 1000));
            proptest::prop_assert_eq!(parse_milli(&format!("{n}m")), Ok(i128::from(n)));
            let neg = format!("-{}", n + 1);
            proptest::prop_assert!(parse_milli(&neg).is_err());
        }
    }

    #[test]
    fn request_sums_are_checked() {
        let big = |q: &str| ContainerResources {
            requests: BTreeMap::from([("memory".into(), q.into())]),
            limits: BTreeMap::new(),
        };
        let mut acc = Res::from([("memory".to_string(), i128::MAX - 5)]);
        assert!(add_into(&mut acc, &Res::from([("memory".to_string(), 10)])).unwrap_err().contains("overflows"));
        // A pod without containers has unknown requests, not zero.
        assert!(pod_res(&Pod::default(), Which::Requests).unwrap_err().contains("no spec.containers"));
        let p = Pod { containers: vec![big("9223372036854775807"), big("9223372036854775807")], ..Pod::default() };
        assert_eq!(pod_res(&p, Which::Requests).unwrap()["memory"], 2 * (i64::MAX as i128) * 1000);
        let neg = Pod { containers: vec![big("-1Gi")], ..Pod::default() };
        assert!(pod_res(&neg, Which::Requests).unwrap_err().contains("negative"));
    }

    #[test]
    fn scheduler_rounding_per_resource() {
        // CPU compares millicores; everything else whole units rounded up.
        assert_eq!(parse_for("cpu", "100u").unwrap(), 1);
        assert_eq!(parse_for("memory", "1.5").unwrap(), 2000);
        assert_eq!(parse_for("nvidia.com/gpu", "1").unwrap(), 1000);
        assert_eq!(format("cpu", 12_500), "12.5");
        assert_eq!(format("memory", 8 * (1i128 << 30) * 1000), "8Gi");
        assert_eq!(format("memory", 7_516_192_768_000), "7Gi");
        assert_eq!(format("nvidia.com/gpu", 2000), "2");
        // Every byte-counted resource in binary units; any other as a number.
        let gib = (1i128 << 30) * 1000;
        for bytes in ["ephemeral-storage", "hugepages-2Mi", "example.com/vram.memory"] {
            assert_eq!(format(bytes, 2 * gib), "2Gi", "{bytes}");
        }
        // Each binary unit at its size, a fraction to one decimal.
        let kib = 1024 * 1000;
        assert_eq!(format("memory", 3 * (1i128 << 40) * 1000), "3Ti");
        assert_eq!(format("memory", 1536 * (1i128 << 20) * 1000), "1.5Gi");
        assert_eq!(format("memory", 5 * (1i128 << 20) * 1000), "5Mi");
        assert_eq!(format("memory", 2 * kib), "2Ki");
        assert_eq!(format("memory", 1023 * 1000), "1023");
        assert_eq!(format("example.com/memory-bandwidth", 2 * gib), "2147483648");
    }

    #[test]
    fn effective_pod_requests_follow_the_scheduler() {
        let c = |cpu: &str| ContainerResources {
            requests: BTreeMap::from([("cpu".into(), cpu.into())]),
            limits: BTreeMap::new(),
        };
        let p = Pod {
            containers: vec![c("1"), c("500m")],
            init_containers: vec![(c("4"), false), (c("250m"), true)],
            overhead: BTreeMap::from([("cpu".into(), "100m".into())]),
            ..Pod::default()
        };
        // max(1.5 + 0.25 sidecar, 4) + 0.1 overhead
        assert_eq!(pod_res(&p, Which::Requests).unwrap()["cpu"], 4100);
        // A limit without a request defaults the request.
        let gpu = Pod {
            containers: vec![ContainerResources {
                requests: BTreeMap::new(),
                limits: BTreeMap::from([("nvidia.com/gpu".into(), "1".into())]),
            }],
            ..Pod::default()
        };
        assert_eq!(pod_res(&gpu, Which::Requests).unwrap()["nvidia.com/gpu"], 1000);
    }
}
