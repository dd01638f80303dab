//! The one escaper per output format. Text that comes from a bundle, a store
//! listing, a cluster or a metrics server is data: every renderer (human and
//! Markdown reports, the PR comment, the job summary, the revert PR body)
//! puts it through the escaper of its format and writes its own layout
//! around it. JSON needs none: serde escapes what JSON must.
//!
//! Each escaper cuts credentials out first ([`redact`]): escaping changes
//! the text (`http:` + zero-width space + `//user:pw@`), and the output
//! layer's redaction would no longer recognise what it must cut.
//!
//! - [`human`], the terminal: control characters are shown as `\n`, `\u{1b}`
//!   and never sent, so a value cannot move the cursor, clear the screen,
//!   forge a line, ring the bell or reorder what follows it.
//! - [`markdown`], inline text (paragraph, heading, table cell, bold):
//!   Markdown's metacharacters are backslash-escaped and `< > &` written as
//!   entities, so a value stays in its cell and opens no code span, link,
//!   emphasis or HTML (nor a `<details>` the comment splitter would count).
//!   GitHub links mentions (`@org/team` pages a team), bare URLs and issue
//!   numbers *after* Markdown is rendered, where no backslash reaches, so a
//!   zero-width space goes after `@`, after `#` before a digit, after `:`
//!   before `//` and between `www` and `.`: the text reads the same and
//!   nothing links. [`markdown_html`], [`markdown_code`] and
//!   [`markdown_fence`] are the same text where it sits in the raw HTML we
//!   write (`<summary>`), in a code span and in a fenced block.
//!
//! The other outlets, one escaper each:
//!
//! - [`human`] is also every line-oriented outlet: a tool failure on
//!   stderr, the in-pod verifier's log, status file and termination log
//!   (`kubectl logs`, `kubectl describe pod`); [`log_record`] is a log event
//!   on stderr (its own final line feed kept). A value is one line there:
//!   `\n::error::…` cannot start a workflow command the runner reads on
//!   stderr.
//! - [`title`], a PR title: one line, controls shown, nothing links.
//! - [`workflow_data`] and [`workflow_property`], GitHub's workflow commands
//!   (`::error file=…,title=…::message`): GitHub's own escapes (`%`, CR, LF;
//!   and `:`, `,` in a property), other controls shown.
//! - [`json`], a JSON text we write (the report, `$GITHUB_OUTPUT` values):
//!   serde escapes C0; DEL, C1 and the bidirectional controls are written
//!   as `\uXXXX` too. A JSON reader reads back the same string.
//! - [`prometheus_label`], a label value of the text exposition format: its
//!   own escapes (`\\`, `\"`, `\n`), other controls shown.
//! - [`mermaid`], a quoted label or title in a Mermaid chart (inside a
//!   ```` ```mermaid ```` block of Markdown): Mermaid strings have no escape
//!   and its preprocessor reads `%%{…}%%` directives anywhere in the text,
//!   so every character that could end the string, the statement or the
//!   fence, or start a directive, comment, entity or HTML is replaced by its
//!   full-width look-alike (`"` → `＂`, `%` → `％`, `` ` `` → `｀`, …);
//!   controls are dropped and the text is bounded ([`MERMAID_LABEL_CHARS`],
//!   [`MERMAID_TITLE_CHARS`]).
//!
//! And one for names: [`path_name`] is a path (Linux paths are bytes) as
//! the text that names it everywhere (audit ids, shard assignment, cache
//! objects, report targets, metrics labels), losslessly: two paths are two
//! names.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::redact::redact;

/// Characters that act on a terminal or reorder text instead of showing:
/// C0, DEL, C1, the bidirectional controls, and the line and paragraph
/// separators some terminals break lines at.
pub(crate) fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
}

