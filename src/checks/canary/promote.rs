//! `promote`: progressive delivery through git, judged by the gates. After
//! the canary judged the current traffic step of KServe's own split, one
//! action: the PR that raises the candidate's share to the plan's next
//! step (PASS), the revert PR (FAIL), or nothing, saying what evidence is
//! missing (anything else). No controller in the cluster: the PR is the
//! step, a human or a merge queue takes it, Argo CD syncs it.
//!
//! Pure: what to do, the next step's objects ([`next_objects`], through
//! `split::render_split`), and what the PR and the step say.
//! `app::promote` reads git, the split file and GitHub, and writes the branch.

use std::path::Path;

use serde::Serialize;
use serde_json::{json, Value};

use super::split::{self, Declared};
use crate::bundle::Loaded;
use crate::checks::revert::steps::PullState;
use crate::report::{StepReport, Verdict};

/// What promote does after the canary's judgment.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub(crate) enum Action {
    /// The canary passed at `from`%: the PR that moves to `to`%.
    Next { from: u32, to: u32 },
    /// The canary failed: the revert PR (`app::revert`).
    Revert,
    /// Open nothing: `why` (what evidence is missing), `done` when the
    /// plan's last step already holds.
    Hold { why: String, done: bool },
}

/// The plan's step the declared share stands for: the share rounded, as
/// KServe's integer percentages are.
fn current_step(percent: f64) -> u32 {
    percent.round().clamp(0.0, 100.0) as u32
}

/// Decide from the canary step (`None`: no canary judgment to act on), the
/// split git holds and the plan's steps. Only a PASS moves traffic up, only
/// a FAIL reverts: every other verdict is missing evidence, and acting on
/// missing evidence would promote or revert whenever a dependency is down.
pub(crate) fn decide(canary: Option<&StepReport>, declared: &Result<Declared, String>, steps: &[u32]) -> Action {
    let Some(c) = canary else {
        return Action::Hold {
            why: "no canary judgment to act on: run the canary step before promote (or pass --prometheus, or --evidence with a canary report)".into(),
            done: false,
        };
    };
    match c.verdict {
        Verdict::Fail => return Action::Revert,
        Verdict::Pass => {}
        _ => return Action::Hold { why: missing_evidence(c), done: false },
    }
    let d = match declared {
        Ok(d) => d,
        Err(why) => {
            return Action::Hold {
                why: format!("the canary passed, but the split file states no split: {why}"),
                done: false,
            }
        }
    };
    let from = current_step(d.percent);
    match steps.iter().copied().find(|s| *s > from) {
        Some(to) => Action::Next { from, to },
        None => Action::Hold {
            why: format!(
                "the canary passed at {from}%, the plan's last step ({}%): nothing left to promote",
                steps.last().copied().unwrap_or(100)
            ),
            done: true,
        },
    }
}

/// What the canary step lacked, in its own words: each finding that is
/// missing evidence (too few samples, no data, a split not shown to hold),
/// else its summary.
pub(crate) fn missing_evidence(c: &StepReport) -> String {
    let verdict = c.verdict.to_string().to_ascii_uppercase();
    let missing: Vec<String> = c
        .diagnostics
        .iter()
        .filter(|d| d.code.missing_evidence() || d.code == crate::diag::Code::TrafficSplitMismatch)
        .map(|d| format!("{} {}", d.code, d.message))
        .collect();
    if missing.is_empty() {
        format!("the canary is {verdict}, not PASS or FAIL: {}", c.summary)
    } else {
        format!("the canary is {verdict}, not PASS or FAIL; missing: {}", missing.join("; "))
    }
}

fn kind(o: &Value) -> Option<&str> {
    o.get("kind").and_then(Value::as_str)
}

fn name(o: &Value) -> Option<&str> {
    o.pointer("/metadata/name").and_then(Value::as_str)
}

