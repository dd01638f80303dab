//! Properties of the renderers over hostile text (issue #27, class 4): any
//! string in any field a renderer prints comes back as the same visible text
//! and nothing else. Markdown is rendered back with a CommonMark parser
//! (GitHub's extensions on) and read as events; human output is read byte by
//! byte. The generators and checkers are shared with the revert PR body's
//! property (`checks::revert::text`).

use std::collections::{BTreeMap, BTreeSet};

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

// ---- every outlet ---------------------------------------------------------
//
// What leaves the process besides the report on stdout: stderr (a tool
// failure, the log), the in-pod verifier's log, status file and termination
// log, GitHub's workflow commands, job summary, step outputs and sticky
// comment, the revert PR, the metrics file. The same hostile strings go into
// every user-controlled field (artifact paths, store keys, bundle names and
// versions, messages, report fields) and come out of each outlet as text of
// that outlet and nothing else.

/// Every user-controlled string of one run.
#[cfg(feature = "cli")]
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub report: Report,
    /// Artifact paths as the bundle pins them (the in-pod verifier names them).
    pub artifacts: Vec<String>,
    /// Store keys (the log names them while hashing).
    pub keys: Vec<String>,
    pub name: String,
    pub version: String,
    pub prev_version: String,
    /// A bundle path and a failure's words (a tool error on stderr).
    pub path: String,
    pub error: String,
}

#[cfg(feature = "cli")]
fn run() -> impl Strategy<Value = Run> {
    (
        report(),
        proptest::collection::vec(hostile(), 1..4),
        proptest::collection::vec(hostile(), 1..3),
        (hostile(), hostile(), hostile()),
        (hostile(), hostile()),
    )
        .prop_map(|(mut report, artifacts, keys, (name, version, prev_version), (path, error))| {
            // Steps that record a release digest feed `$GITHUB_OUTPUT`.
            for (i, s) in report.steps.iter_mut().enumerate() {
                s.data["releaseDigest"] = format!("sha256:{i}").into();
            }
            Run { report, artifacts, keys, name, version, prev_version, path, error }
        })
}

/// `text` holds no control character but the `layout` ones its outlet writes itself.
fn no_control(what: &str, text: &str, layout: &[char]) -> Result<(), String> {
    match text.chars().find(|&c| is_control(c) && !layout.contains(&c)) {
        Some(c) => Err(format!("{what}: control character {c:?} reaches the outlet:\n{text:?}")),
        None => Ok(()),
    }
}

/// One line (ending in a line feed) and no other control character.
fn one_line(what: &str, text: &str) -> Result<(), String> {
    let body = text.strip_suffix('\n').ok_or_else(|| format!("{what}: not one line: {text:?}"))?;
    no_control(what, body, &[])
}

/// The runner's workflow commands in `text`: one per line, each
/// `::error|warning|notice props::message` with known, escaped properties.
fn check_annotations(text: &str, n: usize) -> Result<(), String> {
    no_control("annotations", text, &['\n'])?;
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() != n || (n > 0 && !text.ends_with('\n')) {
        return Err(format!("{} annotation lines for {n} annotations:\n{text}", lines.len()));
    }
    for l in lines {
        let rest = ["::error ", "::warning ", "::notice "]
            .iter()
            .find_map(|c| l.strip_prefix(c))
            .ok_or_else(|| format!("not a workflow command: {l:?}"))?;
        let (props, _message) = rest.split_once("::").ok_or_else(|| format!("no message: {l:?}"))?;
        for p in props.split(',') {
            let (k, _) = p.split_once('=').ok_or_else(|| format!("property {p:?} in {l:?}"))?;
            if !["file", "line", "col", "title"].contains(&k) {
                return Err(format!("property {k:?} the runner would read in {l:?}"));
            }
        }
    }
    Ok(())
}

/// `name<<DELIM`, the value's lines, `DELIM`: the runner's heredoc form.
fn read_outputs(text: &str) -> Result<BTreeMap<String, String>, String> {
    no_control("$GITHUB_OUTPUT", text, &['\n'])?;
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(head) = lines.next() {
        let (k, d) = head.split_once("<<").ok_or_else(|| format!("$GITHUB_OUTPUT line {head:?}"))?;
        let mut v = Vec::new();
        loop {
            match lines.next() {
                Some(l) if l == d => break,
                Some(l) => v.push(l),
                None => return Err(format!("$GITHUB_OUTPUT: {k} never closed:\n{text}")),
            }
        }
        if out.insert(k.to_string(), v.join("\n")).is_some() {
            return Err(format!("$GITHUB_OUTPUT: {k} twice:\n{text}"));
        }
    }
    Ok(out)
}

