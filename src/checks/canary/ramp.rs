//! Traffic steps (`spec.canary.steps: [10, 50, 100]`), placed from what the
//! arms really received: the candidate's share of the requests, read from
//! Prometheus at a fixed resolution over a look-back horizon, says when each
//! split was held (a KServe `canaryTrafficPercent` change or a mesh weight
//! change shows up as the arms' request-rate ratio; no deployment exports
//! its configured split). Each step is judged over the last window of the
//! latest stretch held at it:
//!
//! - a step below 100%: both arms served at once, every gate compares them;
//! - the 100% step: the baseline serves nothing, so only absolute limits
//!   (`maxAbsolute` / `minAbsolute`) are judged, on the candidate alone;
//!   relative limits were judged at the earlier steps. Without an absolute
//!   limit that step is NOT CHECKED (lint BG307 says so beforehand).
//!
//! The first FAIL stops the walk (later steps NOT JUDGED); a thin window is
//! INCONCLUSIVE; a step skipped while a later one was held is INCONCLUSIVE;
//! steps not reached yet are PENDING. Pure functions; `app::canary` queries.

use serde::Serialize;

use super::gate::{GateOutcome, GateVerdict};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum StepVerdict {
    Pass,
    Fail,
    Inconclusive,
    /// The 100% step with no gate that can be judged without a baseline.
    NotChecked,
    /// Not judged: an earlier step failed.
    NotJudged,
    /// Not held yet, and no later step was either: the rollout has not got
    /// there.
    Pending,
}

impl std::fmt::Display for StepVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StepVerdict::Pass => "PASS",
            StepVerdict::Fail => "FAIL",
            StepVerdict::Inconclusive => "INCONCLUSIVE",
            StepVerdict::NotChecked => "NOT CHECKED",
            StepVerdict::NotJudged => "NOT JUDGED",
            StepVerdict::Pending => "PENDING",
        })
    }
}

/// Resolution of the split timeline: a tenth of the window, at least 1 s.
/// Each point is the requests of the bucket ending at it, so the window
/// must span about 20 scrape intervals for the buckets to hold two scrapes.
pub(crate) fn resolution_secs(window_secs: u64) -> u64 {
    (window_secs / 10).max(1)
}

/// How far back the steps are looked for: a day, or fewer points where the
/// resolution is fine (Prometheus answers at most 11,000 points a series).
pub(crate) fn horizon_secs(resolution: u64) -> u64 {
    (resolution * 10_000).min(86_400)
}

/// One point of the split timeline: requests of each arm in the bucket
/// `(t - resolution, t]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct SplitPoint {
    pub t: f64,
    pub candidate: f64,
    pub baseline: f64,
}

impl SplitPoint {
    /// The candidate's share of the requests; None without traffic.
    pub(crate) fn share(&self) -> Option<f64> {
        let total = self.candidate + self.baseline;
        (self.candidate.is_finite()
            && self.baseline.is_finite()
            && self.candidate >= 0.0
            && self.baseline >= 0.0
            && total > 0.0)
            .then(|| self.candidate / total)
    }
}

/// The splits a point can belong to: 0% (before the canary), every step,
/// and 100% (after it).
fn classes(steps: &[u32]) -> Vec<u32> {
    let mut c: Vec<u32> = std::iter::once(0).chain(steps.iter().copied()).chain(std::iter::once(100)).collect();
    c.sort_unstable();
    c.dedup();
    c
}

/// The split a share belongs to: within 0.4 × the distance to the nearest
/// other split, so a ramp between two steps (or a bucket straddling a
/// change) belongs to neither.
pub(crate) fn classify(share: f64, steps: &[u32]) -> Option<u32> {
    let c = classes(steps);
    c.iter().copied().find(|&p| {
        let gap = c.iter().filter(|&&o| o != p).map(|&o| (o as f64 - p as f64).abs()).fold(f64::INFINITY, f64::min);
        (share * 100.0 - p as f64).abs() <= 0.4 * gap
    })
}

