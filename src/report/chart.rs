//! Pictures of a step's numbers, for Markdown only: Mermaid `xychart-beta`
//! blocks (GitHub draws them in comments and job summaries) drawn from the
//! step's `data`, so a report read back from JSON draws the same charts.
//! A chart sits beside the step's tables, never instead of them; a chart
//! with no point to draw, or a number that is not finite, is left out
//! rather than written broken. Every text from the input (node names,
//! metrics, releases) goes through [`escape::mermaid`]; the numbers are
//! plain decimals, the only form Mermaid's lexer reads.

use std::fmt::Write as _;

use serde_json::Value;

use super::escape;
use super::StepReport;

/// Most categories on one x axis (nodes, traffic steps, reads): more would
/// not be readable, and a chart must fit well inside one comment part.
const MAX_POINTS: usize = 40;
/// Most series in one chart (releases of a timeline).
const MAX_SERIES: usize = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Bar,
    Line,
}

#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub kind: Kind,
    pub name: String,
    pub values: Vec<f64>,
}

/// One `xychart-beta`: categories along x, one value per category per series.
#[derive(Debug, Clone, Default)]
pub(crate) struct XyChart {
    pub title: String,
    pub x: Vec<String>,
    pub y: String,
    pub series: Vec<Series>,
}

impl XyChart {
    /// The fenced block, or None when there is nothing (or nothing sound)
    /// to draw: no category, no series, a series whose length differs from
    /// the axis, a value that is not finite.
    pub(crate) fn render(&self) -> Option<String> {
        let n = self.x.len();
        if n == 0 || n > MAX_POINTS || self.series.is_empty() || self.series.len() > MAX_SERIES {
            return None;
        }
        let all = || self.series.iter().flat_map(|s| s.values.iter().copied());
        if self.series.iter().any(|s| s.values.len() != n) || !all().all(f64::is_finite) {
            return None;
        }
        let lo = all().fold(0f64, f64::min);
        let hi = all().fold(0f64, f64::max);
        // Room above the highest bar or line; a flat chart gets a unit range.
        let top = if hi > lo { hi + (hi - lo) * 0.1 } else { lo + 1.0 };
        let quoted = |s: &str| format!("\"{}\"", escape::mermaid(s, escape::MERMAID_LABEL_CHARS));
        let mut o = String::from("```mermaid\nxychart-beta\n");
        let _ = writeln!(o, "    title \"{}\"", escape::mermaid(&self.title, escape::MERMAID_TITLE_CHARS));
        // Categories are a band scale: two equal labels (names cut to the
        // same text) would draw as one, so a repeated one is numbered.
        let mut x: Vec<String> = Vec::with_capacity(n);
        for (i, c) in self.x.iter().enumerate() {
            let mut label = escape::mermaid(c, escape::MERMAID_LABEL_CHARS);
            if x.contains(&label) {
                label = format!("{label} ({})", i + 1);
            }
            x.push(label);
        }
        let x: Vec<String> = x.iter().map(|l| format!("\"{l}\"")).collect();
        let _ = writeln!(o, "    x-axis [{}]", x.join(", "));
        let _ = writeln!(o, "    y-axis {} {} --> {}", quoted(&self.y), number(lo), number(top));
        for s in &self.series {
            let kind = match s.kind {
                Kind::Bar => "bar",
                Kind::Line => "line",
            };
            let values: Vec<String> = s.values.iter().map(|v| number(*v)).collect();
            let _ = writeln!(o, "    {kind} {} [{}]", quoted(&s.name), values.join(", "));
        }
        o.push_str("```\n");
        Some(o)
    }
}

/// A finite number as Mermaid's lexer reads one (`[+-]?\d+(\.\d+)?`: no
/// exponent), at most nine decimals and fifteen integer digits.
fn number(v: f64) -> String {
    let v = v.clamp(-1e15, 1e15);
    let t = format!("{v:.9}");
    let t = t.trim_end_matches('0').trim_end_matches('.');
    if t == "-0" || t.is_empty() {
        "0".into()
    } else {
        t.to_string()
    }
}

/// A finite number from the data (JSON has no NaN; a string is not one).
fn num(v: &Value) -> Option<f64> {
    v.as_f64().filter(|x| x.is_finite())
}

