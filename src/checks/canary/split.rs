//! KServe's own traffic split, driven by the canary gates: the split of one
//! traffic step rendered into the objects git holds, the split those objects
//! declare read back, and the split the arms really received judged against
//! it. Pure; the gates judge the arms as in `ramp` and `walk`.
//!
//! - InferenceService (Standard mode, KServe v0.20, kserve#5672): the
//!   baseline stays `spec.predictor`; the candidate's predictor goes in
//!   `spec.canary[0].predictor` with `trafficPercent` = the step. At 100 the
//!   candidate's predictor replaces the baseline's and `spec.canary` goes.
//! - LLMInferenceService: the two versions are two objects in one route
//!   group (`spec.router.route.group`, the baseline's name), weighted
//!   `100 - step` and `step` (`spec.router.route.weight`).
//!
//! A declared split proves nothing by itself (a gateway that ignores the
//! weights, a group name typed twice): the gates' evidence is only the
//! split's evidence when the arms' request counts follow it. More than
//! [`SPLIT_TOLERANCE_POINTS`] off, with the exact binomial test supporting
//! it, is BG310; too few requests to see such a difference is BG311; a
//! split the objects do not state is BG312.

use serde::Serialize;
use serde_json::{json, Value};

use super::statistics::{binom_test_greater, norm_ppf, ALPHA, POWER};
use crate::diag::{Code, Diagnostic};

/// How far (percentage points) the observed share may stray from the
/// declared one before the step's evidence is not the declared step's.
pub const SPLIT_TOLERANCE_POINTS: f64 = 5.0;

fn kind(o: &Value) -> Option<&str> {
    o.get("kind").and_then(Value::as_str)
}

/// The objects that hold `step` (the candidate's percentage, 1..=100) of
/// the traffic on the candidate, from the baseline's and the candidate's
/// rendered objects (each one object of the same kind).
pub fn render_split(baseline: &Value, candidate: &Value, step: u32) -> Result<Vec<Value>, String> {
    if !(1..=100).contains(&step) {
        return Err(format!("traffic step {step} is not a percentage in 1..=100"));
    }
    match (kind(baseline), kind(candidate)) {
        (Some("InferenceService"), Some("InferenceService")) => {
            let cand =
                candidate.pointer("/spec/predictor").ok_or("the candidate InferenceService has no spec.predictor")?;
            if step == 100 {
                let mut o = candidate.clone();
                if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.remove("canary");
                }
                return Ok(vec![o]);
            }
            let mut o = baseline.clone();
            o["spec"]["canary"] = json!([{"predictor": cand, "trafficPercent": step}]);
            Ok(vec![o])
        }
        (Some("LLMInferenceService"), Some("LLMInferenceService")) => {
            let group = baseline.pointer("/metadata/name").and_then(Value::as_str).ok_or("the baseline has no name")?;
            if candidate.pointer("/metadata/name") == baseline.pointer("/metadata/name") {
                return Err(format!(
                    "the candidate and the baseline are both named `{group}`: one route group needs two objects"
                ));
            }
            let weighted = |o: &Value, w: u32| {
                let mut o = o.clone();
                o["spec"]["router"]["route"]["group"] = group.into();
                o["spec"]["router"]["route"]["weight"] = w.into();
                o
            };
            Ok(vec![weighted(baseline, 100 - step), weighted(candidate, step)])
        }
        (a, b) => Err(format!("no KServe traffic split between a {} and a {}", a.unwrap_or("?"), b.unwrap_or("?"))),
    }
}

/// An LLMInferenceService's route group and weight.
fn route(o: &Value) -> (Option<&str>, Option<u64>) {
    (
        o.pointer("/spec/router/route/group").and_then(Value::as_str),
        o.pointer("/spec/router/route/weight").and_then(Value::as_u64),
    )
}