/// The objects of step `to`, from the objects git holds now (`d` read from
/// them): the baseline and the candidate taken apart again, then
/// `split::render_split`. Every other object in the file stays as it is, in
/// its place.
pub(crate) fn next_objects(objects: &[Value], d: &Declared, to: u32) -> Result<Vec<Value>, String> {
    if d.kind == "InferenceService" {
        let i = objects.iter().position(|o| kind(o) == Some("InferenceService")).ok_or("no InferenceService")?;
        let both = &objects[i];
        let cand = both
            .pointer("/spec/canary/0/predictor")
            .ok_or("the InferenceService has no spec.canary[0].predictor: the candidate already serves alone")?;
        let mut baseline = both.clone();
        if let Some(spec) = baseline.get_mut("spec").and_then(Value::as_object_mut) {
            spec.remove("canary");
        }
        let mut candidate = baseline.clone();
        candidate["spec"]["predictor"] = cand.clone();
        let mut out = objects.to_vec();
        out.remove(i);
        for (k, o) in split::render_split(&baseline, &candidate, to)?.into_iter().enumerate() {
            out.insert(i + k, o);
        }
        return Ok(out);
    }
    let find = |n: &str| objects.iter().position(|o| kind(o) == Some("LLMInferenceService") && name(o) == Some(n));
    let c = find(&d.candidate).ok_or_else(|| format!("no LLMInferenceService `{}`", d.candidate))?;
    let b = find(&d.baseline)
        .filter(|b| *b != c)
        .ok_or_else(|| format!("no baseline LLMInferenceService `{}` beside the candidate", d.baseline))?;
    let rendered = split::render_split(&objects[b], &objects[c], to)?;
    let mut out = objects.to_vec();
    out[b] = rendered[0].clone();
    out[c] = rendered[1].clone();
    Ok(out)
}

/// Each traffic knob the objects hold, as `(what, value)`: an
/// InferenceService's `spec.canary[0].trafficPercent` (absent: the
/// predictor serves alone), each LLMInferenceService's route weight.
pub(crate) fn knobs(objects: &[Value]) -> Vec<(String, Option<u64>)> {
    objects
        .iter()
        .filter_map(|o| match kind(o)? {
            "InferenceService" => Some((
                format!("InferenceService/{} spec.canary[0].trafficPercent", name(o)?),
                o.pointer("/spec/canary/0/trafficPercent").and_then(Value::as_u64),
            )),
            "LLMInferenceService" => Some((
                format!("LLMInferenceService/{} spec.router.route.weight", name(o)?),
                o.pointer("/spec/router/route/weight").and_then(Value::as_u64),
            )),
            _ => None,
        })
        .collect()
}

/// The split file's first line: who wrote it and which step it holds (the
/// objects follow, through the one YAML writer).
pub(crate) fn file_header(l: &Loaded, to: u32) -> String {
    format!(
        "# KServe's traffic split for {} {}: {to}% on the candidate (written by `bundlegate promote`).\n",
        crate::report::escape::title(&l.bundle.metadata.name),
        crate::report::escape::title(&l.bundle.metadata.version)
    )
}

/// `bundlegate/promote-<name>-<version>-<to>-<12 hex>`: one branch per
/// release, path and step, so concurrent runs collide on the remote and
/// open one PR. The hex: sha256 of the split file's repository path, the
/// release digest and the step, each NUL-terminated.
pub(crate) fn branch_name(l: &Loaded, rel: &Path, to: u32) -> String {
    let clean = |s: &str| -> String {
        let o: String =
            s.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') { c } else { '-' }).collect();
        o.trim_matches('-').to_string()
    };
    format!(
        "bundlegate/promote-{}-{}-{to}-{}",
        clean(&l.bundle.metadata.name),
        clean(&l.bundle.metadata.version),
        crate::checks::revert::text::branch_hash(rel, &l.digest, &to.to_string())
    )
}

/// The marker the next-step commit and PR carry: the release and the step.
pub(crate) const PROMOTE_MARKER: &str = "bundlegate-promote-of:";

pub(crate) fn commit_message(l: &Loaded, rel: &Path, from: u32, to: u32) -> String {
    use crate::report::escape::{path_name, title};
    format!(
        "Promote {name} {v} to {to}%\n\nThe canary passed at {from}%; this raises the candidate's share in {path}\nto the plan's next step.\n\n{PROMOTE_MARKER} {d} {to}\n",
        name = title(&l.bundle.metadata.name),
        v = title(&l.bundle.metadata.version),
        path = title(&path_name(rel)),
        d = title(&l.digest),
    )
}

pub(crate) fn pr_title(l: &Loaded, from: u32, to: u32) -> String {
    crate::report::escape::title(&format!(
        "Promote {} {} from {from}% to {to}% (bundlegate)",
        l.bundle.metadata.name, l.bundle.metadata.version
    ))
}

