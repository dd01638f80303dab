//! Properties of the renderers over hostile text (issue #27, class 4): any
//! string in any field a renderer prints comes back as the same visible text
//! and nothing else. Markdown is rendered back with a CommonMark parser
//! (GitHub's extensions on) and read as events; human output is read byte by
//! byte. The generators and checkers are shared with the revert PR body's
//! property (`app::revert`).

use std::collections::BTreeSet;

use proptest::prelude::*;
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag};

use super::escape::is_control;
use super::format::{self, Format};
use super::redact::redact;
use super::{Detail, Diagnostic, Report, StepReport, Table};
use crate::diag::Span;

/// Pieces that mean something to Markdown, GitHub or a terminal: the
/// entries of the fuzz dictionary, so the fuzzer and these properties try
/// the same things. Credentials among them (` http://robot:pw~SECRET@…`):
/// the escapers cut them out before escaping, or the output layer would no
/// longer see them (spaces around: redaction matches a URL from a word
/// boundary).
fn hostile_pieces() -> Vec<String> {
    include_str!("../../fuzz/markdown.dict").lines().filter(|l| l.starts_with('"')).map(dict_entry).collect()
}

/// One libFuzzer dictionary entry: `"…"` with `\\`, `\"` and `\xNN` escapes.
fn dict_entry(line: &str) -> String {
    let inner = line.trim_end().strip_prefix('"').and_then(|l| l.strip_suffix('"')).expect("a quoted entry");
    let (mut bytes, b) = (Vec::new(), inner.as_bytes());
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'\\', Some(b'x')) => {
                bytes.push(u8::from_str_radix(&inner[i + 2..i + 4], 16).expect("\\xNN"));
                i += 4;
            }
            (b'\\', Some(&c)) => {
                bytes.push(c);
                i += 2;
            }
            (c, _) => {
                bytes.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(bytes).expect("entries are UTF-8")
}

/// A string built from hostile pieces and arbitrary characters.
pub(crate) fn hostile() -> impl Strategy<Value = String> {
    let piece = prop_oneof![4 => proptest::sample::select(hostile_pieces()), 1 => any::<char>().prop_map(String::from)];
    proptest::collection::vec(piece, 0..8).prop_map(|v| v.concat())
}

fn diagnostic() -> impl Strategy<Value = Diagnostic> {
    (
        hostile(),
        proptest::collection::vec(hostile(), 0..3),
        proptest::collection::vec(hostile(), 0..3),
        proptest::option::of((hostile(), 1usize..999)),
    )
        .prop_map(|(message, evidence, help, span)| {
            // Any code: the renderers print every code alike.
            let mut d = Diagnostic::new(crate::diag::Code::ALL[0], message);
            d.evidence = evidence;
            d.help = help;
            d.span = span.map(|(file, line)| Span { file, line, column: 1 });
            d
        })
}

fn table() -> impl Strategy<Value = Table> {
    (hostile(), 1usize..4).prop_flat_map(|(title, n)| {
        (
            proptest::collection::vec(hostile(), n),
            proptest::collection::vec(proptest::collection::vec(hostile(), n), 0..3),
        )
            .prop_map(move |(columns, rows)| Table { title: title.clone(), columns, rows })
    })
}

fn step() -> impl Strategy<Value = StepReport> {
    (
        proptest::sample::select(&["lint", "verify", "audit", "preflight"][..]),
        hostile(),
        hostile(),
        proptest::collection::vec(diagnostic(), 0..3),
        proptest::collection::vec(table(), 0..2),
        proptest::option::of((hostile(), hostile())),
        hostile(),
    )
        .prop_map(|(name, target, summary, diagnostics, tables, detail, data)| {
            let mut s = StepReport::new(name, target);
            s.summary = summary;
            s.diagnostics = diagnostics;
            s.verdict = s.verdict_from_diagnostics();
            s.tables = tables;
            s.details =
                detail.map(|(title, body)| vec![Detail { title, lang: "diff".into(), body }]).unwrap_or_default();
            s.data = serde_json::json!({ "note": data });
            s
        })
}

pub(crate) fn report() -> impl Strategy<Value = Report> {
    proptest::collection::vec(step(), 1..3).prop_map(|steps| {
        let mut r = Report::new("lint");
        for s in steps {
            r.push(s);
        }
        r
    })
}

// ---- Markdown -------------------------------------------------------------

/// What a reader sees of `text` in rendered Markdown: control characters as a
/// visible escape, line breaks and tabs as the space HTML shows them as, runs
/// of spaces collapsed, the zero-width breaks (which keep GitHub from linking
/// or mentioning) invisible.
pub(crate) fn md_visible(text: &str) -> String {
    let mut o = String::new();
    for c in text.chars() {
        match c {
            '\n' | '\r' | '\t' => o.push(' '),
            '\u{200b}' => {}
            c if is_control(c) => o.push_str(&shown(c)),
            c => o.push(c),
        }
    }
    collapse(&o)
}

