//! The golden set: a few fixed requests sent to the candidate, each with
//! what its answer must look like (valid JSON, a finish reason, a length, a
//! latency). A release once shipped a generation config that cut structured
//! output short; every metric stayed green, and these answers would not.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::paired::{self, PairedCount, PairedVerdict};
use crate::diag::Diagnostic;
use crate::report::{Detail, StepReport, Table};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GoldenSample {
    pub name: String,
    pub api: GoldenApi,
    pub request: Value,
    #[serde(default)]
    pub expect: GoldenExpect,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
pub enum GoldenApi {
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    #[serde(rename = "openai-completions")]
    OpenAiCompletions,
    #[serde(rename = "kserve-v2")]
    KserveV2,
    /// OpenAI-compatible `/v1/embeddings` (vLLM, TEI): the answer is `data[0].embedding`.
    #[serde(rename = "openai-embeddings")]
    OpenAiEmbeddings,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GoldenExpect {
    #[serde(default)]
    pub json: bool,
    #[serde(default)]
    pub finish_reason: Option<String>,
    #[serde(default)]
    pub min_chars: Option<usize>,
    #[serde(default)]
    pub max_chars: Option<usize>,
    #[serde(default)]
    pub max_latency_ms: Option<u64>,
    /// An embedding model's recorded vector for this input: the answer's
    /// cosine similarity to it must reach `minCosine` (default 0.99).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cosine: Option<f64>,
    /// A classifier's or reranker's expected label: the answer's text, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// The similarity an embedding must reach to its recorded vector when the
/// golden line names none: the same model on other hardware or batch sizes
/// differs in the last float digits, a different model or pooling far more.
pub(crate) const DEFAULT_MIN_COSINE: f64 = 0.99;

/// Cosine similarity of two vectors of one length; `None` for different
/// lengths, a zero vector or a value that is not finite.
pub(crate) fn cosine(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let c = dot / (norm(a) * norm(b));
    c.is_finite().then_some(c)
}

/// The embedding and label expectations (the text ones are the caller's).
fn vector_and_label_problems(e: &GoldenExpect, content: &str, p: &mut Vec<String>) {
    if let Some(want) = &e.embedding {
        let min = e.min_cosine.unwrap_or(DEFAULT_MIN_COSINE);
        match serde_json::from_str::<Vec<f64>>(content.trim()) {
            Err(_) => p.push("the answer holds no embedding vector".into()),
            Ok(got) => match cosine(&got, want) {
                None => p.push(format!(
                    "embedding of {} dimensions cannot be compared with the recorded {} (or is all zeros)",
                    got.len(),
                    want.len()
                )),
                Some(c) if c < min => {
                    p.push(format!("embedding's cosine similarity to the recorded vector is {c:.4}, below {min}"))
                }
                Some(_) => {}
            },
        }
    }
    if let Some(want) = &e.label {
        if content.trim() != want {
            let got: String = content.trim().chars().take(80).collect();
            p.push(format!("label `{got}`, expected `{want}`"));
        }
    }
}

/// What the candidate answered to one golden request.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GoldenAnswer {
    pub status: u16,
    pub latency_ms: u64,
    /// The generated text (chat content, completion text, first KServe output).
    pub content: Option<String>,
    pub finish_reason: Option<String>,
    /// The raw body when it was not the expected JSON shape.
    pub raw: Option<String>,
}

/// Every way the answer misses the expectation (empty = passed).
pub fn golden_problems(s: &GoldenSample, a: &GoldenAnswer) -> Vec<String> {
    let mut p = Vec::new();
    if !(200..300).contains(&a.status) {
        p.push(format!("HTTP {}", a.status));
    }
    let Some(content) = &a.content else {
        p.push("no generated text in the answer".into());
        return p;
    };
    let e = &s.expect;
    vector_and_label_problems(e, content, &mut p);
    if e.json {
        if let Err(err) = serde_json::from_str::<Value>(content.trim()) {
            p.push(format!("output is not valid JSON ({err})"));
        }
    }
    if let Some(want) = &e.finish_reason {
        match &a.finish_reason {
            Some(got) if got == want => {}
            Some(got) => p.push(format!("finish reason `{got}`, expected `{want}`")),
            None => p.push(format!("no finish reason reported, expected `{want}`")),
        }
    }
    let chars = content.chars().count();
    if let Some(min) = e.min_chars {
        if chars < min {
            p.push(format!("output has {chars} characters, fewer than {min}"));
        }
    }
    if let Some(max) = e.max_chars {
        if chars > max {
            p.push(format!("output has {chars} characters, more than {max}"));
        }
    }
    if let Some(max) = e.max_latency_ms {
        if a.latency_ms > max {
            p.push(format!("took {} ms, more than {max} ms", a.latency_ms));
        }
    }
    p
}

// ---------------------------------------------------------------------------
// The run, as the canary report shows it

/// One golden sample sent to the candidate: what it asked, what came
/// back, and every way the answer missed (empty = passed).
#[derive(Debug)]
pub(crate) struct GoldenResult {
    pub sample: GoldenSample,
    pub answer: GoldenAnswer,
    pub problems: Vec<String>,
}

impl GoldenResult {
    /// One sample with its answer, judged.
    pub(crate) fn judge(sample: GoldenSample, answer: GoldenAnswer) -> GoldenResult {
        let problems = golden_problems(&sample, &answer);
        GoldenResult { sample, answer, problems }
    }
}

/// The golden set's run: not declared, no endpoint to send it to, ran, ran
/// against both arms (`--baseline-endpoint`: the paired gate), or could not
/// run (an ERROR, never a pass).
#[derive(Debug)]
pub(crate) enum GoldenRun {
    NotDeclared,
    NoEndpoint,
    Ran(Vec<GoldenResult>),
    Paired(Paired),
    Error(String),
}

/// The golden set's answers from both arms, in the golden set's order, and
/// the prompts the candidate may fail beyond the baseline.
#[derive(Debug)]
pub(crate) struct Paired {
    pub candidate: Vec<GoldenResult>,
    pub baseline: Vec<GoldenResult>,
    pub margin: u32,
}

impl Paired {
    /// The paired test over the two runs (`paired::judge`).
    pub(crate) fn count(&self) -> PairedCount {
        let pass = |r: &[GoldenResult]| r.iter().map(|g| g.problems.is_empty()).collect::<Vec<_>>();
        paired::judge(&pass(&self.candidate), &pass(&self.baseline), self.margin)
    }
}

/// `data.golden` in the canary report: `{"status": "ran", …}`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub(crate) enum GoldenData<'a> {
    NotRun {
        reason: &'static str,
    },
    Error {
        reason: &'a str,
    },
    Ran {
        passed: usize,
        failed: usize,
        samples: Vec<SampleData<'a>>,
    },
    /// Both arms answered: the paired test and each arm's samples.
    Paired {
        paired: PairedCount,
        candidate: Vec<SampleData<'a>>,
        baseline: Vec<SampleData<'a>>,
    },
}

/// Each sample of a run, as `data.golden` shows it.
fn samples(r: &[GoldenResult]) -> Vec<SampleData<'_>> {
    r.iter()
        .map(|g| SampleData { name: &g.sample.name, api: g.sample.api, problems: &g.problems, answer: &g.answer })
        .collect()
}