/// A control character as visible text: `\n`, `\r`, `\t`, else `\u{1b}`.
fn push_shown(o: &mut String, c: char) {
    match c {
        '\n' => o.push_str("\\n"),
        '\r' => o.push_str("\\r"),
        '\t' => o.push_str("\\t"),
        c => {
            let _ = write!(o, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// Text for the terminal: credentials cut out, every control character
/// shown, never sent. Borrowed when there is nothing to change.
pub fn human(s: &str) -> Cow<'_, str> {
    let s = redact(s);
    if !s.chars().any(is_control) {
        return s;
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_control(c) {
            push_shown(&mut o, c);
        } else {
            o.push(c);
        }
    }
    Cow::Owned(o)
}

/// A log event as the log writer gets it (one event, ending in its line
/// feed): credentials cut out, every control inside shown, the final line
/// feed kept, so a value cannot forge a second record.
pub(crate) fn log_record(s: &str) -> String {
    let (body, end) = match s.strip_suffix('\n') {
        Some(b) => (b, "\n"),
        None => (s, ""),
    };
    format!("{}{end}", human(body))
}

/// A PR title: one line, controls shown, GitHub's links and mentions broken
/// as in [`markdown`] (a title is not Markdown: nothing else is escaped).
pub(crate) fn title(s: &str) -> String {
    let v: Vec<char> = human(s).chars().collect();
    let mut o = String::with_capacity(s.len() + 4);
    for (i, &c) in v.iter().enumerate() {
        o.push(c);
        if breaks_link_after(&v, i) {
            o.push(LINK_BREAK);
        }
    }
    o
}

/// Workflow-command data (the message of `::error …::message`), by GitHub's
/// rules: `%`, CR and LF as `%25`, `%0D`, `%0A` (the runner unescapes them),
/// any other control shown as in [`human`]; credentials cut out.
pub(crate) fn workflow_data(s: &str) -> String {
    workflow(s, false)
}

/// A workflow-command property value (`file=`, `title=`): the data rules
/// plus `:` and `,` as `%3A`, `%2C`.
pub(crate) fn workflow_property(s: &str) -> String {
    workflow(s, true)
}

fn workflow(s: &str, property: bool) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in redact(s).chars() {
        match c {
            '%' => o.push_str("%25"),
            '\r' => o.push_str("%0D"),
            '\n' => o.push_str("%0A"),
            ':' if property => o.push_str("%3A"),
            ',' if property => o.push_str("%2C"),
            c if is_control(c) => push_shown(&mut o, c),
            c => o.push(c),
        }
    }
    o
}

/// A JSON text serde wrote, with every control character it left raw
/// inside strings (DEL, C1, the bidirectional controls, the line
/// separators) as a `\uXXXX` escape. `\n` outside strings is the pretty
/// printer's layout (serde escapes every C0 inside a string), so it stays.
pub(crate) fn json(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| is_control(c) && c != '\n') {
        return Cow::Borrowed(text);
    }
    let mut o = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_control(c) && c != '\n' {
            // Every control character is in the Basic Multilingual Plane.
            let _ = write!(o, "\\u{:04x}", c as u32);
        } else {
            o.push(c);
        }
    }
    Cow::Owned(o)
}

/// A label value of Prometheus' text format, between its quotes: `\`, `"`
/// and LF as the format escapes them (`\\`, `\"`, `\n`); any other
/// control shown as in [`human`] (the shown backslash escaped in turn), so
/// nothing raw reaches a dashboard; credentials cut out.
pub(crate) fn prometheus_label(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in redact(s).chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\n' => o.push_str("\\n"),
            c if is_control(c) => {
                let mut shown = String::new();
                push_shown(&mut shown, c);
                o.push_str(&shown.replace('\\', "\\\\"));
            }
            c => o.push(c),
        }
    }
    o
}

/// A path as the one text that names it: the bytes as UTF-8 where they
/// are, every byte that is not as `\xNN`, a backslash doubled, a control
/// character as `\xNN` (C0, DEL) or `\u{…}` (C1, the bidirectional
/// controls, the line separators). Lossless, so injective: `\` only ever
/// starts `\\`, `\xNN` or `\u{…}`, and each reads back as exactly one
/// byte or character. `a\xff` and `a\xfe` stay two bundles (lossy
/// conversion made both `a\u{fffd}`), and no name holds a control
/// character. A path in valid UTF-8 without backslashes or controls is its
/// text unchanged.
pub(crate) fn path_name(p: &std::path::Path) -> String {
    bytes_name(p.as_os_str().as_encoded_bytes())
}

/// [`path_name`] of raw bytes (a file name from a listing).
pub(crate) fn bytes_name(b: &[u8]) -> String {
    let mut o = String::with_capacity(b.len());
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => o.push_str("\\\\"),
                c if c.is_ascii() && is_control(c) => {
                    let _ = write!(o, "\\x{:02x}", c as u32);
                }
                c if is_control(c) => {
                    let _ = write!(o, "\\u{{{:x}}}", c as u32);
                }
                c => o.push(c),
            }
        }
        for byte in chunk.invalid() {
            let _ = write!(o, "\\x{byte:02x}");
        }
    }
    o
}