/// A control character written out: `\r`, `\n`, `\t`, else `\u{1b}`.
fn shown(c: char) -> String {
    match c {
        '\n' => "\\n".into(),
        '\r' => "\\r".into(),
        '\t' => "\\t".into(),
        c => format!("\\u{{{:x}}}", c as u32),
    }
}

fn collapse(s: &str) -> String {
    s.trim().split(' ').filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// The HTML-escaped text of the `<summary>` our `<details>` blocks open with.
fn summary_text(html: &str) -> Option<String> {
    let inner = html.strip_prefix("<details><summary>")?.trim_end().strip_suffix("</summary>")?;
    if inner.contains('<') {
        return None;
    }
    Some(inner.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&"))
}

/// What a CommonMark reader (with GitHub's extensions) makes of our Markdown.
#[derive(Default, Debug)]
pub(crate) struct MdRead {
    /// Visible text of each leaf block (paragraph, heading, table cell,
    /// `<summary>`), `\n` where we wrote `<br>`.
    pub segments: Vec<String>,
    /// Contents of fenced code blocks.
    pub code_blocks: Vec<String>,
    /// Inline code spans.
    pub code_spans: Vec<String>,
    pub strong: usize,
    /// What no renderer writes: links, raw HTML, emphasis, lists, quotes…
    pub problems: Vec<String>,
}

/// Read `md` back. `html_ok` are the raw HTML blocks the renderer writes
/// itself (besides `<details><summary>…</summary>` and `</details>`).
pub(crate) fn md_read(md: &str, html_ok: &[&str]) -> MdRead {
    let opts = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_MATH
        | Options::ENABLE_GFM;
    let mut out = MdRead::default();
    let mut cur: Option<String> = None;
    // The segment's text outside code spans, where GitHub links.
    let mut linkable = String::new();
    let mut code: Option<String> = None;
    for ev in Parser::new_ext(md, opts) {
        match ev {
            Event::Start(Tag::Paragraph | Tag::Heading { .. } | Tag::TableCell) => cur = Some(String::new()),
            Event::End(
                pulldown_cmark::TagEnd::Paragraph
                | pulldown_cmark::TagEnd::Heading(_)
                | pulldown_cmark::TagEnd::TableCell,
            ) => {
                out.segments.push(cur.take().unwrap_or_default());
                if let Some(p) = github_would_link(&std::mem::take(&mut linkable)) {
                    out.problems.push(format!("GitHub would turn {p:?} into a link or mention"));
                }
            }
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) => code = Some(String::new()),
            Event::End(pulldown_cmark::TagEnd::CodeBlock) => out.code_blocks.push(code.take().unwrap_or_default()),
            Event::Start(Tag::Strong) => out.strong += 1,
            Event::Start(Tag::Table(_) | Tag::TableHead | Tag::TableRow | Tag::HtmlBlock) | Event::End(_) => {}
            Event::Text(t) if t.chars().any(|c| is_control(c) && !(code.is_some() && matches!(c, '\n' | '\t'))) => {
                out.problems.push(format!("control character in {t:?}"))
            }
            Event::Text(t) => match (&mut code, &mut cur) {
                (Some(c), _) => c.push_str(&t),
                (None, Some(s)) => {
                    s.push_str(&t);
                    linkable.push_str(&t);
                }
                (None, None) => out.problems.push(format!("text outside a block: {t:?}")),
            },
            Event::Code(t) if t.chars().any(is_control) => out.problems.push(format!("control character in {t:?}")),
            Event::Code(t) => {
                out.code_spans.push(t.to_string());
                if let Some(s) = &mut cur {
                    s.push_str(&t);
                }
                linkable.push(' ');
            }
            Event::InlineHtml(h) if &*h == "<br>" => {
                if let Some(s) = &mut cur {
                    s.push('\n');
                }
            }
            Event::Html(h) => {
                if let Some(t) = summary_text(&h) {
                    if let Some(p) = github_would_link(&t) {
                        out.problems.push(format!("GitHub would turn {p:?} into a link or mention"));
                    }
                    out.segments.push(t);
                } else if &*h != "</details>\n" && !html_ok.iter().any(|ok| h.trim_end() == *ok) {
                    out.problems.push(format!("raw HTML {h:?}"));
                }
            }
            Event::SoftBreak | Event::HardBreak => out.problems.push("a line break inside a block".into()),
            other => out.problems.push(format!("{other:?}")),
        }
    }
    out
}

/// Text GitHub's own filters link after Markdown is rendered (mentions, team
/// mentions, e-mail and bare-URL autolinks, issue references): a parser
/// cannot see these, so they are matched on the text.
fn github_would_link(text: &str) -> Option<String> {
    let c: Vec<char> = text.chars().collect();
    for i in 0..c.len() {
        let next = c.get(i + 1).copied().unwrap_or(' ');
        let hit = match c[i] {
            '@' => next.is_ascii_alphanumeric(),
            '#' => next.is_ascii_digit(),
            ':' => next == '/' && c.get(i + 2) == Some(&'/'),
            '.' => i >= 3 && c[i - 3..i].iter().collect::<String>().eq_ignore_ascii_case("www"),
            _ => false,
        };
        if hit {
            return Some(c[i.saturating_sub(3)..(i + 3).min(c.len())].iter().collect());
        }
    }
    None
}

/// Every field of `r` that the Markdown renderer prints shows as itself.
/// `all` is what was read as HTML shows it: spaces collapsed, the
/// zero-width breaks invisible (controls were refused in `md_read`).
fn markdown_shows_every_field(r: &Report, read: &MdRead, all: &str) -> Result<(), String> {
    each_field(r, |what, text| {
        if all.contains(&md_visible(text)) {
            Ok(())
        } else {
            Err(format!("{what} {text:?} not shown as {:?}", md_visible(text)))
        }
    })?;
    for s in &r.steps {
        for d in &s.details {
            if !all.contains(&md_visible(&redact(&d.title))) {
                return Err(format!("details title {:?} not shown", d.title));
            }
            let body = redact(&d.body).trim_end().replace("\r\n", "\n");
            let shown: String = body
                .chars()
                .map(|c| if is_control(c) && c != '\n' && c != '\t' { shown(c) } else { c.to_string() })
                .collect();
            if !read.code_blocks.iter().any(|b| b.trim_end_matches('\n') == shown) {
                return Err(format!("details body {:?} not shown as {shown:?}: {:?}", d.body, read.code_blocks));
            }
        }
    }
    Ok(())
}

fn check_markdown(r: &Report) -> Result<(), String> {
    check_markdown_doc(&format::format_report(r, Format::Markdown, false), &[], r, &Extra::default())
}

/// What a Markdown document holds besides a report's steps.
#[derive(Default)]
pub(crate) struct Extra<'a> {
    /// Texts that must read as themselves.
    pub texts: Vec<&'a str>,
    /// Code spans the document writes itself.
    pub code: Vec<&'a str>,
    /// Bold spans the document writes itself.
    pub strong: usize,
}