/// The observed split against the declared one, from the canary step's
/// `data.split` (what `split::write_into` wrote), as one Markdown table.
fn split_table(canary: &StepReport) -> String {
    use crate::report::escape::markdown as md;
    let s = &canary.data["split"];
    let Some(d) = s.get("declared") else {
        return "The canary's report holds no split judgment.\n\n".into();
    };
    let num = |v: &Value| v.as_f64().map(|x| format!("{x:.1}%")).unwrap_or_else(|| "—".into());
    format!(
        "| | candidate {} | requests |\n|---|---|---|\n| declared | {} | |\n| observed | {} | {} of {} |\n\nVerdict on the split: **{}** (tolerance {} points).\n\n",
        md(d["candidate"].as_str().unwrap_or("?")),
        num(&d["percent"]),
        num(&s["observedPercent"]),
        s["candidateRequests"],
        s["totalRequests"],
        md(s["verdict"].as_str().unwrap_or("?")),
        s["tolerancePoints"]
    )
}

/// The next-step PR's body: what changes, the split observed against the
/// declared one, and the canary's gate tables.
pub(crate) fn pr_body(
    l: &Loaded,
    rel: &Path,
    branch: &str,
    (from, to): (u32, u32),
    changes: &[(String, Option<u64>, Option<u64>)],
    canary: &StepReport,
) -> String {
    use crate::report::escape::{markdown as md, markdown_code as code};
    let mut o = format!("<!-- {PROMOTE_MARKER} {} {to} -->\n", md(&l.digest));
    o.push_str(&format!(
        "## Promote {} {} from {from}% to {to}%\n\nThe canary passed at {from}% of the traffic. This PR raises the candidate's share in {} to the plan's next step{}.\n\n",
        md(&l.bundle.metadata.name),
        md(&l.bundle.metadata.version),
        md(&rel.display().to_string()),
        if to == 100 { " (100%: the candidate replaces the baseline)" } else { "" }
    ));
    o.push_str("### What changes\n\n| field | now | after merge |\n|---|---|---|\n");
    let v = |x: &Option<u64>| x.map(|x| x.to_string()).unwrap_or_else(|| "—".into());
    for (what, before, after) in changes {
        o.push_str(&format!("| {} | {} | {} |\n", md(what), v(before), v(after)));
    }
    o.push_str("\n### The split, observed against the declared one\n\n");
    o.push_str(&split_table(canary));
    o.push_str("### The canary's gates\n\n");
    o.push_str(&crate::report::format::markdown_step(canary));
    o.push_str(&format!(
        "\nBranch {} is named after the release and the step, so concurrent runs open one PR.\n\n{PROMOTE_MARKER} {} {to}\n",
        code(branch),
        md(&l.digest)
    ));
    crate::report::comment::truncate_markdown(
        &o,
        60_000,
        &format!("\n\n…evidence truncated.\n\n{PROMOTE_MARKER} {} {to}\n", md(&l.digest)),
    )
}

/// Each knob before and after, for the PR and the step's data.
pub(crate) fn changes(before: &[Value], after: &[Value]) -> Vec<(String, Option<u64>, Option<u64>)> {
    let (b, a) = (knobs(before), knobs(after));
    let mut out: Vec<(String, Option<u64>, Option<u64>)> =
        b.iter().map(|(k, v)| (k.clone(), *v, a.iter().find(|(x, _)| x == k).and_then(|(_, v)| *v))).collect();
    out.extend(a.iter().filter(|(k, _)| !b.iter().any(|(x, _)| x == k)).map(|(k, v)| (k.clone(), None, *v)));
    out
}

/// The promote step when it opens nothing, or hands over to the revert.
pub(crate) fn held(target: &str, action: &Action) -> StepReport {
    let mut s = StepReport::new("promote", target);
    match action {
        Action::Hold { why, done: true } => {
            s.verdict = Verdict::NotRun;
            s.summary = format!("no PR: {why}");
        }
        Action::Hold { why, done: false } => {
            s.verdict = Verdict::Inconclusive;
            s.summary = format!("no PR opened: {why}");
        }
        Action::Revert => {
            s.verdict = Verdict::Fail;
            s.summary = "the canary failed: no next step; the revert step below opens the revert PR".into();
        }
        Action::Next { .. } => {}
    }
    s.data = json!(action);
    s
}