/// The candidate's share (percent) the objects declare: an InferenceService's
/// one `spec.canary` entry, or the candidate's weight within its route group.
pub fn declared_share(objects: &[Value], candidate_name: &str) -> Result<f64, String> {
    if let Some(isvc) = objects.iter().find(|o| kind(o) == Some("InferenceService")) {
        return match isvc.pointer("/spec/canary").and_then(Value::as_array).map(Vec::as_slice) {
            None | Some([]) => Ok(100.0),
            Some([one]) => one
                .get("trafficPercent")
                .and_then(Value::as_u64)
                .filter(|p| *p <= 100)
                .map(|p| p as f64)
                .ok_or_else(|| "spec.canary[0].trafficPercent is not a percentage".to_string()),
            Some(many) => {
                Err(format!("spec.canary has {} entries: one candidate is judged against one baseline", many.len()))
            }
        };
    }
    let name = |o: &Value| o.pointer("/metadata/name").and_then(Value::as_str).map(str::to_string);
    let cand = objects
        .iter()
        .find(|o| kind(o) == Some("LLMInferenceService") && name(o).as_deref() == Some(candidate_name))
        .ok_or_else(|| format!("no LLMInferenceService `{candidate_name}` (the candidate)"))?;
    let (Some(group), Some(w)) = route(cand) else {
        return Err(format!("`{candidate_name}` states no spec.router.route group and weight"));
    };
    let total: u64 = objects.iter().filter(|o| route(o).0 == Some(group)).filter_map(|o| route(o).1).sum();
    if total == 0 {
        return Err(format!("route group `{group}` weighs 0 in all"));
    }
    Ok(100.0 * w as f64 / total as f64)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SplitVerdict {
    /// The requests follow the declared split (within the tolerance).
    Holds,
    Mismatch,
    /// Too few requests to tell.
    Unproven,
}

/// Requests needed to see a share `tol` points off `p` (one side, the
/// gates' level and power).
fn requests_needed(p: f64, tol: f64) -> u64 {
    let p1 = if p + tol <= 1.0 { p + tol } else { p - tol };
    let (za, zb) = (norm_ppf(1.0 - ALPHA / 2.0), norm_ppf(POWER));
    let n = ((za * (p * (1.0 - p)).sqrt() + zb * (p1 * (1.0 - p1)).sqrt()) / tol).powi(2);
    n.ceil().max(1.0) as u64
}

/// The observed split against the declared one: `candidate` of `total`
/// requests went to the candidate while the objects declared `declared_pct`.
pub fn judge_split(declared_pct: f64, candidate: u64, total: u64) -> (SplitVerdict, Option<Diagnostic>) {
    let p = declared_pct / 100.0;
    let tol = SPLIT_TOLERANCE_POINTS / 100.0;
    let needed = requests_needed(p.clamp(0.0, 1.0), tol);
    let observed = if total > 0 { 100.0 * candidate as f64 / total as f64 } else { f64::NAN };
    let evidence = format!(
        "declared {declared_pct:.1}% on the candidate; observed {candidate} of {total} requests ({observed:.1}%)"
    );
    // Off in either direction: the test on the side the observation lies.
    let support = if candidate as f64 >= p * total as f64 {
        binom_test_greater(candidate, total, p)
    } else {
        binom_test_greater(total - candidate.min(total), total, 1.0 - p)
    };
    let off = (observed - declared_pct).abs() > SPLIT_TOLERANCE_POINTS;
    if total > 0 && candidate <= total && off && support.is_some_and(|t| t.p_value < ALPHA / 2.0) {
        let d = Diagnostic::new(
            Code::TrafficSplitMismatch,
            format!("the arms' requests do not follow the declared split: {observed:.1}% reached the candidate where {declared_pct:.1}% was declared, so this step's gates judged another split"),
        )
        .evidence(evidence);
        return (SplitVerdict::Mismatch, Some(d));
    }
    if total < needed || candidate > total {
        let d = Diagnostic::new(
            Code::TrafficSplitUnproven,
            format!("{total} requests cannot show whether the declared {declared_pct:.1}% split holds: {needed} are needed to see a {SPLIT_TOLERANCE_POINTS}-point difference"),
        )
        .evidence(evidence);
        return (SplitVerdict::Unproven, Some(d));
    }
    (SplitVerdict::Holds, None)
}

/// BG312: the objects state no split this judgment can read.
pub fn split_unreadable(why: &str) -> Diagnostic {
    Diagnostic::new(
        Code::TrafficSplitUnreadable,
        format!("the rendered objects state no traffic split to judge: {why}"),
    )
}

/// The annotation every bundlegate render carries: which release an object is.
const RELEASE_DIGEST: &str = "bundlegate.dev/release-digest";

fn name(o: &Value) -> Option<&str> {
    o.pointer("/metadata/name").and_then(Value::as_str)
}

/// The split git holds, as the canary and promote read it: which object
/// is the candidate's and which the baseline's, and the candidate's share.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Declared {
    pub kind: String,
    /// The candidate's object: an InferenceService's own name (both
    /// predictors are in it), an LLMInferenceService's own.
    pub candidate: String,
    /// The baseline's object (the route group's name for LLMInferenceServices).
    pub baseline: String,
    pub percent: f64,
}