/// `md` renders the steps of `r` (and `extra`) as themselves and nothing
/// else; `html_ok` are raw HTML blocks the document writes itself.
pub(crate) fn check_markdown_doc(md: &str, html_ok: &[&str], r: &Report, extra: &Extra) -> Result<(), String> {
    if md.contains("SECRET") {
        return Err(format!("a credential is shown:\n{md}"));
    }
    let read = md_read(md, html_ok);
    if !read.problems.is_empty() {
        return Err(format!("{:?}\n--- markdown:\n{md}", read.problems));
    }
    // Code spans hold only what the renderer names: step names, codes, its own.
    let codes: BTreeSet<String> = r
        .steps
        .iter()
        .flat_map(|s| s.diagnostics.iter().map(|d| d.code.to_string()).chain([s.step.clone()]))
        .chain(extra.code.iter().map(|c| md_visible(&redact(c))))
        .collect();
    if let Some(c) = read.code_spans.iter().find(|c| !codes.contains(&md_visible(c))) {
        return Err(format!("a code span the renderer did not mean: {c:?}\n--- markdown:\n{md}"));
    }
    // A title shows (in bold) when it has anything but spaces, line breaks and tabs.
    let shows = |t: &str| t.chars().any(|c| !matches!(c, '\n' | '\r' | '\t') && (!c.is_whitespace() || is_control(c)));
    let strong = extra.strong + r.steps.iter().flat_map(|s| &s.tables).filter(|t| shows(&t.title)).count();
    if read.strong != strong {
        return Err(format!("{} bold spans for {strong}\n--- markdown:\n{md}", read.strong));
    }
    let all = read.segments.iter().map(|s| collapse(&s.replace('\u{200b}', ""))).collect::<Vec<_>>().join("\n");
    if let Some(t) = extra.texts.iter().find(|t| !all.contains(&md_visible(&redact(t)))) {
        return Err(format!("{t:?} not shown as {:?}\n--- markdown:\n{md}", md_visible(t)));
    }
    markdown_shows_every_field(r, &read, &all).map_err(|e| format!("{e}\n--- markdown:\n{md}"))
}

// ---- human ----------------------------------------------------------------

/// What a terminal shows of `text`: control characters as a visible escape.
fn human_visible(text: &str) -> String {
    text.chars().map(|c| if is_control(c) { shown(c) } else { c.to_string() }).collect()
}