/// The job summary, the step outputs and the annotations: what the
/// pipeline's `comment` step writes for GitHub (no token: nothing posted).
#[cfg(feature = "cli")]
fn check_github_files(r: &Report) -> Result<(), String> {
    use crate::app::comment::{github_step_with, release_digests, GithubEnv};
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let env = GithubEnv {
        step_summary: Some(dir.path().join("summary.md")),
        output: Some(dir.path().join("output")),
        marker_key: "report".into(),
        ..GithubEnv::default()
    };
    let ctx = crate::app::ctx::Ctx::new(crate::adapters::env::EnvSnapshot::default());
    let mut annotations = Vec::new();
    let step = github_step_with(&ctx, r, &env, &mut annotations);
    let n = step.data["annotations"].as_u64().unwrap_or(0) as usize;
    check_annotations(&String::from_utf8_lossy(&annotations), n)?;
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).map_err(|e| e.to_string())?;
    // The footer quotes the posting's outcome as a quote block of its own.
    let (md, footer) = summary.rsplit_once("\n> ").ok_or_else(|| format!("no footer:\n{summary}"))?;
    one_line("job summary footer", footer)?;
    markdown_shape("job summary", md, &[])?;
    let outputs = read_outputs(&std::fs::read_to_string(dir.path().join("output")).map_err(|e| e.to_string())?)?;
    let digests: BTreeMap<String, String> =
        serde_json::from_str(&outputs["release-digests"]).map_err(|e| format!("release-digests is not JSON: {e}"))?;
    if digests != release_digests(r) {
        return Err(format!("release-digests read back as {digests:?}"));
    }
    Ok(())
}

/// Markdown an outlet writes after the report's renderer: the credentials
/// cut again over the whole text (the job summary and the PR comment do,
/// which may shorten a field that looks like one, so the fields are held
/// to themselves by `check_markdown` before it), and still nothing but text.
fn markdown_shape(what: &str, md: &str, html_ok: &[&str]) -> Result<(), String> {
    if md.contains("SECRET") {
        return Err(format!("{what}: a credential is shown:\n{md}"));
    }
    let read = md_read(md, html_ok);
    if read.problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{what}: {:?}\n--- markdown:\n{md}", read.problems))
    }
}

/// The sticky PR comment (and the check run's summary, the same text),
/// as `app::comment` posts it: credentials cut over the whole text.
#[cfg(feature = "cli")]
fn check_comment(r: &Report) -> Result<(), String> {
    let md = redact(&format::markdown(r)).into_owned();
    let parts = super::comment::sticky_parts(&md, "report");
    let marker = super::comment::marker("report", 1, 1);
    match parts.as_slice() {
        [one] => {
            // Our marker opens the body; any other is text (escaped, or
            // shown in a code block), which `check_markdown_doc` holds.
            if !one.starts_with(&format!("{marker}\n")) || super::comment::parse_marker(one, "report") != Some((1, 1)) {
                return Err(format!("PR comment: not opened by its marker:\n{one}"));
            }
            markdown_shape("PR comment", one, &[&marker])
        }
        _ => Ok(()),
    }
}

/// The in-pod verifier's log lines, status file and termination log for
/// files at hostile paths (missing, the wrong size, the wrong bytes,
/// unreadable) and while it waits for them.
#[cfg(feature = "cli")]
fn check_verifier(artifacts: &[String], error: &str) -> Result<(), String> {
    use crate::app::verify_files::{failure_texts, log_text, status_text, STATUS_MAX};
    use crate::checks::pod_files::{describe_wait, judge, Expected, Outcome, Waiting};
    let items: Vec<Expected> =
        artifacts.iter().map(|p| Expected { path: p.clone(), sha256: "0".repeat(64), size: 1 }).collect();
    let outcomes: Vec<Outcome> = (0..items.len())
        .map(|i| match i % 4 {
            0 => Outcome::Missing,
            1 => Outcome::SizeMismatch { actual: 2 },
            2 => Outcome::DigestMismatch { actual: error.to_string() },
            _ => Outcome::Unreadable(error.to_string()),
        })
        .collect();
    let lines: Vec<String> = judge(&items, &outcomes).0.into_iter().map(|d| d.message).collect();
    for l in &lines {
        one_line("verifier log", &(log_text(l) + "\n"))?;
    }
    let (status, termination) = failure_texts(&lines, items.len());
    one_line("verifier status", &(status_text(&status) + "\n"))?;
    no_control("termination log", &termination, &['\n'])?;
    if termination.lines().count() > lines.len() {
        return Err(format!("the termination log has more lines than failures:\n{termination}"));
    }
    let waiting: Vec<(usize, Waiting)> = (0..items.len()).map(|i| (i, Waiting::Absent)).collect();
    one_line("verifier status while waiting", &(status_text(&describe_wait(&items, &waiting, STATUS_MAX)) + "\n"))
}