/// The split declared by `objects` for the release whose digest is
/// `digest`: an InferenceService's `spec.canary[0]`, or the candidate
/// LLMInferenceService (the one carrying the release's digest) within its
/// route group. `Err`: why no split can be read (BG312).
pub(crate) fn declared(objects: &[Value], digest: &str) -> Result<Declared, String> {
    if let Some(isvc) = objects.iter().find(|o| kind(o) == Some("InferenceService")) {
        let n = name(isvc).ok_or("the InferenceService has no name")?.to_string();
        let percent = declared_share(objects, &n)?;
        return Ok(Declared { kind: "InferenceService".into(), candidate: n.clone(), baseline: n, percent });
    }
    let llm: Vec<&Value> = objects.iter().filter(|o| kind(o) == Some("LLMInferenceService")).collect();
    if llm.is_empty() {
        return Err("no InferenceService and no LLMInferenceService in the file".into());
    }
    let candidate = llm
        .iter()
        .find(|o| {
            o.pointer(&format!("/metadata/annotations/{}", RELEASE_DIGEST.replace('/', "~1")))
                == Some(&Value::from(digest))
        })
        .and_then(|o| name(o))
        .ok_or_else(|| format!("no LLMInferenceService carries this release's digest ({RELEASE_DIGEST}: {digest})"))?;
    let percent = declared_share(objects, candidate)?;
    let group =
        llm.iter().find(|o| name(o) == Some(candidate)).and_then(|o| route(o).0).unwrap_or_default().to_string();
    // The baseline: the other object of the group (the one named after it).
    let baseline = llm
        .iter()
        .filter(|o| name(o) != Some(candidate) && route(o).0 == Some(group.as_str()))
        .map(|o| name(o).unwrap_or_default())
        .min_by_key(|n| *n != group)
        .map(str::to_string);
    let baseline = match (baseline, percent) {
        (Some(b), _) => b,
        // Alone at 100%: nothing beside it to compare.
        (None, p) if p >= 100.0 => group.clone(),
        (None, _) => return Err(format!("route group `{group}` holds the candidate `{candidate}` alone")),
    };
    Ok(Declared { kind: "LLMInferenceService".into(), candidate: candidate.to_string(), baseline, percent })
}