/// A stretch of consecutive points at one split. Points without traffic
/// inside it do not break it; a point at another split or between splits
/// does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Segment {
    pub percent: u32,
    /// Times of its first and last points.
    pub first: f64,
    pub last: f64,
    pub points: usize,
    /// Whether the point before / after it was at another split (or between
    /// splits): its edge bucket may hold some of that other split.
    pub changed_before: bool,
    pub changed_after: bool,
}

pub(crate) fn segments(points: &[SplitPoint], steps: &[u32]) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::new();
    // The split of the last point with traffic: Some(None) = between splits.
    let mut prev: Option<Option<u32>> = None;
    let mut pts: Vec<&SplitPoint> = points.iter().filter(|p| p.t.is_finite()).collect();
    pts.sort_by(|a, b| a.t.total_cmp(&b.t));
    for p in pts {
        let Some(share) = p.share() else { continue };
        let class = classify(share, steps);
        match (prev, class, out.last_mut()) {
            (Some(Some(pc)), Some(c), Some(seg)) if pc == c => {
                seg.last = p.t;
                seg.points += 1;
            }
            _ => {
                if let (Some(seg), Some(Some(_))) = (out.last_mut(), prev) {
                    seg.changed_after = true;
                }
                if let Some(c) = class {
                    out.push(Segment {
                        percent: c,
                        first: p.t,
                        last: p.t,
                        points: 1,
                        changed_before: prev.is_some(),
                        changed_after: false,
                    });
                }
            }
        }
        prev = Some(class);
    }
    out
}

/// Where one step was found.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StepWindow {
    /// The stretch held at the step (first bucket start, last point).
    pub held_from: f64,
    pub held_to: f64,
    /// The window judged: ends at `end`, `secs` long (0: held too briefly
    /// to judge once its edge buckets are dropped).
    pub end: f64,
    pub secs: f64,
}

/// Finds each step's latest stretch, walking back from the last step so the
/// stretches are in order (a step's stretch ends before the next step's
/// begins). The judged window drops an edge bucket that borders another
/// split and is at most `window_secs` long.
pub(crate) fn place(segments: &[Segment], steps: &[u32], resolution: f64, window_secs: f64) -> Vec<Option<StepWindow>> {
    let mut out = vec![None; steps.len()];
    let mut bound = f64::INFINITY;
    for (i, pct) in steps.iter().enumerate().rev() {
        let Some(seg) = segments.iter().rev().find(|s| s.percent == *pct && s.last < bound) else { continue };
        bound = seg.first;
        let first = seg.first + if seg.changed_before { resolution } else { 0.0 };
        let last = seg.last - if seg.changed_after { resolution } else { 0.0 };
        let covered = if last >= first { last - first + resolution } else { 0.0 };
        out[i] = Some(StepWindow {
            held_from: seg.first - resolution,
            held_to: seg.last,
            end: last.max(first),
            secs: covered.min(window_secs),
        });
    }
    out
}

/// Verdicts for steps that were not found: PENDING when no later step was
/// held either (not reached yet), INCONCLUSIVE when a later one was (this
/// split was skipped: no evidence at it).
pub(crate) fn unplaced_verdict(placed: &[Option<StepWindow>], i: usize) -> StepVerdict {
    if placed[i + 1..].iter().any(Option::is_some) {
        StepVerdict::Inconclusive
    } else {
        StepVerdict::Pending
    }
}

/// One step's verdict from its gates: any FAIL fails it; any INCONCLUSIVE
/// or NO DATA leaves it INCONCLUSIVE; no gate at all is INCONCLUSIVE, or
/// NOT CHECKED at a 100% step (`alone`: nothing there can be compared).
pub(crate) fn judge_step(gates: &[GateOutcome], alone: bool) -> StepVerdict {
    if gates.iter().any(|g| g.verdict == GateVerdict::Fail) {
        StepVerdict::Fail
    } else if gates.is_empty() {
        if alone {
            StepVerdict::NotChecked
        } else {
            StepVerdict::Inconclusive
        }
    } else if gates.iter().any(|g| g.verdict != GateVerdict::Pass) {
        StepVerdict::Inconclusive
    } else {
        StepVerdict::Pass
    }
}