/// Log lines (tracing's events on stderr, through the binary's writer).
#[cfg(feature = "cli")]
fn check_log(keys: &[String], error: &str) -> Result<(), String> {
    use std::sync::{Arc, Mutex};
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let sink = Sink::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || crate::adapters::local::LogWriter(writer.clone()))
        .with_target(false)
        .with_ansi(false)
        .without_time()
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        for k in keys {
            tracing::warn!("{k}: {error}; retrying in 200ms");
        }
    });
    let text = String::from_utf8_lossy(&sink.0.lock().unwrap()).into_owned();
    no_control("log", &text, &['\n'])?;
    if text.lines().count() != keys.len() {
        return Err(format!("{} log lines for {} events:\n{text}", text.lines().count(), keys.len()));
    }
    Ok(())
}

/// Every outlet: each holds no control character but its own layout, each
/// keeps its own structure (one line per log entry and annotation, one
/// marker per comment, one sample per line), Markdown outlets show every
/// field as itself and link or mention nothing.
#[cfg(feature = "cli")]
fn check_every_outlet(run: &Run) -> Result<(), String> {
    let r = &run.report;
    // stdout, in each format.
    check_human(r, false)?;
    check_markdown(r)?;
    let json = format::format_report(r, Format::Json, false);
    no_control("JSON report", &json, &['\n'])?;
    // stderr: a tool failure naming a path, and the log.
    let e = anyhow::anyhow!(run.error.clone()).context(format!("reading {}", run.path));
    one_line("stderr", &crate::dispatch::error_text(&e))?;
    check_log(&run.keys, &run.error)?;
    // GitHub.
    check_github_files(r)?;
    check_comment(r)?;
    let title = crate::checks::revert::text::pr_title(&run.name, &run.version, &run.prev_version);
    one_line("revert PR title", &(title.clone() + "\n"))?;
    if let Some(p) = github_would_link(&title) {
        return Err(format!("revert PR title: GitHub would link {p:?} in {title:?}"));
    }
    let facts = crate::checks::revert::text::RevertFacts {
        name: &run.name,
        version: &run.version,
        digest: "sha256:0",
        prev_version: &run.prev_version,
        prev_digest: "sha256:1",
        path: &run.path,
        branch: "bundlegate/revert-x",
        verify_summary: &run.error,
    };
    let body = crate::checks::revert::text::revert_body(&facts, Some(r));
    let marker = format!("<!-- {} sha256:0 -->", crate::checks::revert::REVERT_MARKER);
    let extra = Extra {
        texts: vec![&run.name, &run.version, &run.prev_version, &run.path, &run.error],
        code: vec![
            "sha256:0",
            "sha256:1",
            "bundlegate/revert-x",
            "--evidence report.json",
            "bundlegate watch --format json",
        ],
        strong: 1,
    };
    let failed = Report {
        steps: r.steps.iter().filter(|s| s.verdict >= super::Verdict::Inconclusive).cloned().collect(),
        ..r.clone()
    };
    check_markdown_doc(&body, &[&marker], &failed, &extra).map_err(|e| format!("revert PR body: {e}"))?;
    // The metrics file.
    // Two audit steps of one label are one series: refused, nothing written.
    match super::metrics::audit_metrics(r, 0) {
        Ok(metrics) => no_control("metrics", &metrics, &['\n'])?,
        Err(e) => {
            let labels: Vec<String> = r
                .steps
                .iter()
                .filter(|s| s.step == "audit")
                .map(|s| super::escape::prometheus_label(&s.target))
                .collect();
            if labels.iter().collect::<BTreeSet<_>>().len() == labels.len() {
                return Err(format!("metrics refused distinct labels {labels:?}: {e}"));
            }
        }
    }
    // The in-pod verifier.
    check_verifier(&run.artifacts, &run.error)
}

#[cfg(feature = "cli")]
proptest! {
    #![proptest_config(crate::util::prop_config(256))]

    /// Any string in any user-controlled field (artifact paths, store keys,
    /// bundle name and versions, messages, every report field), ESC, BEL, a
    /// lone CR, `\n::error::…`, `%0A`, `@team`, links, the hidden marker,
    /// U+202E and NUL among them, reaches every outlet as that outlet's
    /// text and nothing else.
    #[test]
    fn every_outlet_shows_any_text_as_text_and_nothing_else(run in run()) {
        check_every_outlet(&run).map_err(TestCaseError::fail)?;
    }
}