/// The step's charts as Markdown blocks (each ending in a line feed), in
/// the order they are shown.
pub(crate) fn charts(s: &StepReport) -> Vec<String> {
    let drawn = match s.step.as_str() {
        "preflight" => vec![capacity(&s.data)],
        "canary" => gates(&s.data),
        "rollout" => vec![pods_over_time(&s.data)],
        "downtime" => vec![probes_over_time(&s.data)],
        _ => Vec::new(),
    };
    drawn.into_iter().flatten().filter_map(|c| c.render()).collect()
}

/// Preflight: new pods that fit on each eligible node, on all of them, and
/// after the rollout frees old pods, against the pods the rollout needs at
/// once (the line).
fn capacity(d: &Value) -> Option<XyChart> {
    let need = num(&d["rollout"]["newPods"])?;
    let mut x = Vec::new();
    let mut fits = Vec::new();
    for n in d["capacityByNode"].as_array().into_iter().flatten().take(MAX_POINTS - 2) {
        x.push(n["node"].as_str().unwrap_or("?").to_string());
        fits.push(num(&n["fits"])?);
    }
    x.push("all eligible nodes".into());
    fits.push(num(&d["newPodCapacity"])?);
    if let Some(after) = num(&d["newPodCapacityAfterFreeing"]).filter(|a| Some(*a) != fits.last().copied()) {
        x.push("after freeing old pods".into());
        fits.push(after);
    }
    let n = x.len();
    Some(XyChart {
        title: "preflight: new pods that fit (bars) vs the rollout's need (line)".into(),
        x,
        y: "new pods".into(),
        series: vec![
            Series { kind: Kind::Bar, name: "new pods that fit".into(), values: fits },
            Series { kind: Kind::Line, name: "rollout needs".into(), values: vec![need; n] },
        ],
    })
}

/// One gate's numbers in one judgment: candidate, baseline, and the limit
/// the candidate was held to (None: no limit applied).
type GatePoint = (f64, f64, Option<f64>);

fn gate_point(g: &Value) -> Option<GatePoint> {
    // A traffic step's point names its limit; a judgment's gate lists its
    // checks: the one the candidate broke, else the first.
    let limit = match (&g["limit"], g["checks"].as_array()) {
        (Value::Null, Some(c)) => {
            c.iter().find(|c| c["exceeded"] == Value::Bool(true)).or(c.first()).and_then(|c| num(&c["limit"]))
        }
        (v, _) => num(v),
    };
    Some((num(&g["candidate"])?, num(&g["baseline"])?, limit))
}

/// Canary: per gate, candidate (bars) and baseline (line) at each judged
/// traffic step, or in the one window judged, with the limit drawn when
/// every point has one.
fn gates(d: &Value) -> Vec<Option<XyChart>> {
    // metric → (x labels, points), in the order the gates are declared.
    let mut per: Vec<(String, Vec<String>, Vec<GatePoint>)> = Vec::new();
    let mut add = |metric: &str, x: String, p: GatePoint| {
        let i = match per.iter().position(|(m, ..)| m == metric) {
            Some(i) => i,
            None => {
                per.push((metric.to_string(), Vec::new(), Vec::new()));
                per.len() - 1
            }
        };
        per[i].1.push(x);
        per[i].2.push(p);
    };
    match d["steps"].as_array() {
        Some(steps) => {
            for st in steps {
                let pct = st["percent"].as_u64().map(|p| format!("{p}%")).unwrap_or_else(|| "?".into());
                for g in st["gates"].as_array().into_iter().flatten() {
                    if let (Some(m), Some(p)) = (g["metric"].as_str(), gate_point(g)) {
                        add(m, format!("step {pct}"), p);
                    }
                }
            }
        }
        None => {
            let w = d["window"].as_str().unwrap_or("window");
            for g in d["gates"].as_array().into_iter().flatten() {
                if let (Some(m), Some(p)) = (g["metric"].as_str(), gate_point(g)) {
                    add(m, format!("last {w}"), p);
                }
            }
        }
    }
    per.into_iter()
        .map(|(metric, x, points)| {
            let mut series = vec![
                Series { kind: Kind::Bar, name: "candidate".into(), values: points.iter().map(|p| p.0).collect() },
                Series { kind: Kind::Line, name: "baseline".into(), values: points.iter().map(|p| p.1).collect() },
            ];
            let limits: Option<Vec<f64>> = points.iter().map(|p| p.2).collect();
            let mut title = format!("canary gate {metric}: candidate (bars) vs baseline (line)");
            if let Some(l) = limits {
                series.push(Series { kind: Kind::Line, name: "limit".into(), values: l });
                title.push_str(", limit (second line)");
            }
            Some(XyChart { title, x, y: metric, series })
        })
        .collect()
}