/// The run's verdict over the steps: FAIL if any step failed; PASS when at
/// least one step passed and every other one passed, was NOT CHECKED (the
/// 100% step without absolute limits) or is PENDING (not reached yet);
/// else INCONCLUSIVE.
pub(crate) fn overall(steps: &[StepVerdict]) -> StepVerdict {
    use StepVerdict::*;
    if steps.contains(&Fail) {
        Fail
    } else if steps.contains(&Pass) && steps.iter().all(|s| matches!(s, Pass | NotChecked | Pending)) {
        Pass
    } else {
        Inconclusive
    }
}

/// A traffic step that could not be judged (never held while a later one
/// was, or held too briefly): INCONCLUSIVE, never a pass.
pub(crate) fn step_inconclusive(percent: u32, note: &str, field: &str) -> crate::diag::Diagnostic {
    crate::diag::Diagnostic::new(crate::diag::Code::CanaryGateInconclusive, format!("step {percent}%: {note}"))
        .field(field)
}

/// A step not judged over a window: its verdict, the note for its row,
/// and the finding it raises (INCONCLUSIVE only; its field is the caller's
/// `spec.canary.steps`).
#[derive(Debug, Clone)]
pub(crate) struct Unjudged {
    pub verdict: StepVerdict,
    pub note: String,
    pub finding: Option<crate::diag::Diagnostic>,
}

/// The window step `i` (`percent`) is judged over, or why it is not: an
/// earlier step failed (`after_fail`), it was not found in the
/// last `horizon` seconds (pending, or skipped while a later step was held),
/// or it was held too briefly to judge. `field` names the steps in the bundle.
pub(crate) fn judged_window(
    placed: &[Option<StepWindow>],
    i: usize,
    percent: u32,
    after_fail: bool,
    horizon: u64,
    field: &str,
) -> Result<StepWindow, Box<Unjudged>> {
    let inconclusive = |note: String| {
        Box::new(Unjudged {
            verdict: StepVerdict::Inconclusive,
            finding: Some(step_inconclusive(percent, &note, field)),
            note,
        })
    };
    if after_fail {
        return Err(Box::new(Unjudged {
            verdict: StepVerdict::NotJudged,
            note: "an earlier step failed: not judged".into(),
            finding: None,
        }));
    }
    match placed[i] {
        None if unplaced_verdict(placed, i) == StepVerdict::Pending => Err(Box::new(Unjudged {
            verdict: StepVerdict::Pending,
            note: format!("not held in the last {horizon} s: not reached yet"),
            finding: None,
        })),
        None => Err(inconclusive(format!(
            "never held in the last {horizon} s while a later step was: skipped, so nothing was compared at {percent}%"
        ))),
        Some(w) if w.secs < 1.0 => Err(inconclusive(format!(
            "held about {:.0} s, too briefly to judge once the buckets straddling its changes are dropped",
            w.held_to - w.held_from
        ))),
        Some(w) => Ok(w),
    }
}

