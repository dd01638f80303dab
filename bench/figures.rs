//! The benchmark figures in docs/ (docs/performance.md and three others),
//! written from one file:
//! bench/results/latest.json (bench/run writes it, bench/collect.py says the
//! fields). Each document holds its figures between a begin marker naming the
//! block and `<!-- bench:end -->`; everything between is this module's output
//! and nothing else. Used by bench/report.rs (`cargo bench --bench report --
//! --write`, which bench/run calls) and by tests/it/bench_figures.rs, which
//! fails when a block differs from what the committed file gives.

use serde_json::Value;

/// The results file, relative to the repository root.
pub const RESULTS: &str = "bench/results/latest.json";

/// Each block: the document, the block's name, the bench sections it shows
/// (none named: all of them, with the run's tree).
pub const BLOCKS: &[(&str, &str, &[&str])] = &[
    ("docs/performance.md", "performance", &[]),
    ("docs/argocd.md", "argocd", &["cmp"]),
    ("docs/verify-on-start.md", "pod-verify", &["podverify"]),
    ("docs/canary.md", "canary", &["canary"]),
];

const END: &str = "<!-- bench:end -->";

fn begin(name: &str) -> String {
    format!("<!-- bench:begin {name}: written from {RESULTS} by `cargo bench --bench report -- --write` (bench/run runs it); do not edit by hand -->")
}

/// `doc` with its block `name` replaced by the figures of `sections` in
/// `results`; an error when the document has no such block or the file lacks a field.
pub fn render(doc: &str, name: &str, sections: &[&str], results: &Value) -> Result<String, String> {
    let body = block(results, sections)?;
    let prefix = format!("<!-- bench:begin {name}:");
    let start = doc.find(&prefix).ok_or_else(|| format!("no `{prefix}` marker"))?;
    let end = doc[start..].find(END).ok_or_else(|| format!("block {name}: no `{END}` after its begin marker"))? + start;
    if doc[end + END.len()..].contains(&prefix) {
        return Err(format!("block {name} appears twice"));
    }
    Ok(format!("{}{}\n{body}{END}{}", &doc[..start], begin(name), &doc[end + END.len()..]))
}

fn field<'a>(v: &'a Value, key: &str) -> Result<&'a Value, String> {
    v.get(key).ok_or_else(|| format!("{RESULTS}: no `{key}` in {v}"))
}

fn text<'a>(v: &'a Value, key: &str) -> Result<&'a str, String> {
    field(v, key)?.as_str().ok_or_else(|| format!("{RESULTS}: `{key}` is not a string in {v}"))
}

fn number(v: &Value, key: &str) -> Result<f64, String> {
    field(v, key)?.as_f64().ok_or_else(|| format!("{RESULTS}: `{key}` is not a number in {v}"))
}

/// `v` with `n` significant digits (at least; no exponent).
fn sig(v: f64, n: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (n - 1 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

/// A figure with its unit; times in s, ms or µs, three significant digits.
fn figure(value: f64, unit: &str) -> String {
    match unit {
        "s" if value >= 1.0 => format!("{} s", sig(value, 3)),
        "s" if value >= 1e-3 => format!("{} ms", sig(value * 1e3, 3)),
        "s" => format!("{} µs", sig(value * 1e6, 3)),
        other => format!("{} {other}", sig(value, 3)),
    }
}

/// A table cell: no line breaks, `|` escaped.
fn cell(s: &str) -> String {
    s.replace('\n', " ").replace('|', "\\|")
}

fn of_sections<'a>(list: &'a Value, key: &str, sections: &[&str]) -> Result<Vec<&'a Value>, String> {
    let all = field(list, key)?.as_array().ok_or_else(|| format!("{RESULTS}: `{key}` is not a list"))?;
    let mut out = Vec::new();
    for item in all {
        if sections.is_empty() || sections.contains(&text(item, "section").or_else(|_| text(item, "name"))?) {
            out.push(item);
        }
    }
    Ok(out)
}

/// The run: when, where, which mode, which commit.
fn run_line(r: &Value, with_tree: bool) -> Result<String, String> {
    let mut line = format!("Latest `bench/run` ({RESULTS}): {}.", when_where(r)?);
    if with_tree {
        let t = field(r, "tree")?;
        let mib = number(t, "bytes")? / 1_048_576.0;
        line += &format!(" Verify tree: {}, {} objects, {mib:.0} MiB.", text(t, "description")?, number(t, "objects")?);
    }
    Ok(line + "\n")
}

