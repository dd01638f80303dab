//! Human, JSON and Markdown renderings of a [`Report`]. The Markdown form is
//! what PR comments and the job summary show.

use std::fmt::Write as _;

use super::escape::{self, human as human_text, markdown as md, markdown_code as md_code};
use super::{Report, Severity, StepReport, Verdict};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Format {
    Human,
    Json,
    Markdown,
    /// SARIF 2.1.0, for GitHub code scanning
    Sarif,
}

pub fn format_report(r: &Report, fmt: Format, color: bool) -> String {
    match fmt {
        Format::Json => escape::json(&serde_json::to_string_pretty(r).expect("report serializes")).into_owned() + "\n",
        Format::Markdown => markdown(r),
        Format::Sarif => {
            escape::json(&serde_json::to_string_pretty(&super::sarif::sarif(r)).expect("SARIF serializes")).into_owned()
                + "\n"
        }
        Format::Human => match &r.raw_human {
            Some(raw) if r.verdict != Verdict::Error => raw.clone(),
            _ => human(r, color),
        },
    }
}

fn paint(color: bool, code: &str, s: &str) -> String {
    if color {
        format!("\x1b[{code}m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

fn verdict_color(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "1;32",
        Verdict::NotRun => "2",
        Verdict::Inconclusive => "1;33",
        Verdict::Fail | Verdict::Error => "1;31",
    }
}

fn sev_color(s: Severity) -> &'static str {
    match s {
        Severity::Error => "1;31",
        Severity::Warning => "1;33",
        _ => "1;36",
    }
}

pub(crate) fn human(r: &Report, color: bool) -> String {
    let mut o = String::new();
    for s in &r.steps {
        o.push_str(&human_step(s, color));
    }
    let _ =
        writeln!(o, "{}: {}", human_text(&r.command), paint(color, verdict_color(r.verdict), &r.verdict.to_string()));
    o
}

/// One step as `--format human` prints it (`report merge` prints its
/// steps one at a time).
pub(crate) fn human_step(s: &StepReport, color: bool) -> String {
    let mut o = String::new();
    let verdict = paint(color, verdict_color(s.verdict), &format!("{:<12}", s.verdict.to_string()));
    let _ = writeln!(o, "{verdict} {} {}  {}", human_text(&s.step), human_text(&s.target), human_text(&s.summary));
    for d in &s.diagnostics {
        let loc = d.span.as_ref().map(|sp| format!("{}: ", human_text(&sp.to_string()))).unwrap_or_default();
        let sev = paint(color, sev_color(d.severity), &d.severity.to_string());
        let _ = writeln!(o, "  {loc}{sev}[{} {}]: {}", d.code, human_text(&d.name), human_text(&d.message));
        for e in &d.evidence {
            let _ = writeln!(o, "      evidence: {}", human_text(e));
        }
        for h in &d.help {
            let _ = writeln!(o, "      help: {}", human_text(h));
        }
    }
    for t in &s.tables {
        o.push_str(&text_table(t));
    }
    o
}

fn text_table(t: &super::Table) -> String {
    // Widths are measured on what is printed: the escaped cells.
    let columns: Vec<String> = t.columns.iter().map(|c| human_text(c).into_owned()).collect();
    let rows: Vec<Vec<String>> =
        t.rows.iter().map(|r| r.iter().map(|c| human_text(c).into_owned()).collect()).collect();
    let mut widths: Vec<usize> = columns.iter().map(|c| c.chars().count()).collect();
    for row in &rows {
        for (i, c) in row.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
    }
    let mut o = String::new();
    if !t.title.is_empty() {
        let _ = writeln!(o, "  {}", human_text(&t.title));
    }
    let line = |cells: &Vec<String>| {
        let mut l = String::from("   ");
        for (i, c) in cells.iter().enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            let _ = write!(l, " {:<w$}", c, w = w);
        }
        l.trim_end().to_string() + "\n"
    };
    o.push_str(&line(&columns));
    for r in &rows {
        o.push_str(&line(r));
    }
    o
}

fn emoji(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "✅",
        Verdict::NotRun => "⏭️",
        Verdict::Inconclusive => "⚠️",
        Verdict::Fail => "❌",
        Verdict::Error => "💥",
    }
}