/// Keeps GitHub from turning the text into a mention or a link; invisible.
const LINK_BREAK: char = '\u{200b}';

/// The characters of `s` as one line of inline Markdown shows them: line
/// breaks and tabs are the space HTML displays them as, other controls
/// shown as `\u{1b}`, outer whitespace dropped (Markdown drops spaces too,
/// leading ones would start a code block, and bold cannot open on one).
fn inline_chars(s: &str) -> Vec<char> {
    let mut o = String::with_capacity(s.len());
    for c in redact(s).chars() {
        match c {
            '\n' | '\r' | '\t' => o.push(' '),
            c if is_control(c) => push_shown(&mut o, c),
            c => o.push(c),
        }
    }
    o.trim().chars().collect()
}

/// Whether GitHub could start a mention or autolink right after `v[i]`.
fn breaks_link_after(v: &[char], i: usize) -> bool {
    let next = v.get(i + 1).copied().unwrap_or(' ');
    match v[i] {
        '@' => true,
        '#' => next.is_ascii_digit(),
        ':' => next == '/',
        'w' | 'W' => next == '.' && i >= 2 && v[i - 2..=i].iter().all(|c| c.eq_ignore_ascii_case(&'w')),
        _ => false,
    }
}

/// Inline Markdown text that renders as `s` and as nothing else, in a
/// paragraph, a heading, a table cell or bold.
pub fn markdown(s: &str) -> String {
    inline(s, true)
}

/// Text inside raw HTML we write (`<details><summary>…</summary>`), where
/// Markdown is not parsed: only HTML's three metacharacters as entities,
/// and the same breaks against GitHub's links.
pub fn markdown_html(s: &str) -> String {
    inline(s, false)
}

fn inline(s: &str, markdown: bool) -> String {
    let v = inline_chars(s);
    let ascii_alnum = |i: Option<usize>| i.and_then(|i| v.get(i)).is_some_and(char::is_ascii_alphanumeric);
    let leading_digits = v.iter().take_while(|c| c.is_ascii_digit()).count();
    let mut o = String::with_capacity(v.len() + 8);
    for (i, &c) in v.iter().enumerate() {
        let backslash = markdown
            && match c {
                '\\' | '`' | '*' | '[' | ']' | '~' | '|' | '$' | '#' => true,
                // `a_b` cannot open or close emphasis: keep identifiers readable.
                '_' => !(ascii_alnum(i.checked_sub(1)) && ascii_alnum(Some(i + 1))),
                // What would start a list, a rule or a heading underline at
                // the start of a line (a summary is a paragraph of its own).
                '-' | '+' | '=' => i == 0,
                '.' | ')' => i == leading_digits && (1..=9).contains(&i),
                _ => false,
            };
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            c => {
                if backslash {
                    o.push('\\');
                }
                o.push(c);
            }
        }
        if breaks_link_after(&v, i) {
            o.push(LINK_BREAK);
        }
    }
    o
}

/// A code span holding `s` (outside tables: a `|` in a code span in a table
/// cell still ends the cell). Its backtick string is longer than any run
/// inside; GitHub links nothing in code.
pub fn markdown_code(s: &str) -> String {
    let text: String = inline_chars(s).into_iter().collect();
    let ticks = "`".repeat(longest_run(&text, '`') + 1);
    // One space each side is stripped by the reader: pad when the text
    // would touch the backticks or starts and ends with a space.
    let pad = if text.starts_with('`') || text.ends_with('`') || text.is_empty() { " " } else { "" };
    format!("{ticks}{pad}{text}{pad}{ticks}")
}

/// A fenced code block (`lang` is a hint, reduced to a word) showing
/// `body` line for line: its fence is longer than any backtick run in the
/// body, so no line closes it; CRLF is a line break, other controls shown.
pub fn markdown_fence(lang: &str, body: &str) -> String {
    let lang: String =
        lang.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '_' | '.')).collect();
    let mut text = String::with_capacity(body.len());
    for c in redact(body).replace("\r\n", "\n").trim_end().chars() {
        if is_control(c) && c != '\n' && c != '\t' {
            push_shown(&mut text, c);
        } else {
            text.push(c);
        }
    }
    let fence = "`".repeat((longest_run(&text, '`') + 1).max(3));
    format!("{fence}{lang}\n{text}\n{fence}")
}