fn check_human(r: &Report, color: bool) -> Result<(), String> {
    let out = format::format_report(r, Format::Human, color);
    if out.contains("SECRET") {
        return Err(format!("a credential is shown:\n{out}"));
    }
    // Lines the layout itself writes: one per step, diagnostic, evidence,
    // help, table title, header and row, and the verdict.
    let lines: usize = 1 + r
        .steps
        .iter()
        .map(|s| {
            1 + s.diagnostics.iter().map(|d| 1 + d.evidence.len() + d.help.len()).sum::<usize>()
                + s.tables.iter().map(|t| usize::from(!t.title.is_empty()) + 1 + t.rows.len()).sum::<usize>()
        })
        .sum::<usize>();
    if out.matches('\n').count() != lines || !out.ends_with('\n') {
        return Err(format!("{} lines for a layout of {lines}:\n{out:?}", out.matches('\n').count()));
    }
    // With colour, ESC only opens and closes our own paints (verdicts, severities).
    let painted =
        if color { 2 * (r.steps.len() + 1 + r.steps.iter().map(|s| s.diagnostics.len()).sum::<usize>()) } else { 0 };
    if out.matches('\x1b').count() != painted {
        return Err(format!("{} ESC for {painted} paints:\n{out:?}", out.matches('\x1b').count()));
    }
    if let Some(c) = out.chars().find(|&c| is_control(c) && c != '\n' && c != '\x1b') {
        return Err(format!("control character {c:?} reaches the terminal:\n{out:?}"));
    }
    // The last cell of a table line loses its trailing spaces.
    each_field(r, |what, text| {
        let text = text.trim_end();
        if out.contains(&human_visible(text)) {
            Ok(())
        } else {
            Err(format!("{what} {text:?} not shown as {:?}:\n{out}", human_visible(text)))
        }
    })
}

/// Calls `f` with every text field both renderers print, as it must show
/// (credentials cut out).
fn each_field(r: &Report, mut f: impl FnMut(&str, &str) -> Result<(), String>) -> Result<(), String> {
    let mut f = |what: &str, text: &str| f(what, &redact(text));
    for s in &r.steps {
        f("target", &s.target)?;
        f("summary", &s.summary)?;
        for d in &s.diagnostics {
            f("message", &d.message)?;
            for e in d.evidence.iter().chain(&d.help) {
                f("evidence/help", e)?;
            }
            if let Some(sp) = &d.span {
                f("span", &sp.file)?;
            }
        }
        for t in &s.tables {
            for c in t.columns.iter().chain(t.rows.iter().flatten()).chain([&t.title]) {
                f("table", c)?;
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(crate::util::prop_config(512))]

    /// Markdown (PR comment, job summary): no text leaves its cell, code span
    /// or paragraph, nothing links, mentions or becomes HTML, and every field
    /// reads as itself.
    #[test]
    fn markdown_shows_any_text_as_itself_and_nothing_else(r in report()) {
        check_markdown(&r).map_err(TestCaseError::fail)?;
    }

    /// Human output: no control character reaches the terminal but the
    /// layout's own line feeds (and, with colour, its own paints); every
    /// field reads as itself with controls shown as `\u{…}`.
    #[test]
    fn human_shows_any_text_as_itself_and_no_control(r in report(), color in any::<bool>()) {
        check_human(&r, color).map_err(TestCaseError::fail)?;
    }

    /// JSON carries every string as it was (a consumer decodes it).
    #[test]
    fn json_round_trips_any_text(r in report()) {
        let out = format::format_report(&r, Format::Json, false);
        let back: serde_json::Value = serde_json::from_str(&out).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back, serde_json::to_value(&r).unwrap());
    }
}

/// The checkers themselves see what they are for.
#[test]
fn the_checkers_catch_what_they_look_for() {
    let read = md_read("a [x](https://e) b\n\n<b>hi</b>\n\n@org/team and www.e.example and #12\n\n- item\n", &[]);
    assert!(read.problems.iter().any(|p| p.contains("Link")), "{:?}", read.problems);
    assert!(read.problems.iter().any(|p| p.contains("InlineHtml")), "{:?}", read.problems);
    assert!(read.problems.iter().any(|p| p.contains("@or")), "{:?}", read.problems);
    assert!(read.problems.iter().any(|p| p.contains("Item") || p.contains("List")), "{:?}", read.problems);
    assert_eq!(md_visible("a\r\n  b\x1b\u{200b}"), "a b\\u{1b}");
    assert!(
        hostile_pieces().iter().any(|p| p == "\x1b]8;;https://e.example\x07")
            && hostile_pieces().contains(&"\\|".to_string())
    );
    assert_eq!(github_would_link("x @\u{200b}org #\u{200b}1 http:\u{200b}//e www\u{200b}.e"), None);
}