/// Seconds as an axis label.
fn at(s: f64) -> String {
    format!("{s:.1}s")
}

/// Watch: pods of each release over the reads (this release first), the
/// release's serving pods as the bars.
fn pods_over_time(d: &Value) -> Option<XyChart> {
    let reads = d["timeline"].as_array()?;
    let this = d["releaseDigest"].as_str().unwrap_or("");
    let mut releases: Vec<&str> = Vec::new();
    for r in reads {
        for k in r["pods"].as_object().into_iter().flatten().map(|(k, _)| k.as_str()) {
            if !releases.contains(&k) {
                releases.push(k);
            }
        }
    }
    releases.sort_by_key(|r| (*r != this, *r));
    releases.truncate(MAX_SERIES - 1);
    let name = |r: &str| {
        let short: String = r.trim_start_matches("sha256:").chars().take(12).collect();
        if r == this {
            format!("pods of this release {short}")
        } else {
            format!("pods of release {short}")
        }
    };
    let mut series = vec![Series {
        kind: Kind::Bar,
        name: "serving pods of this release".into(),
        values: reads.iter().map(|r| num(&r["serving"])).collect::<Option<_>>()?,
    }];
    for rel in releases {
        let values = reads.iter().map(|r| num(&r["pods"][rel]).or(Some(0.0))).collect::<Option<_>>()?;
        series.push(Series { kind: Kind::Line, name: name(rel), values });
    }
    Some(XyChart {
        title: "watch: serving pods of this release (bars), pods per release (lines) over time".into(),
        x: reads.iter().map(|r| num(&r["atSeconds"]).map(at)).collect::<Option<_>>()?,
        y: "pods".into(),
        series,
    })
}

