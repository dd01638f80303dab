//! Human, JSON and Markdown renderings of a [`Report`]. The Markdown form is
//! what PR comments and the job summary show.

use std::fmt::Write as _;

use super::{Report, Severity, StepReport, Verdict};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
    Markdown,
}

pub fn render(r: &Report, fmt: Format, color: bool) -> String {
    match fmt {
        Format::Json => serde_json::to_string_pretty(r).expect("report serializes") + "\n",
        Format::Markdown => markdown(r),
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
        let _ = writeln!(o, "{} {} {}  {}", paint(color, verdict_color(s.verdict), &format!("{:<12}", s.verdict.to_string())), s.step, s.target, s.summary);
        for d in &s.diagnostics {
            let loc = d.span.as_ref().map(|sp| format!("{sp}: ")).unwrap_or_default();
            let _ = writeln!(o, "  {}{}[{} {}]: {}", loc, paint(color, sev_color(d.severity), &d.severity.to_string()), d.code, d.name, d.message);
            for e in &d.evidence {
                let _ = writeln!(o, "      evidence: {e}");
            }
            for h in &d.help {
                let _ = writeln!(o, "      help: {h}");
            }
        }
        for t in &s.tables {
            o.push_str(&text_table(t));
        }
    }
    let _ = writeln!(o, "{}: {}", r.command, paint(color, verdict_color(r.verdict), &r.verdict.to_string()));
    o
}

fn text_table(t: &super::Table) -> String {
    let mut widths: Vec<usize> = t.columns.iter().map(|c| c.chars().count()).collect();
    for row in &t.rows {
        for (i, c) in row.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
    }
    let mut o = String::new();
    if !t.title.is_empty() {
        let _ = writeln!(o, "  {}", t.title);
    }
    let line = |cells: &Vec<String>| {
        let mut l = String::from("   ");
        for (i, c) in cells.iter().enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            let _ = write!(l, " {:<w$}", c, w = w);
        }
        l.trim_end().to_string() + "\n"
    };
    o.push_str(&line(&t.columns));
    for r in &t.rows {
        o.push_str(&line(r));
    }
    o
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ").replace('<', "&lt;").replace('>', "&gt;")
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
    let _ = writeln!(o, "#### {} `{}` — {} {}\n", emoji(s.verdict), s.step, s.verdict, md_escape(&s.target));
    if !s.summary.is_empty() {
        let _ = writeln!(o, "{}\n", md_escape(&s.summary));
    }
    if !s.diagnostics.is_empty() {
        o.push_str("| severity | code | where | finding |\n|---|---|---|---|\n");
        for d in &s.diagnostics {
            let loc = d.span.as_ref().map(|sp| format!("`{}:{}`", sp.file, sp.line)).unwrap_or_default();
            let mut msg = md_escape(&d.message);
            for e in &d.evidence {
                let _ = write!(msg, "<br>evidence: {}", md_escape(e));
            }
            for h in &d.help {
                let _ = write!(msg, "<br>help: {}", md_escape(h));
            }
            let _ = writeln!(o, "| {} | `{}` {} | {} | {} |", d.severity, d.code, d.name, loc, msg);
        }
        o.push('\n');
    }
    for t in &s.tables {
        if !t.title.is_empty() {
            let _ = writeln!(o, "**{}**\n", md_escape(&t.title));
        }
        let _ = writeln!(o, "| {} |", t.columns.iter().map(|c| md_escape(c)).collect::<Vec<_>>().join(" | "));
        let _ = writeln!(o, "|{}", "---|".repeat(t.columns.len()));
        for r in &t.rows {
            let _ = writeln!(o, "| {} |", r.iter().map(|c| md_escape(c)).collect::<Vec<_>>().join(" | "));
        }
        o.push('\n');
    }
    for d in &s.details {
        let fence = if d.body.contains("```") { "~~~~" } else { "```" };
        let _ = writeln!(o, "<details><summary>{}</summary>\n\n{fence}{}\n{}\n{fence}\n\n</details>\n", md_escape(&d.title), d.lang, d.body.trim_end());
    }
    o
}

pub(crate) fn markdown(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "### bundlegate {}: {} {}\n", r.command, emoji(r.verdict), r.verdict);
    for s in &r.steps {
        o.push_str(&markdown_step(s));
    }
    o
}