/// Also the walk's test helpers (`walk`): the same gates and timelines.
#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A gate outcome with this verdict and nothing else.
    pub(crate) fn outcome(v: GateVerdict) -> GateOutcome {
        GateOutcome {
            metric: "ttft_p95_seconds".into(),
            kind: super::super::gate::MetricKind::Histogram,
            verdict: v,
            candidate: None,
            baseline: None,
            candidate_samples: 0,
            baseline_samples: 0,
            needed: None,
            comparison: None,
            checks: vec![],
            more_samples: None,
            more_minutes: None,
            message: String::new(),
        }
    }

    const STEPS: [u32; 3] = [10, 50, 100];

    /// 1 point a second from t = 1001: `(seconds, candidate share %)`
    /// stretches (NaN: no traffic), 100 requests a point.
    pub(crate) fn timeline(stretches: &[(u32, f64)]) -> Vec<SplitPoint> {
        let mut t = 1000.0;
        let mut out = Vec::new();
        for &(secs, share) in stretches {
            for _ in 0..secs {
                t += 1.0;
                if share.is_nan() {
                    out.push(SplitPoint { t, candidate: 0.0, baseline: 0.0 });
                } else {
                    out.push(SplitPoint { t, candidate: share, baseline: 100.0 - share });
                }
            }
        }
        out
    }

    #[test]
    fn step_verdict_words() {
        use StepVerdict::*;
        let words = [Pass, Fail, Inconclusive, NotChecked, NotJudged, Pending].map(|v| v.to_string());
        assert_eq!(words, ["PASS", "FAIL", "INCONCLUSIVE", "NOT CHECKED", "NOT JUDGED", "PENDING"]);
    }

    #[test]
    fn shares_belong_to_a_split_or_to_none() {
        assert_eq!(classify(0.0, &STEPS), Some(0));
        assert_eq!(classify(0.1, &STEPS), Some(10));
        assert_eq!(classify(0.13, &STEPS), Some(10));
        // Between 10% and 50%: a ramp or a straddling bucket, no step.
        assert_eq!(classify(0.2, &STEPS), None);
        assert_eq!(classify(0.55, &STEPS), Some(50));
        assert_eq!(classify(0.995, &STEPS), Some(100));
        assert_eq!(classify(0.75, &STEPS), None);
        // 100% is a split even when the plan stops short of it.
        assert_eq!(classify(1.0, &[10, 50]), Some(100));
        assert!(SplitPoint { t: 0.0, candidate: 0.0, baseline: 0.0 }.share().is_none());
        assert!(SplitPoint { t: 0.0, candidate: f64::NAN, baseline: 1.0 }.share().is_none());
    }

    #[test]
    fn steps_are_found_where_the_arms_shares_were_held() {
        // Idle, 10% for 12 s, a straddling bucket, 50% for 12 s, 100% for 10 s.
        let pts = timeline(&[(3, f64::NAN), (12, 10.0), (1, 30.0), (12, 50.0), (10, 100.0)]);
        let segs = segments(&pts, &STEPS);
        assert_eq!(segs.iter().map(|s| (s.percent, s.points)).collect::<Vec<_>>(), vec![(10, 12), (50, 12), (100, 10)]);
        // Idle before the first: not a change of split.
        assert!(!segs[0].changed_before && segs[0].changed_after && segs[1].changed_before && !segs[2].changed_after);
        let placed = place(&segs, &STEPS, 1.0, 8.0);
        let w: Vec<StepWindow> = placed.iter().map(|p| p.unwrap()).collect();
        // 10%: points 1004..=1015, last bucket dropped (the change follows).
        assert_eq!((w[0].end, w[0].secs), (1014.0, 8.0));
        assert_eq!((w[0].held_from, w[0].held_to), (1003.0, 1015.0));
        // 50%: 1017..=1028, both edges dropped → 10 s, capped at the 8 s window.
        assert_eq!((w[1].end, w[1].secs), (1027.0, 8.0));
        // 100%: 1029..=1038, first bucket dropped → 9 s, capped at 8 s, ending now.
        assert_eq!((w[2].end, w[2].secs), (1038.0, 8.0));
        let placed = place(&segs, &STEPS, 1.0, 60.0);
        assert_eq!(placed.iter().map(|p| p.unwrap().secs).collect::<Vec<_>>(), vec![11.0, 10.0, 9.0]);
    }

    #[test]
    fn the_latest_ramp_counts_and_unreached_or_skipped_steps_are_said() {
        // 10 → 50 → back to 10 → 50: the second 50% stretch and the 10% before it.
        let pts = timeline(&[(5, 10.0), (5, 50.0), (5, 10.0), (6, 50.0)]);
        let segs = segments(&pts, &STEPS);
        let placed = place(&segs, &STEPS, 1.0, 100.0);
        assert_eq!(placed[0].unwrap().held_to, 1015.0);
        assert_eq!(placed[1].unwrap().held_to, 1021.0);
        assert!(placed[2].is_none());
        assert_eq!(unplaced_verdict(&placed, 2), StepVerdict::Pending);
        // Straight to 100%: 10% and 50% were skipped, not pending.
        let pts = timeline(&[(5, 0.0), (5, 100.0)]);
        let placed = place(&segments(&pts, &STEPS), &STEPS, 1.0, 100.0);
        assert!(placed[0].is_none() && placed[1].is_none() && placed[2].is_some());
        assert_eq!(unplaced_verdict(&placed, 0), StepVerdict::Inconclusive);
        // A one-bucket stretch between two changes is held too briefly.
        let pts = timeline(&[(5, 10.0), (1, 50.0), (5, 100.0)]);
        let placed = place(&segments(&pts, &STEPS), &STEPS, 1.0, 100.0);
        assert_eq!(placed[1].unwrap().secs, 0.0);
        // Nothing at all.
        assert!(place(&segments(&timeline(&[(5, f64::NAN)]), &STEPS), &STEPS, 1.0, 10.0).iter().all(Option::is_none));
    }

    #[test]
    fn resolution_and_horizon_stay_within_what_prometheus_answers() {
        assert_eq!(resolution_secs(1800), 180);
        assert_eq!(resolution_secs(5), 1);
        assert_eq!(horizon_secs(180), 86_400);
        assert_eq!(horizon_secs(2), 20_000);
    }

    #[test]
    fn first_fail_stops_and_thin_windows_are_inconclusive() {
        use GateVerdict::*;
        use StepVerdict as S;
        assert_eq!(judge_step(&[outcome(Pass), outcome(Pass)], false), S::Pass);
        assert_eq!(judge_step(&[outcome(Pass), outcome(NoData)], false), S::Inconclusive);
        assert_eq!(judge_step(&[outcome(Inconclusive), outcome(Fail)], false), S::Fail);
        assert_eq!(judge_step(&[], false), S::Inconclusive);
        assert_eq!(judge_step(&[], true), S::NotChecked);
        assert_eq!(overall(&[S::Pass, S::Fail, S::NotJudged]), S::Fail);
        assert_eq!(overall(&[S::Pass, S::Inconclusive, S::Pass]), S::Inconclusive);
        assert_eq!(overall(&[S::Pass, S::Pass, S::Pass]), S::Pass);
        // The 100% step without absolute limits, or not reached yet, does not
        // block a pass of what was judged; nothing judged never passes.
        assert_eq!(overall(&[S::Pass, S::Pass, S::NotChecked]), S::Pass);
        assert_eq!(overall(&[S::Pass, S::Pending, S::Pending]), S::Pass);
        assert_eq!(overall(&[S::Pending, S::Pending]), S::Inconclusive);
        assert_eq!(overall(&[S::Inconclusive, S::Pass, S::NotChecked]), S::Inconclusive);
        assert_eq!(overall(&[S::NotChecked]), S::Inconclusive);
        assert_eq!(overall(&[]), S::Inconclusive);
    }

    /// A step is judged only over a window of at least a second, and only
    /// until a step fails; the others say why, with a finding when they are
    /// INCONCLUSIVE (skipped, or held too briefly).
    #[test]
    fn steps_not_judged_say_why() {
        let w = |secs: f64| Some(StepWindow { held_from: 100.0, held_to: 130.0, end: 130.0, secs });
        let placed = [None, w(0.5), w(60.0), None];
        let why = |i: usize, after_fail: bool| {
            *judged_window(&placed, i, [5, 25, 50, 100][i], after_fail, 3600, "spec.canary.steps").unwrap_err()
        };
        assert_eq!(judged_window(&placed, 2, 50, false, 3600, "f").unwrap(), w(60.0).unwrap());
        // Exactly a second is enough.
        assert_eq!(judged_window(&[w(1.0)], 0, 50, false, 3600, "f").unwrap(), w(1.0).unwrap());
        let after = why(2, true);
        assert_eq!((after.verdict, after.finding.is_none()), (StepVerdict::NotJudged, true));
        let skipped = why(0, false);
        assert_eq!(skipped.verdict, StepVerdict::Inconclusive);
        assert!(skipped.note.contains("never held in the last 3600 s") && skipped.note.contains("at 5%"));
        let d = skipped.finding.expect("a finding");
        assert_eq!((d.code, d.message.starts_with("step 5%: ")), (crate::diag::Code::CanaryGateInconclusive, true));
        let brief = why(1, false);
        assert_eq!(brief.verdict, StepVerdict::Inconclusive);
        assert!(brief.note.starts_with("held about 30 s, too briefly") && brief.finding.is_some());
        let pending = why(3, false);
        assert_eq!((pending.verdict, pending.finding.is_none()), (StepVerdict::Pending, true));
        assert_eq!(pending.note, "not held in the last 3600 s: not reached yet");
    }
}