fn longest_run(s: &str, ch: char) -> usize {
    s.split(|c| c != ch).map(str::len).max().unwrap_or(0)
}

/// Longest Mermaid label, in characters (a chart is a picture: a node or
/// release name longer than this is cut, with `…`).
pub(crate) const MERMAID_LABEL_CHARS: usize = 48;
/// Longest Mermaid chart title (our words around a gate's name).
pub(crate) const MERMAID_TITLE_CHARS: usize = 120;

/// A Mermaid string's text (the caller writes the quotes around it):
/// credentials cut out, controls dropped, every character that means
/// something to Mermaid's lexers, its preprocessor, HTML or the Markdown
/// fence replaced by its full-width look-alike, at most `max` characters
/// ([`MERMAID_LABEL_CHARS`], [`MERMAID_TITLE_CHARS`]; at least 1). What is left is letters, digits,
/// spaces and `. , : _ - + / ( ) ! ? @ ' = *`, which no Mermaid grammar we
/// write reads inside quotes.
pub(crate) fn mermaid(s: &str, max: usize) -> String {
    let max = max.max(1);
    let mut v: Vec<char> = Vec::with_capacity(max + 8);
    for w in redact(s).split_whitespace() {
        if !v.is_empty() {
            v.push(' ');
        }
        v.extend(
            w.chars()
                .filter(|&c| !is_control(c) && !matches!(c, '\u{200b}'..='\u{200d}' | '\u{feff}'))
                .map(mermaid_char),
        );
        if v.len() > max {
            v.truncate(max - 1);
            while v.last() == Some(&' ') {
                v.pop();
            }
            v.push('…');
            break;
        }
    }
    while v.last() == Some(&' ') {
        v.pop();
    }
    v.into_iter().collect()
}