/// What the canary writes of the split into its report: the declared split
/// against the arms' request counts (`candidate`, `baseline` over the
/// judged window). A split that does not hold (BG310) or cannot be shown
/// to (BG311, BG312) leaves no PASS: the gates judged a window whose split
/// is not the declared step's. `diags` go through the run's overrides.
pub(crate) fn write_into(
    s: &mut crate::report::StepReport,
    declared: &Result<Declared, String>,
    candidate: Option<f64>,
    baseline: Option<f64>,
    ov: &crate::diag::Overrides,
) {
    use crate::report::Verdict;
    let n = |v: Option<f64>| v.filter(|v| v.is_finite()).map(|v| v.round().max(0.0) as u64).unwrap_or(0);
    let (c, b) = (n(candidate), n(baseline));
    let (verdict, diag, data) = match declared {
        Err(why) => (None, Some(split_unreadable(why)), json!({"unreadable": why})),
        Ok(d) => {
            let (v, diag) = judge_split(d.percent, c, c + b);
            let observed = if c + b > 0 { Some(100.0 * c as f64 / (c + b) as f64) } else { None };
            let data = json!({"declared": d, "candidateRequests": c, "totalRequests": c + b,
                              "observedPercent": observed, "verdict": v, "tolerancePoints": SPLIT_TOLERANCE_POINTS});
            (Some(v), diag, data)
        }
    };
    let diags = ov.apply(diag.into_iter().collect());
    let blocking = diags.iter().any(|d| d.severity == crate::diag::Severity::Error);
    if s.verdict == Verdict::Pass && (blocking || diags.iter().any(|d| d.code.missing_evidence())) {
        s.verdict = Verdict::Inconclusive;
    }
    s.summary.push_str(&match (declared, verdict) {
        (Ok(d), Some(v)) => format!(
            " Split: {:.1}% declared on the candidate, {} of {} requests observed ({}).",
            d.percent,
            c,
            c + b,
            match v {
                SplitVerdict::Holds => "holds",
                SplitVerdict::Mismatch => "does not hold",
                SplitVerdict::Unproven => "too few requests to tell",
            }
        ),
        _ => " Split: none readable.".to_string(),
    });
    s.diagnostics.extend(diags);
    if let Some(o) = s.data.as_object_mut() {
        o.insert("split".into(), data);
    } else {
        s.data = json!({"split": data});
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn isvc(image: &str) -> Value {
        json!({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "m"},
               "spec": {"predictor": {"containers": [{"name": "kserve-container", "image": image}]}}})
    }
    fn llm(name: &str, uri: &str) -> Value {
        json!({"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService", "metadata": {"name": name},
               "spec": {"model": {"uri": uri}, "replicas": 1}})
    }

    #[test]
    fn an_inferenceservice_step_puts_the_candidate_in_spec_canary() {
        let (b, c) = (isvc("old"), isvc("new"));
        let s = render_split(&b, &c, 10).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0]["spec"]["predictor"]["containers"][0]["image"], "old");
        assert_eq!(s[0]["spec"]["canary"][0]["predictor"]["containers"][0]["image"], "new");
        assert_eq!(s[0]["spec"]["canary"][0]["trafficPercent"], 10);
        assert_eq!(declared_share(&s, "m").unwrap(), 10.0);
        let full = render_split(&b, &c, 100).unwrap();
        assert!(full[0]["spec"].get("canary").is_none());
        assert_eq!(full[0]["spec"]["predictor"]["containers"][0]["image"], "new");
        assert_eq!(declared_share(&full, "m").unwrap(), 100.0);
        assert!(render_split(&b, &c, 0).is_err() && render_split(&b, &c, 101).is_err());
        assert!(render_split(&b, &llm("m-v2", "s3://x/v2/"), 10).is_err());
    }

    #[test]
    fn an_llminferenceservice_step_weights_two_objects_in_one_group() {
        let s = render_split(&llm("m", "s3://x/v1/"), &llm("m-v2", "s3://x/v2/"), 30).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0]["spec"]["router"]["route"], json!({"group": "m", "weight": 70}));
        assert_eq!(s[1]["spec"]["router"]["route"], json!({"group": "m", "weight": 30}));
        assert_eq!(declared_share(&s, "m-v2").unwrap(), 30.0);
        assert_eq!(declared_share(&s, "m").unwrap(), 70.0);
        // Two groups: the candidate alone in its own takes everything it gets.
        let mut split = s.clone();
        split[1]["spec"]["router"]["route"]["group"] = "other".into();
        assert_eq!(declared_share(&split, "m-v2").unwrap(), 100.0);
        assert!(render_split(&llm("m", "a"), &llm("m", "b"), 10).is_err(), "one name twice is one object");
        let mut zero = s;
        zero[0]["spec"]["router"]["route"]["weight"] = 0.into();
        zero[1]["spec"]["router"]["route"]["weight"] = 0.into();
        assert!(declared_share(&zero, "m-v2").is_err());
        assert!(declared_share(&[llm("m-v2", "x")], "m-v2").is_err());
    }

    #[test]
    fn the_observed_split_is_judged_against_the_declared_one() {
        // 10% declared, 10.4% observed in 10 000 requests: holds.
        assert_eq!(judge_split(10.0, 1_040, 10_000).0, SplitVerdict::Holds);
        // 10% declared, 30% observed: the gates judged another split.
        let (v, d) = judge_split(10.0, 3_000, 10_000);
        assert_eq!(v, SplitVerdict::Mismatch);
        assert_eq!(d.unwrap().code, Code::TrafficSplitMismatch);
        // Too little: 4% observed where 10% was declared, but on the side below.
        let (v, _) = judge_split(10.0, 400, 10_000);
        assert_eq!(v, SplitVerdict::Mismatch);
        // Just inside the tolerance, many requests: a difference, but a small one.
        assert_eq!(judge_split(50.0, 5_490, 10_000).0, SplitVerdict::Holds);
        assert_eq!(judge_split(50.0, 5_510, 10_000).0, SplitVerdict::Mismatch);
        // Few requests: off by far, but not supported; and unproven.
        let (v, d) = judge_split(10.0, 2, 10);
        assert_eq!(v, SplitVerdict::Unproven);
        assert_eq!(d.unwrap().code, Code::TrafficSplitUnproven);
        assert_eq!(judge_split(10.0, 0, 0).0, SplitVerdict::Unproven);
        assert_eq!(judge_split(10.0, 11, 10).0, SplitVerdict::Unproven, "more candidate requests than requests");
        // The sample size grows as the tolerance is approached from a balanced split.
        assert!(requests_needed(0.5, 0.05) > requests_needed(0.1, 0.05));
        assert_eq!(split_unreadable("x").code, Code::TrafficSplitUnreadable);
    }

    /// The canary's report takes the split's judgment: a split that holds
    /// keeps the PASS, one that does not (or cannot be shown to, or cannot
    /// be read) leaves none, unless the code is allowed by configuration.
    #[test]
    fn the_canary_report_carries_the_split_and_loses_its_pass_when_it_does_not_hold() {
        use crate::diag::Overrides;
        use crate::report::{StepReport, Verdict};
        let d = Ok(Declared {
            kind: "LLMInferenceService".into(),
            candidate: "m-v2".into(),
            baseline: "m".into(),
            percent: 10.0,
        });
        let pass = || {
            let mut s = StepReport::new("canary", "t");
            s.verdict = Verdict::Pass;
            s.data = json!({"gates": []});
            s
        };
        let run = |declared: &Result<Declared, String>, c: f64, b: f64, ov: &Overrides| {
            let mut s = pass();
            write_into(&mut s, declared, Some(c), Some(b), ov);
            s
        };
        let ov = Overrides::default();
        let s = run(&d, 1_000.0, 9_000.0, &ov);
        assert_eq!((s.verdict, s.diagnostics.len()), (Verdict::Pass, 0));
        assert_eq!(s.data["split"]["verdict"], "holds");
        assert_eq!(s.data["split"]["totalRequests"], 10_000);
        assert!(s.data["gates"].is_array(), "the report's own data is kept");
        let s = run(&d, 3_000.0, 7_000.0, &ov);
        assert_eq!((s.verdict, s.diagnostics[0].code), (Verdict::Inconclusive, Code::TrafficSplitMismatch));
        assert!(s.summary.contains("does not hold"), "{}", s.summary);
        let s = run(&d, 10.0, 90.0, &ov);
        assert_eq!((s.verdict, s.diagnostics[0].code), (Verdict::Inconclusive, Code::TrafficSplitUnproven));
        let s = run(&Err("no group".into()), 1_000.0, 9_000.0, &ov);
        assert_eq!((s.verdict, s.diagnostics[0].code), (Verdict::Inconclusive, Code::TrafficSplitUnreadable));
        // `-A BG310`: the mismatch is not this team's concern; the PASS stands.
        let mut allow = Overrides::default();
        allow.set("BG310", crate::diag::Severity::Allow).unwrap();
        let s = run(&d, 3_000.0, 7_000.0, &allow);
        assert_eq!((s.verdict, s.diagnostics.len()), (Verdict::Pass, 0));
        // A FAIL stays a FAIL: the candidate failed on whatever split it got.
        let mut f = pass();
        f.verdict = Verdict::Fail;
        write_into(&mut f, &d, Some(3_000.0), Some(7_000.0), &ov);
        assert_eq!(f.verdict, Verdict::Fail);
    }
}