/// When, on what machine, in which mode and at which commit a run was
/// made (the whole run's fields, or a section's own `run`).
fn when_where(r: &Value) -> Result<String, String> {
    let date = text(r, "date")?;
    let m = field(r, "machine")?;
    let mode = match text(r, "mode")? {
        "small" => "small mode (`BENCH_SMALL=1`, 10× smaller trees)",
        _ => "full mode",
    };
    let commit = text(r, "commit")?;
    let dirty = if field(r, "uncommittedChanges")?.as_bool() == Some(true) { " plus uncommitted changes" } else { "" };
    Ok(format!(
        "{} {} UTC, {mode}, {} cores ({}), {} GiB RAM, load average {} at the end; commit {}{dirty}",
        date.get(..10).unwrap_or(date),
        date.get(11..16).unwrap_or(""),
        number(m, "cores")?,
        text(m, "cpu")?,
        number(m, "memoryGiB")?,
        number(m, "loadAverageAtEnd")?,
        commit.get(..7).unwrap_or(commit),
    ))
}

/// Sections of the block measured by a run of their own (`BENCH_ONLY`),
/// merged into the results file: when and how each was.
fn measured_alone(r: &Value, sections: &[&str]) -> Result<String, String> {
    let mut out = String::new();
    for s in of_sections(r, "sections", sections)? {
        if let Some(run) = s.get("run") {
            let name = text(s, "name")?;
            out += &format!(
                "\nSection `{name}` measured in a run of its own (`BENCH_ONLY={name} bash bench/run`), not the run above: {}.\n",
                when_where(run)?
            );
        }
    }
    Ok(out)
}

/// Sections of the block that were not measured, and why.
fn unmeasured(r: &Value, sections: &[&str]) -> Result<String, String> {
    let mut out = Vec::new();
    for s in of_sections(r, "sections", sections)? {
        let status = text(s, "status")?;
        if status != "measured" {
            out.push(format!("`{}` {status} ({})", text(s, "name")?, text(s, "reason")?));
        }
    }
    Ok(if out.is_empty() {
        String::new()
    } else {
        format!("\nSections left out or not complete in this run: {}.\n", out.join(", "))
    })
}

fn row(r: &Value, all: &[Value]) -> Result<String, String> {
    let name = text(r, "name")?;
    let unit = text(r, "unit")?;
    let status = text(r, "status")?;
    let dash = "—".to_string();
    let measured = r.get("figure").and_then(Value::as_f64);
    let mut fig = match measured {
        Some(v) => figure(v, unit),
        None => format!("not measured: {}", text(r, "reason")?),
    };
    if let Some(budget) = r.get("budget").and_then(Value::as_str) {
        match status {
            "ok" => fig += &format!(" (within the {budget} budget)"),
            "over budget" => fig += &format!(", **over the {budget} budget**"),
            _ => {}
        }
    }
    let stat = r.get("statistic").and_then(Value::as_str).map_or(dash.clone(), str::to_string);
    let base = match r.get("baseline").and_then(Value::as_str) {
        None => "(baseline)".to_string(),
        Some(b) => {
            let other = all.iter().find(|o| o.get("name").and_then(Value::as_str) == Some(b));
            match other.and_then(|o| o.get("figure")).and_then(Value::as_f64) {
                Some(v) => format!("{b}, {}", figure(v, unit)),
                None => b.to_string(),
            }
        }
    };
    let ratio = measured.and(r.get("ratio").and_then(Value::as_f64));
    let ratio = ratio.map_or(dash.clone(), |v| if v < 1e-3 { format!("{v:.1e}×") } else { format!("{}×", sig(v, 2)) });
    let rss = r.get("peakRssKiB").and_then(Value::as_f64).map_or(dash, |k| format!("{:.1} MiB", k / 1024.0));
    Ok(format!("| {} | {} | {stat} | {} | {ratio} | {rss} |\n", cell(name), cell(&fig), cell(&base)))
}

/// The text of one block (without its markers).
fn block(r: &Value, sections: &[&str]) -> Result<String, String> {
    let mut out = run_line(r, sections.is_empty())?;
    out += &measured_alone(r, sections)?;
    out += &unmeasured(r, sections)?;
    let all = field(r, "rows")?.as_array().ok_or_else(|| format!("{RESULTS}: `rows` is not a list"))?;
    let rows = of_sections(r, "rows", sections)?;
    if !rows.is_empty() {
        out += "\n| measurement | figure | statistic | compared with | ratio | peak RSS |\n|---|---|---|---|---|---|\n";
        for x in rows {
            out += &row(x, all)?;
        }
    }
    let notes = of_sections(r, "notes", sections)?;
    if !notes.is_empty() {
        out += "\n";
        for n in notes {
            out += &format!("- {}\n", text(n, "text")?);
        }
    }
    Ok(out)
}