/// One character of a Mermaid label: itself when Mermaid reads nothing into
/// it, else the full-width form of the ASCII character.
fn mermaid_char(c: char) -> char {
    let safe = c.is_alphanumeric()
        || !c.is_ascii()
        || matches!(c, ' ' | '.' | ',' | ':' | '_' | '-' | '+' | '/' | '(' | ')' | '!' | '?' | '@' | '\'' | '=' | '*');
    if safe {
        c
    } else {
        // Printable ASCII (`!`..=`~`) maps onto U+FF01..=U+FF5E in order.
        char::from_u32(c as u32 - 0x21 + 0xff01).unwrap_or('\u{fffd}')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_shows_controls_and_keeps_the_rest() {
        assert_eq!(human("ok é 😀 a\\b"), "ok é 😀 a\\b");
        assert!(matches!(human("plain"), Cow::Borrowed(_)));
        assert_eq!(human("a\x1b[2Jb\r\n\x07\u{9b}\u{202e}"), "a\\u{1b}[2Jb\\r\\n\\u{7}\\u{9b}\\u{202e}");
    }

    #[test]
    fn markdown_escapes_what_would_act() {
        assert_eq!(
            markdown("a|b `c` <details> &amp; *x* [l](u)"),
            "a\\|b \\`c\\` &lt;details&gt; &amp;amp; \\*x\\* \\[l\\](u)"
        );
        assert_eq!(markdown("error_rate _x_"), "error_rate \\_x\\_");
        assert_eq!(
            markdown("@org/team https://e www.e #12 a:b"),
            "@\u{200b}org/team https:\u{200b}//e www\u{200b}.e \\#\u{200b}12 a:b"
        );
        // Only `www.` starts a link: one `w` before a dot, or `www` before
        // anything else, is left as it is.
        assert_eq!(markdown("w.e wwwx aw.b WwW.e"), "w.e wwwx aw.b WwW\u{200b}.e");
        assert_eq!(markdown("  - item\n# h"), "\\- item \\# h");
        assert_eq!(markdown("12. x 3) y"), "12\\. x 3) y");
        assert_eq!(markdown("\x1b[31m"), "\\\\u{1b}\\[31m");
    }

    #[test]
    fn line_outlets_show_every_control() {
        assert_eq!(log_record("WARN a\n::error::x\x1b[2J\n"), "WARN a\\n::error::x\\u{1b}[2J\n");
        assert_eq!(log_record("no end\r"), "no end\\r");
        assert_eq!(
            title("Revert @team #12 www.e\n\u{202e}"),
            "Revert @\u{200b}team #\u{200b}12 www\u{200b}.e\\n\\u{202e}"
        );
    }

    #[test]
    fn workflow_commands_by_githubs_rules() {
        assert_eq!(workflow_data("50% done\r\nnext:a,b"), "50%25 done%0D%0Anext:a,b");
        assert_eq!(workflow_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
        assert_eq!(workflow_data("\x1b[31m\x07\0%0A"), "\\u{1b}[31m\\u{7}\\u{0}%250A");
    }

    #[test]
    fn json_and_prometheus_write_no_raw_control() {
        assert_eq!(
            json("{\n  \"a\": \"x\u{7f}\u{202e}\\\\\u{85}\"\n}"),
            "{\n  \"a\": \"x\\u007f\\u202e\\\\\\u0085\"\n}"
        );
        assert!(matches!(json("{\"a\":1}"), Cow::Borrowed(_)));
        let v: String =
            serde_json::from_str(&json(&serde_json::to_string("a\u{7f}\u{9b}\u{2028}\\").unwrap())).unwrap();
        assert_eq!(v, "a\u{7f}\u{9b}\u{2028}\\");
        assert_eq!(prometheus_label("a\\b\"c\nd\x1be"), "a\\\\b\\\"c\\nd\\\\u{1b}e");
    }

    /// The bytes a [`bytes_name`] stands for: the inverse that makes it injective.
    fn bytes_of_name(s: &str) -> Vec<u8> {
        let mut o = Vec::new();
        let mut rest = s;
        while let Some(c) = rest.chars().next() {
            if let Some(r) = rest.strip_prefix("\\\\") {
                o.push(b'\\');
                rest = r;
            } else if let Some(r) = rest.strip_prefix("\\x") {
                o.push(u8::from_str_radix(&r[..2], 16).expect("two hex digits"));
                rest = &r[2..];
            } else if let Some(r) = rest.strip_prefix("\\u{") {
                let (hex, r) = r.split_once('}').expect("closed");
                let c = char::from_u32(u32::from_str_radix(hex, 16).expect("hex")).expect("a char");
                o.extend_from_slice(c.to_string().as_bytes());
                rest = r;
            } else {
                assert_ne!(c, '\\', "a lone backslash in {s:?}");
                o.extend_from_slice(c.to_string().as_bytes());
                rest = &rest[c.len_utf8()..];
            }
        }
        o
    }

    #[test]
    fn names_keep_every_byte() {
        assert_eq!(bytes_name(b"models/a\xff/release.yaml"), "models/a\\xff/release.yaml");
        assert_eq!(bytes_name(b"a\\xff"), "a\\\\xff");
        assert_eq!(bytes_name("é\x1b\u{202e}\u{85}".as_bytes()), "é\\x1b\\u{202e}\\u{85}");
        assert_eq!(bytes_name(b"\xc3"), "\\xc3");
        assert_eq!(path_name(std::path::Path::new("./llm-scratch/v1/release.yaml")), "./llm-scratch/v1/release.yaml");
    }

    proptest::proptest! {
        #![proptest_config(crate::util::prop_config(2_000))]

        /// Any bytes: the name reads back as exactly those bytes (so two
        /// byte strings never share a name) and holds no control character.
        #[test]
        fn a_name_reads_back_as_its_bytes(b in proptest::collection::vec(proptest::prop_oneof![
            3 => proptest::sample::select(&[b'\\', b'x', b'f', b'u', b'{', b'}', 0xff, 0xfe, 0xc3, 0xa9, 0xe2, 0x80, 0xae, 0x1b, 0x7f, 0xc2, 0x85][..]),
            1 => proptest::arbitrary::any::<u8>(),
        ], 0..12)) {
            let name = bytes_name(&b);
            proptest::prop_assert_eq!(bytes_of_name(&name), b, "{}", name);
            proptest::prop_assert!(!name.chars().any(is_control), "{:?}", name);
        }
    }

    #[test]
    fn code_and_fence_outlast_backticks() {
        assert_eq!(markdown_code("lint"), "`lint`");
        assert_eq!(markdown_code("a``b"), "```a``b```");
        assert_eq!(markdown_code("`x"), "`` `x ``");
        assert_eq!(markdown_fence("diff`", "a\r\n````\n\x1b"), "`````diff\na\n````\n\\u{1b}\n`````");
    }
}