/// One sample in `data.golden.samples`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SampleData<'a> {
    name: &'a str,
    api: GoldenApi,
    problems: &'a [String],
    answer: &'a GoldenAnswer,
}

impl GoldenRun {
    /// Samples the candidate answered wrongly.
    pub(crate) fn failed(&self) -> usize {
        match self {
            GoldenRun::Ran(r) => r.iter().filter(|g| !g.problems.is_empty()).count(),
            // Paired: only a significant loss beyond the margin is the
            // candidate's failure (prompts both arms fail are not).
            GoldenRun::Paired(p) => {
                let c = p.count();
                if c.verdict == PairedVerdict::Worse {
                    usize::try_from(c.candidate_only).unwrap_or(usize::MAX)
                } else {
                    0
                }
            }
            _ => 0,
        }
    }

    /// The run in the report's `data.golden`.
    pub(crate) fn data(&self) -> GoldenData<'_> {
        match self {
            GoldenRun::NotDeclared => GoldenData::NotRun { reason: "no spec.canary.golden declared" },
            GoldenRun::NoEndpoint => GoldenData::NotRun { reason: "no --endpoint" },
            GoldenRun::Error(e) => GoldenData::Error { reason: e },
            GoldenRun::Ran(r) => GoldenData::Ran {
                passed: r.iter().filter(|g| g.problems.is_empty()).count(),
                failed: self.failed(),
                samples: samples(r),
            },
            GoldenRun::Paired(p) => GoldenData::Paired {
                paired: p.count(),
                candidate: samples(&p.candidate),
                baseline: samples(&p.baseline),
            },
        }
    }

    /// Add the results to the step (the table; per failing sample a
    /// finding and the sample whole, to replay it); returns the one-line
    /// note for the summary.
    pub(crate) fn write_into(&self, s: &mut StepReport, diags: &mut Vec<Diagnostic>) -> String {
        match self {
            GoldenRun::NotDeclared => "not run: no spec.canary.golden declared".into(),
            GoldenRun::NoEndpoint => "not run: no --endpoint".into(),
            GoldenRun::Error(e) => format!("could not run ({e})"),
            GoldenRun::Paired(p) => paired_into(p, s, diags),
            GoldenRun::Ran(results) => {
                let mut rows = Vec::new();
                for r in results {
                    let chars =
                        r.answer.content.as_ref().map(|c| c.chars().count().to_string()).unwrap_or_else(|| "—".into());
                    rows.push(vec![
                        r.sample.name.clone(),
                        serde_json::to_value(r.sample.api)
                            .ok()
                            .and_then(|v| v.as_str().map(String::from))
                            .unwrap_or_default(),
                        r.answer.status.to_string(),
                        format!("{} ms", r.answer.latency_ms),
                        r.answer.finish_reason.clone().unwrap_or_else(|| "—".into()),
                        chars,
                        if r.problems.is_empty() { "ok".into() } else { r.problems.join("; ") },
                    ]);
                    if r.problems.is_empty() {
                        continue;
                    }
                    let shown = r.answer.content.as_deref().or(r.answer.raw.as_deref()).unwrap_or("");
                    let d = super::decision::golden_failed(
                        &r.sample.name,
                        &r.problems,
                        shown,
                        r.answer.finish_reason.as_deref(),
                        r.answer.status,
                        r.answer.latency_ms,
                    );
                    diags.push(d);
                    // Keep the failing sample whole so it can be replayed.
                    s.details.push(Detail {
                        title: format!("failing golden sample `{}`", r.sample.name),
                        lang: "json".into(),
                        body: serde_json::to_string_pretty(
                            &json!({"request": r.sample.request, "expect": r.sample.expect, "answer": r.answer}),
                        )
                        .unwrap_or_default(),
                    });
                }
                s.tables.push(Table {
                    title: "golden set against the candidate".into(),
                    columns: ["sample", "api", "HTTP", "latency", "finish reason", "chars", "result"]
                        .map(String::from)
                        .to_vec(),
                    rows,
                });
                let failed = results.iter().filter(|r| !r.problems.is_empty()).count();
                format!("{}/{} passed", results.len() - failed, results.len())
            }
        }
    }
}