pub(crate) fn markdown_step(s: &StepReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "#### {} {} — {} {}\n", emoji(s.verdict), md_code(&s.step), s.verdict, md(&s.target));
    let summary = md(&s.summary);
    if !summary.is_empty() {
        let _ = writeln!(o, "{summary}\n");
    }
    if !s.diagnostics.is_empty() {
        o.push_str("| severity | code | where | finding |\n|---|---|---|---|\n");
        for d in &s.diagnostics {
            let loc = d.span.as_ref().map(|sp| md(&format!("{}:{}", sp.file, sp.line))).unwrap_or_default();
            let mut msg = md(&d.message);
            for e in &d.evidence {
                let _ = write!(msg, "<br>evidence: {}", md(e));
            }
            for h in &d.help {
                let _ = write!(msg, "<br>help: {}", md(h));
            }
            let _ = writeln!(o, "| {} | `{}` {} | {} | {} |", d.severity, d.code, md(&d.name), loc, msg);
        }
        o.push('\n');
    }
    for t in &s.tables {
        markdown_table(&mut o, t);
    }
    // Pictures of the numbers above, Markdown only (GitHub draws Mermaid).
    for c in super::chart::charts(s) {
        o.push_str(&c);
        o.push('\n');
    }
    for d in &s.details {
        let _ = writeln!(
            o,
            "<details><summary>{}</summary>\n\n{}\n\n</details>\n",
            escape::markdown_html(&d.title),
            escape::markdown_fence(&d.lang, &d.body)
        );
    }
    o
}

fn markdown_table(o: &mut String, t: &super::Table) {
    let title = md(&t.title);
    if !title.is_empty() {
        let _ = writeln!(o, "**{title}**\n");
    }
    // A row wider than the header would lose its last cells: widen the header.
    let n = t.rows.iter().map(Vec::len).chain([t.columns.len()]).max().unwrap_or(0);
    if n == 0 {
        return;
    }
    let row = |cells: &[String]| {
        (0..n).map(|i| cells.get(i).map(|c| md(c)).unwrap_or_default()).collect::<Vec<_>>().join(" | ")
    };
    let _ = writeln!(o, "| {} |", row(&t.columns));
    let _ = writeln!(o, "|{}", "---|".repeat(n));
    for r in &t.rows {
        let _ = writeln!(o, "| {} |", row(r));
    }
    o.push('\n');
}

pub(crate) fn markdown(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "### bundlegate {}: {} {}\n", md(&r.command), emoji(r.verdict), r.verdict);
    for s in &r.steps {
        o.push_str(&markdown_step(s));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::{Code, Diagnostic};
    use crate::report::{Report, StepReport, Table};

    fn with_finding(verdict: Verdict, sev: Severity) -> Report {
        let mut r = Report::new("lint");
        let mut s = StepReport::new("lint", "b.yaml");
        s.verdict = verdict;
        s.diagnostics.push(Diagnostic::new(Code::ImageNotPinned, "m").severity(sev));
        r.push(s);
        r
    }

    /// Colour on a terminal: each verdict and severity its own code, and
    /// nothing but the text without colour.
    #[test]
    fn human_colours_by_verdict_and_severity() {
        let codes = [
            (Verdict::Pass, "1;32"),
            (Verdict::NotRun, "2"),
            (Verdict::Inconclusive, "1;33"),
            (Verdict::Fail, "1;31"),
            (Verdict::Error, "1;31"),
        ];
        let code_of = |v: Verdict| codes.iter().find(|(w, _)| *w == v).unwrap().1;
        for (v, code) in codes {
            let r = with_finding(v, Severity::Note);
            let t = human(&r, true);
            assert!(t.starts_with(&format!("\x1b[{code}m{:<12}\x1b[0m", v.to_string())), "{v}: {t:?}");
            // The run's verdict (a run of steps not run is inconclusive).
            let (rv, rcode) = (r.verdict, code_of(r.verdict));
            assert!(t.ends_with(&format!("lint: \x1b[{rcode}m{rv}\x1b[0m\n")), "{v}: {t:?}");
        }
        for (sev, code) in [(Severity::Error, "1;31"), (Severity::Warning, "1;33"), (Severity::Note, "1;36")] {
            let t = human(&with_finding(Verdict::Fail, sev), true);
            assert!(t.contains(&format!("\x1b[{code}m{sev}\x1b[0m[BG001")), "{sev}: {t:?}");
        }
        assert!(!human(&with_finding(Verdict::Fail, Severity::Error), false).contains('\x1b'));
    }

    /// A command's own human text is shown as it is, unless the command
    /// failed to run: then the report says why.
    #[test]
    fn raw_human_text_stands_unless_the_run_errored() {
        let mut r = with_finding(Verdict::Pass, Severity::Note);
        r.raw_human = Some("raw\n".into());
        assert_eq!(format_report(&r, Format::Human, false), "raw\n");
        r.push({
            let mut e = StepReport::new("render", "b.yaml");
            e.verdict = Verdict::Error;
            e
        });
        assert_eq!(r.verdict, Verdict::Error);
        assert_eq!(format_report(&r, Format::Human, false), human(&r, false));
    }

    /// Columns are as wide as their widest printed cell; cells past the
    /// header's columns are printed unpadded.
    #[test]
    fn text_tables_align_on_the_widest_cell() {
        let t = Table {
            title: "t".into(),
            columns: vec!["a".into(), "bb".into()],
            rows: vec![vec!["xyz".into(), "1".into(), "extra".into()], vec!["p".into(), "22222".into()]],
        };
        assert_eq!(text_table(&t), "  t\n    a   bb\n    xyz 1     extra\n    p   22222\n");
    }
}