/// Watch: failed (bars) and answered (line) health probes over time.
fn probes_over_time(d: &Value) -> Option<XyChart> {
    let spans = d["timeline"].as_array()?;
    let x = spans.iter().map(|b| Some(format!("{}-{}", at(num(&b["fromSeconds"])?), at(num(&b["toSeconds"])?))));
    Some(XyChart {
        title: "downtime: failed health probes (bars), answered ones (line) over time".into(),
        x: x.collect::<Option<_>>()?,
        y: "probes".into(),
        series: vec![
            Series {
                kind: Kind::Bar,
                name: "failed".into(),
                values: spans.iter().map(|b| num(&b["fail"])).collect::<Option<_>>()?,
            },
            Series {
                kind: Kind::Line,
                name: "answered".into(),
                values: spans.iter().map(|b| num(&b["ok"])).collect::<Option<_>>()?,
            },
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy as _;
    use serde_json::json;

    fn chart(label: &str) -> XyChart {
        XyChart {
            title: label.into(),
            x: vec![label.into(), "b".into()],
            y: label.into(),
            series: vec![
                Series { kind: Kind::Bar, name: label.into(), values: vec![1.5, 0.000_012] },
                Series { kind: Kind::Line, name: "n".into(), values: vec![1e20, -3.0] },
            ],
        }
    }

    /// What a label may hold once escaped: nothing that ends a Mermaid
    /// string or statement, starts a directive, comment or entity, or
    /// touches the Markdown fence.
    fn inert(label: &str) -> bool {
        label.chars().count() <= escape::MERMAID_TITLE_CHARS
            && !label.chars().any(|c| {
                escape::is_control(c)
                    || matches!(
                        c,
                        '"' | '%'
                            | '`'
                            | '['
                            | ']'
                            | '{'
                            | '}'
                            | ';'
                            | '#'
                            | '<'
                            | '>'
                            | '&'
                            | '\\'
                            | '\n'
                            | '\r'
                            | '~'
                            | '|'
                    )
            })
    }

    /// Every line of a rendered block, checked against the statements we
    /// write: the labels are the quoted strings, each inert.
    fn check_block(b: &str, series: usize) -> Result<(), String> {
        let body = b.strip_prefix("```mermaid\nxychart-beta\n").and_then(|r| r.strip_suffix("```\n")).ok_or("fence")?;
        if b.matches("```").count() != 2 {
            return Err("a third fence".into());
        }
        let lines: Vec<&str> = body.lines().collect();
        if lines.len() != 3 + series {
            return Err(format!("{} lines", lines.len()));
        }
        for l in lines {
            let quoted: Vec<&str> = l.split('"').collect();
            // An odd number of pieces: every quote opened is closed.
            if quoted.len().is_multiple_of(2) {
                return Err(format!("unbalanced quotes in {l:?}"));
            }
            for (i, piece) in quoted.iter().enumerate() {
                if i % 2 == 1 && !inert(piece) {
                    return Err(format!("label {piece:?}"));
                }
                // Outside the quotes: only our own syntax and numbers.
                if i % 2 == 0 && !piece.chars().all(|c| c.is_ascii_alphanumeric() || " -[],.>".contains(c)) {
                    return Err(format!("outside a label: {piece:?} in {l:?}"));
                }
            }
        }
        Ok(())
    }

    #[test]
    fn hostile_labels_stay_inside_one_label() {
        let long = "é".repeat(10_000);
        for label in [
            "a\"b",
            "```\nflowchart LR\nA-->B",
            "%%{init: {'theme':'dark'}}%%",
            "x\"]; line \"y\" [1]",
            "a\nbar \"x\" [9]",
            "\u{202e}evil\u{1b}[2J\u{0}",
            "#quot; &lt; <b>hi</b> \\ ~~~",
            "ü 😀 名前 ＂ok＂",
            long.as_str(),
            "",
        ] {
            let b = chart(label).render().expect("finite numbers draw");
            check_block(&b, 2).unwrap_or_else(|e| panic!("{label:?}: {e}\n{b}"));
        }
        let label = |s: &str| escape::mermaid(s, escape::MERMAID_LABEL_CHARS);
        assert_eq!(label("%%{init}%%"), "％％｛init｝％％");
        assert_eq!(label("  a\n\tb  "), "a b");
        assert_eq!(label("gpu-b (node) é"), "gpu-b (node) é");
        let cut = label(&long);
        assert_eq!((cut.chars().count(), cut.ends_with('…')), (escape::MERMAID_LABEL_CHARS, true));
        assert_eq!(escape::mermaid("abc", 2), "a…");
        // The title is longer, bounded too; every other label at most 48.
        let b = chart(&long).render().unwrap();
        let title = b.lines().nth(2).unwrap();
        assert_eq!(title.chars().count(), "    title \"\"".len() + escape::MERMAID_TITLE_CHARS, "{title}");
        assert!(
            b.lines().skip(3).all(|l| l
                .split('"')
                .skip(1)
                .step_by(2)
                .all(|q| q.chars().count() <= escape::MERMAID_LABEL_CHARS)),
            "{b}"
        );
    }

    proptest::proptest! {
        #![proptest_config(crate::util::prop_config(2_000))]

        /// Any text, hostile pieces mixed in: one label, inert, bounded.
        #[test]
        fn any_label_stays_one_inert_label(parts in proptest::collection::vec(proptest::prop_oneof![
            3 => proptest::sample::select(&["\"", "`", "```", "%%", "%%{init: {}}%%", "]", "[", ";", "\n", "\r\n", "#", "&", "<", "{", "}", "\\", " ", "é", "😀", "\u{202e}", "\u{2028}", "\u{85}", "\u{200b}", "~~~"][..]).prop_map(String::from),
            2 => "[a-z0-9 ]{0,8}",
            1 => proptest::arbitrary::any::<String>(),
        ], 0..12)) {
            let label = parts.concat();
            let b = chart(&label).render().expect("finite numbers draw");
            proptest::prop_assert!(check_block(&b, 2).is_ok(), "{:?}: {:?}\n{}", label, check_block(&b, 2), b);
        }
    }

    #[test]
    fn numbers_are_plain_decimals_and_not_finite_draws_nothing() {
        assert_eq!(number(1.5), "1.5");
        assert_eq!(number(0.000_012), "0.000012");
        assert_eq!(number(-0.0), "0");
        assert_eq!(number(1e20), "1000000000000000");
        assert_eq!(number(-3.0), "-3");
        let mut c = chart("t");
        c.series[0].values[0] = f64::NAN;
        assert!(c.render().is_none());
        let mut c = chart("t");
        c.series[1].values.pop();
        assert!(c.render().is_none(), "a series shorter than the axis");
        assert!(XyChart { x: vec![], ..chart("t") }.render().is_none());
        assert!(XyChart { series: vec![], ..chart("t") }.render().is_none());
        let b = chart("t").render().unwrap();
        assert!(b.contains("    y-axis \"t\" -3 --> 1000000000000000\n"), "{b}");
    }

    fn step(name: &str, data: Value) -> StepReport {
        let mut s = StepReport::new(name, "b");
        s.data = data;
        s
    }

    #[test]
    fn each_step_draws_from_its_data_and_nothing_without_it() {
        let pre = step(
            "preflight",
            json!({"rollout": {"newPods": 1}, "capacityByNode": [{"node": "gpu-b", "fits": 1}, {"node": "gpu-a", "fits": 0}], "newPodCapacity": 1, "newPodCapacityAfterFreeing": 2}),
        );
        let c = charts(&pre);
        assert_eq!(c.len(), 1);
        assert!(
            c[0].contains("x-axis [\"gpu-b\", \"gpu-a\", \"all eligible nodes\", \"after freeing old pods\"]"),
            "{}",
            c[0]
        );
        assert!(
            c[0].contains("bar \"new pods that fit\" [1, 0, 1, 2]\n    line \"rollout needs\" [1, 1, 1, 1]\n"),
            "{}",
            c[0]
        );
        // No eligible node: the total still stands against the need.
        let none = step(
            "preflight",
            json!({"rollout": {"newPods": 2}, "capacityByNode": [], "newPodCapacity": 0, "newPodCapacityAfterFreeing": 0}),
        );
        assert!(charts(&none)[0].contains("bar \"new pods that fit\" [0]\n"));

        let canary = step(
            "canary",
            json!({"steps": [
                {"percent": 10, "gates": [{"metric": "error_rate", "candidate": 0.01, "baseline": 0.008, "limit": 0.02}, {"metric": "p95", "candidate": 1.2, "baseline": 1.0, "limit": null}]},
                {"percent": 50, "gates": []},
                {"percent": 100, "gates": [{"metric": "error_rate", "candidate": 0.03, "baseline": 0.009, "limit": 0.02}]}
            ]}),
        );
        let c = charts(&canary);
        assert_eq!(c.len(), 2, "{c:?}");
        assert!(c[0].contains("x-axis [\"step 10％\", \"step 100％\"]"), "{}", c[0]);
        assert!(c[0].contains("bar \"candidate\" [0.01, 0.03]\n    line \"baseline\" [0.008, 0.009]\n    line \"limit\" [0.02, 0.02]\n"), "{}", c[0]);
        assert!(!c[1].contains("limit\" ["), "no limit, none drawn: {}", c[1]);
        // One window judged: the gate's checks give the limit it broke.
        let one = step(
            "canary",
            json!({"window": "10m", "gates": [{"metric": "error_rate", "candidate": 0.05, "baseline": 0.01, "checks": [{"limit": 0.5, "exceeded": false}, {"limit": 0.02, "exceeded": true}]}]}),
        );
        assert!(charts(&one)[0].contains("line \"limit\" [0.02]"), "{:?}", charts(&one));
        // A gate without data on one arm has no point.
        assert!(
            charts(&step("canary", json!({"gates": [{"metric": "m", "candidate": null, "baseline": 1}]}))).is_empty()
        );

        let rollout = step(
            "rollout",
            json!({"releaseDigest": "sha256:new", "timeline": [
                {"atSeconds": 0.0, "serving": 0, "pods": {"sha256:old": 1}},
                {"atSeconds": 4.2, "serving": 1, "pods": {"sha256:old": 1, "sha256:new": 1}},
                {"atSeconds": 9.0, "serving": 1, "pods": {"sha256:new": 1}}
            ]}),
        );
        let c = charts(&rollout);
        assert!(c[0].contains("x-axis [\"0.0s\", \"4.2s\", \"9.0s\"]"), "{}", c[0]);
        assert!(c[0].contains("bar \"serving pods of this release\" [0, 1, 1]\n    line \"pods of this release new\" [0, 1, 1]\n    line \"pods of release old\" [1, 1, 0]\n"), "{}", c[0]);
        let down = step("downtime", json!({"timeline": [{"fromSeconds": 0.0, "toSeconds": 2.0, "ok": 3, "fail": 1}]}));
        assert!(charts(&down)[0].contains("bar \"failed\" [1]\n    line \"answered\" [3]\n"), "{:?}", charts(&down));

        for name in ["preflight", "canary", "rollout", "downtime", "lint"] {
            assert!(charts(&step(name, Value::Null)).is_empty(), "{name}");
        }
        assert!(charts(&step("rollout", json!({"timeline": []}))).is_empty());
    }
}