/// The paired run written up: a row per prompt with both arms' results,
/// the paired gate's finding (BG301 worse, BG302 undecided), and each
/// prompt only the candidate failed kept whole to replay; returns the note.
fn paired_into(p: &Paired, s: &mut StepReport, diags: &mut Vec<Diagnostic>) -> String {
    let c = p.count();
    let result = |g: Option<&GoldenResult>| match g {
        Some(g) if g.problems.is_empty() => "ok".to_string(),
        Some(g) => g.problems.join("; "),
        None => "—".into(),
    };
    let mut rows = Vec::new();
    for (i, cand) in p.candidate.iter().enumerate() {
        let base = p.baseline.get(i);
        rows.push(vec![cand.sample.name.clone(), result(Some(cand)), result(base)]);
        if !cand.problems.is_empty() && base.is_some_and(|b| b.problems.is_empty()) {
            s.details.push(Detail {
                title: format!("golden sample `{}`: failed by the candidate only", cand.sample.name),
                lang: "json".into(),
                body: serde_json::to_string_pretty(&json!({
                    "request": cand.sample.request,
                    "expect": cand.sample.expect,
                    "candidate": cand.answer,
                    "baseline": base.map(|b| &b.answer),
                }))
                .unwrap_or_default(),
            });
        }
    }
    s.tables.push(Table {
        title: "golden set against both arms (paired)".into(),
        columns: ["sample", "candidate", "baseline"].map(String::from).to_vec(),
        rows,
    });
    diags.extend(c.finding());
    let p_value = c.p_value.map_or_else(|| "—".into(), |p| format!("{p:.4}"));
    format!(
        "paired over {} prompt(s): {} failed by the candidate only, {} by the baseline only (McNemar p = {p_value}): {}",
        c.prompts,
        c.candidate_only,
        c.baseline_only,
        match c.verdict {
            PairedVerdict::Worse => "worse",
            PairedVerdict::Undecided => "undecided",
            PairedVerdict::NotWorse => "not worse",
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_checks() {
        let s: GoldenSample = serde_json::from_str(
            r#"{"name": "j", "api": "openai-chat", "request": {}, "expect": {"json": true, "finishReason": "stop", "minChars": 2, "maxLatencyMs": 100}}"#,
        )
        .unwrap();
        let ok = GoldenAnswer {
            status: 200,
            latency_ms: 5,
            content: Some("{\"ok\": true}".into()),
            finish_reason: Some("stop".into()),
            raw: None,
        };
        assert!(golden_problems(&s, &ok).is_empty());
        let cut = GoldenAnswer {
            content: Some("{\"ok\": tr".into()),
            finish_reason: Some("length".into()),
            latency_ms: 150,
            ..ok
        };
        let p = golden_problems(&s, &cut);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].contains("not valid JSON") && p[1].contains("`length`") && p[2].contains("150 ms"));
    }

    /// The expectations' bounds are inclusive: exactly the minimum or the
    /// maximum characters, exactly the latency limit, pass.
    #[test]
    fn bounds_are_inclusive() {
        let s = GoldenSample {
            name: "b".into(),
            api: GoldenApi::OpenAiChat,
            request: Value::Null,
            expect: GoldenExpect {
                min_chars: Some(3),
                max_chars: Some(3),
                max_latency_ms: Some(100),
                ..Default::default()
            },
        };
        let a =
            GoldenAnswer { status: 200, latency_ms: 100, content: Some("abc".into()), finish_reason: None, raw: None };
        assert!(golden_problems(&s, &a).is_empty());
        let slow = GoldenAnswer { latency_ms: 101, ..a.clone() };
        assert_eq!(golden_problems(&s, &slow), ["took 101 ms, more than 100 ms"]);
        let long = GoldenAnswer { content: Some("abcd".into()), ..a.clone() };
        assert_eq!(golden_problems(&s, &long), ["output has 4 characters, more than 3"]);
    }

    /// The run's count, data and report: a failing sample is counted, shown
    /// in the table, given a finding and kept whole to replay.
    #[test]
    fn a_run_counts_reports_and_keeps_its_failures() {
        let sample = |name: &str| GoldenSample {
            name: name.into(),
            api: GoldenApi::OpenAiChat,
            request: serde_json::json!({"messages": []}),
            expect: GoldenExpect::default(),
        };
        let ok = GoldenAnswer {
            status: 200,
            latency_ms: 7,
            content: Some("hi".into()),
            finish_reason: Some("stop".into()),
            raw: None,
        };
        let bad =
            GoldenAnswer { status: 502, content: None, raw: Some("<html>".into()), finish_reason: None, ..ok.clone() };
        // Two passing and one failing: a count of the wrong kind shows.
        let run = GoldenRun::Ran(vec![
            GoldenResult { sample: sample("good"), answer: ok.clone(), problems: vec![] },
            GoldenResult { sample: sample("broken"), answer: bad, problems: vec!["HTTP 502".into()] },
            GoldenResult { sample: sample("also-good"), answer: ok, problems: vec![] },
        ]);
        assert_eq!(run.failed(), 1);
        assert_eq!((GoldenRun::NotDeclared.failed(), GoldenRun::Error("x".into()).failed()), (0, 0));
        let data = serde_json::to_value(run.data()).unwrap();
        assert_eq!(
            (data["status"].as_str(), data["passed"].as_u64(), data["failed"].as_u64()),
            (Some("ran"), Some(2), Some(1))
        );
        let mut step = crate::report::StepReport::new("canary", "b");
        let mut diags = Vec::new();
        assert_eq!(run.write_into(&mut step, &mut diags), "2/3 passed");
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].evidence[0], "output (6 chars): <html>");
        assert_eq!(step.tables[0].rows[0], ["good", "openai-chat", "200", "7 ms", "stop", "2", "ok"]);
        assert_eq!(step.tables[0].rows[1], ["broken", "openai-chat", "502", "7 ms", "—", "—", "HTTP 502"]);
        assert_eq!(step.details.len(), 1);
        assert_eq!(step.details[0].title, "failing golden sample `broken`");
        assert_eq!(GoldenRun::Error("timeout".into()).write_into(&mut step, &mut diags), "could not run (timeout)");
    }

    /// An embedding passes at or above its cosine threshold (0.99 unless
    /// the line says), fails below it, with another length or no vector;
    /// a label passes only when equal.
    #[test]
    fn embeddings_are_judged_by_cosine_and_labels_by_equality() {
        let judge = |expect: GoldenExpect, content: &str| {
            let s = GoldenSample { name: "e".into(), api: GoldenApi::OpenAiEmbeddings, request: Value::Null, expect };
            let a = GoldenAnswer {
                status: 200,
                latency_ms: 1,
                content: Some(content.into()),
                finish_reason: None,
                raw: None,
            };
            golden_problems(&s, &a)
        };
        let rec =
            |min: Option<f64>| GoldenExpect { embedding: Some(vec![1.0, 0.0]), min_cosine: min, ..Default::default() };
        assert!(judge(rec(None), "[2.0, 0.0]").is_empty(), "scale does not matter");
        // cos = 0.99 exactly passes the default; a little less does not.
        let at = |c: f64| format!("[{c}, {}]", (1.0 - c * c).sqrt());
        assert!(judge(rec(None), &at(0.995)).is_empty());
        let p = judge(rec(None), &at(0.98));
        assert_eq!(p, ["embedding's cosine similarity to the recorded vector is 0.9800, below 0.99"]);
        assert!(judge(rec(Some(0.9)), &at(0.98)).is_empty());
        assert!(judge(rec(None), "[1.0, 0.0, 0.0]")[0].contains("3 dimensions"));
        assert!(judge(rec(None), "[0.0, 0.0]")[0].contains("all zeros"));
        assert_eq!(judge(rec(None), "not a vector"), ["the answer holds no embedding vector"]);
        let label = |l: &str| GoldenExpect { label: Some(l.into()), ..Default::default() };
        assert!(judge(label("positive"), " positive\n").is_empty());
        assert_eq!(judge(label("positive"), "negative"), ["label `negative`, expected `positive`"]);
        assert_eq!(cosine(&[1.0, 1.0], &[1.0, 1.0]).map(|c| (c * 1e9).round()), Some(1e9));
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(crate::util::prop_config(2_000))]

        /// The judgment's result, not only its absence of panics: an answer
        /// passes exactly when every expectation holds (an oracle written
        /// from the expectations, independently of the code).
        #[test]
        fn an_answer_passes_exactly_when_every_expectation_holds(
            status in prop_oneof![200u16..300, 300u16..600],
            content in prop::option::of(prop_oneof!["[ -~]{0,40}", Just("{\"ok\": true}".to_string()), Just("{\"ok\": tr".to_string())]),
            finish in prop::option::of(prop_oneof![Just("stop".to_string()), Just("length".to_string())]),
            json in any::<bool>(),
            want_finish in prop::option::of(Just("stop".to_string())),
            min in prop::option::of(0usize..20),
            max in prop::option::of(0usize..40),
            latency in 0u64..300,
            max_latency in prop::option::of(0u64..300),
        ) {
            let s = GoldenSample { name: "g".into(), api: GoldenApi::OpenAiChat, request: Value::Null, expect: GoldenExpect { json, finish_reason: want_finish.clone(), min_chars: min, max_chars: max, max_latency_ms: max_latency, ..Default::default() } };
            let a = GoldenAnswer { status, latency_ms: latency, content: content.clone(), finish_reason: finish.clone(), raw: None };
            let chars = content.as_deref().map(|c| c.chars().count());
            let oracle = (200..300).contains(&status)
                && content.is_some()
                && (!json || serde_json::from_str::<Value>(content.as_deref().unwrap().trim()).is_ok())
                && want_finish.as_ref().is_none_or(|w| finish.as_ref() == Some(w))
                && min.is_none_or(|m| chars.unwrap() >= m)
                && max.is_none_or(|m| chars.unwrap() <= m)
                && max_latency.is_none_or(|m| latency <= m);
            let problems = golden_problems(&s, &a);
            prop_assert_eq!(problems.is_empty(), oracle, "{:?} for {:?}", problems, a);
        }

        /// A gateway's error page (HTML, any status) is never a passing answer:
        /// it carries no generated text, whatever it says.
        #[test]
        fn a_gateway_error_page_never_passes(status in 200u16..600, title in "[ -~]{0,40}", api in prop_oneof![Just(GoldenApi::OpenAiChat), Just(GoldenApi::OpenAiCompletions), Just(GoldenApi::KserveV2), Just(GoldenApi::OpenAiEmbeddings)]) {
            let page = format!("<html><head><title>{title}</title></head><body><h1>502 Bad Gateway</h1></body></html>");
            let s = GoldenSample { name: "g".into(), api, request: Value::Null, expect: GoldenExpect::default() };
            let a = crate::parse::golden::answer(api, status, 1, &page);
            let problems = golden_problems(&s, &a);
            prop_assert!(problems.iter().any(|p| p.contains("no generated text")), "{:?}", problems);
        }
    }
}