/// The promote step once the next step's branch is pushed: a PR opened or
/// found is the step under way (PASS); without GitHub nobody is asked to
/// merge it (INCONCLUSIVE).
pub(crate) fn next_step(
    target: &str,
    action: &Action,
    (branch, commit, existed): (&str, &str, bool),
    changes: &[(String, Option<u64>, Option<u64>)],
    pr: PullState,
) -> StepReport {
    let mut s = StepReport::new("promote", target);
    let (from, to) = match action {
        Action::Next { from, to } => (*from, *to),
        _ => (0, 0),
    };
    let mut data = json!({"action": action, "branch": branch, "commit": commit, "branchExisted": existed,
                          "changes": changes.iter().map(|(k, b, a)| json!({"field": k, "before": b, "after": a})).collect::<Vec<_>>()});
    let step = format!("{from}% → {to}%");
    match pr {
        PullState::NoGitHub => {
            s.verdict = Verdict::Inconclusive;
            s.summary = format!(
                "branch {branch} ({step}) {}; no GITHUB_TOKEN or GitHub repository (GITHUB_REPOSITORY): PR not opened",
                if existed { "already existed" } else { "pushed" }
            );
        }
        PullState::AlreadyOpen { number, url } => {
            s.summary = format!("already promoting ({step}): {branch} exists and PR #{number} is open ({url})");
            data["pr"] = json!({"number": number, "url": url, "created": false});
        }
        PullState::Opened { number, url } => {
            s.summary = format!("opened PR #{number} {url}: {step} on {branch}");
            data["pr"] = json!({"number": number, "url": url, "created": true});
        }
        PullState::Exists(number) => {
            s.summary = format!(
                "already promoting ({step}): a PR for {branch} exists{}",
                number.map(|n| format!(" (#{n})")).unwrap_or_default()
            );
            data["pr"] = json!({"number": number, "created": false});
        }
    }
    s.data = data;
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::{Code, Diagnostic};
    use proptest::prelude::*;

    fn canary(v: Verdict) -> StepReport {
        let mut s = StepReport::new("canary", "t");
        s.verdict = v;
        s.summary = "2 of 3 gate(s) passed".into();
        s
    }

    fn llm(name: &str, group: &str, weight: u64, digest: &str) -> Value {
        json!({"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService",
               "metadata": {"name": name, "annotations": {"bundlegate.dev/release-digest": digest}},
               "spec": {"model": {"uri": format!("s3://m/{name}/")}, "router": {"route": {"group": group, "weight": weight}}}})
    }

    fn isvc(canary: Option<u64>) -> Value {
        let mut o = json!({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "m"},
               "spec": {"predictor": {"containers": [{"name": "kserve-container", "image": "old"}]}}});
        if let Some(p) = canary {
            o["spec"]["canary"] = json!([{"trafficPercent": p, "predictor": {"containers": [{"name": "kserve-container", "image": "new"}]}}]);
        }
        o
    }

    #[test]
    fn a_pass_moves_to_the_next_step_a_fail_reverts_anything_else_holds() {
        let objs = vec![llm("m", "m", 90, "sha256:v1"), llm("m-v2", "m", 10, "sha256:v2")];
        let d = split::declared(&objs, "sha256:v2");
        assert_eq!(d.as_ref().unwrap().baseline, "m");
        let steps = [10, 50, 100];
        assert_eq!(decide(Some(&canary(Verdict::Pass)), &d, &steps), Action::Next { from: 10, to: 50 });
        assert_eq!(decide(Some(&canary(Verdict::Fail)), &d, &steps), Action::Revert);
        let mut inc = canary(Verdict::Inconclusive);
        inc.diagnostics.push(Diagnostic::new(Code::TrafficSplitUnproven, "120 requests cannot show".to_string()));
        match decide(Some(&inc), &d, &steps) {
            Action::Hold { why, done: false } => {
                assert!(why.contains("BG311") && why.contains("120 requests"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(decide(None, &d, &steps), Action::Hold { done: false, .. }));
        assert!(matches!(decide(Some(&canary(Verdict::Error)), &d, &steps), Action::Hold { done: false, .. }));
        // A FAIL reverts even when the split cannot be read; a PASS does not move it.
        let unreadable = Err("no group".to_string());
        assert_eq!(decide(Some(&canary(Verdict::Fail)), &unreadable, &steps), Action::Revert);
        assert!(matches!(decide(Some(&canary(Verdict::Pass)), &unreadable, &steps), Action::Hold { done: false, .. }));
        // At the last step, nothing is left.
        let full = split::declared(&[isvc(None)], "x");
        assert!(matches!(decide(Some(&canary(Verdict::Pass)), &full, &steps), Action::Hold { done: true, .. }));
    }

    #[test]
    fn the_next_step_raises_the_weight_and_at_100_the_candidate_replaces_the_baseline() {
        let objs = vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            llm("m", "m", 90, "a"),
            llm("m-v2", "m", 10, "b"),
        ];
        let d = split::declared(&objs, "b").unwrap();
        let next = next_objects(&objs, &d, 50).unwrap();
        assert_eq!(next[0]["kind"], "ConfigMap", "other objects stay in place");
        assert_eq!(next[1]["spec"]["router"]["route"], json!({"group": "m", "weight": 50}));
        assert_eq!(next[2]["spec"]["router"]["route"], json!({"group": "m", "weight": 50}));
        assert_eq!(next[2]["spec"]["model"], objs[2]["spec"]["model"]);
        assert_eq!(
            changes(&objs, &next),
            vec![
                ("LLMInferenceService/m spec.router.route.weight".to_string(), Some(90), Some(50)),
                ("LLMInferenceService/m-v2 spec.router.route.weight".to_string(), Some(10), Some(50)),
            ]
        );
        let one = vec![isvc(Some(10))];
        let d = split::declared(&one, "x").unwrap();
        assert_eq!(d.percent, 10.0);
        let half = next_objects(&one, &d, 50).unwrap();
        assert_eq!(half[0]["spec"]["canary"][0]["trafficPercent"], 50);
        assert_eq!(half[0]["spec"]["predictor"]["containers"][0]["image"], "old");
        let full = next_objects(&one, &d, 100).unwrap();
        assert!(full[0]["spec"].get("canary").is_none());
        assert_eq!(full[0]["spec"]["predictor"]["containers"][0]["image"], "new");
        assert!(next_objects(&[isvc(None)], &d, 50).is_err());
    }

    #[test]
    fn the_candidate_is_the_object_carrying_the_releases_digest() {
        let objs = vec![llm("m", "m", 70, "sha256:v1"), llm("m-v2", "m", 30, "sha256:v2")];
        let d = split::declared(&objs, "sha256:v2").unwrap();
        assert_eq!((d.candidate.as_str(), d.baseline.as_str(), d.percent), ("m-v2", "m", 30.0));
        assert!(split::declared(&objs, "sha256:other").unwrap_err().contains("digest"));
        // Alone in its group: it takes all the traffic, the last step.
        let alone = split::declared(&[llm("m-v2", "m", 30, "sha256:v2")], "sha256:v2").unwrap();
        assert_eq!((alone.percent, alone.baseline.as_str()), (100.0, "m"));
        assert!(split::declared(&[json!({"kind": "ConfigMap"})], "x").is_err());
    }

    proptest! {
        #![proptest_config(crate::util::prop_config(512))]
        /// Whatever the verdict, share and plan: only a PASS moves traffic,
        /// always up, to a step of the plan; only a FAIL reverts.
        #[test]
        fn only_a_pass_promotes_and_only_up_to_a_planned_step(
            v in 0usize..5,
            share in 0u32..=100,
            steps in proptest::collection::btree_set(1u32..=100, 1..6),
        ) {
            let verdict = [Verdict::Pass, Verdict::Fail, Verdict::Inconclusive, Verdict::Error, Verdict::NotRun][v];
            let steps: Vec<u32> = steps.into_iter().collect();
            let d = Ok(Declared { kind: "InferenceService".into(), candidate: "m".into(), baseline: "m".into(), percent: f64::from(share) });
            match decide(Some(&canary(verdict)), &d, &steps) {
                Action::Next { from, to } => {
                    prop_assert_eq!(verdict, Verdict::Pass);
                    prop_assert_eq!(from, share);
                    prop_assert!(to > from && steps.contains(&to));
                    prop_assert!(!steps.iter().any(|s| *s > from && *s < to), "no step skipped");
                }
                Action::Revert => prop_assert_eq!(verdict, Verdict::Fail),
                Action::Hold { done, .. } => {
                    prop_assert!(verdict != Verdict::Fail);
                    prop_assert_eq!(done, verdict == Verdict::Pass);
                    if done { prop_assert!(steps.iter().all(|s| *s <= share)); }
                }
            }
        }
    }
}
