//! The sticky PR comment's text: numbered part markers, and splitting a
//! Markdown report into bodies within GitHub's limits so that every part
//! renders on its own (a code fence or `<details>` block cut at a part's end
//! is closed there and reopened in the next). Pure text; publishing is
//! `app::comment`.

use serde::Serialize;

use crate::report::{StepReport, Verdict};

/// GitHub's limit for a comment body, in characters.
pub const COMMENT_LIMIT: usize = 65_536;
/// Default marker key: one sticky comment per PR unless the workflow sets
/// `BUNDLEGATE_COMMENT_KEY` (e.g. one comment per pipeline).
pub const DEFAULT_MARKER_KEY: &str = "report";

const CONTINUED: &str = "\n*(continued in the next comment)*\n";

pub fn marker(key: &str, i: usize, n: usize) -> String {
    format!("<!-- bundlegate:{key} part {i}/{n} -->")
}

/// `(i, n)` when `body` starts with this key's marker.
pub fn parse_marker(body: &str, key: &str) -> Option<(usize, usize)> {
    let rest = body.trim_start().strip_prefix(&format!("<!-- bundlegate:{key} part "))?;
    let (nums, _) = rest.split_once(" -->")?;
    let (i, n) = nums.split_once('/')?;
    Some((i.trim().parse().ok()?, n.trim().parse().ok()?))
}

/// The key in a part's leading marker.
pub(crate) fn marker_key_of(part: &str) -> Option<&str> {
    let rest = part.trim_start().strip_prefix("<!-- bundlegate:")?;
    let (key, _) = rest.split_once(" part ")?;
    Some(key)
}

/// Split `markdown` into comment bodies of at most [`COMMENT_LIMIT`]
/// characters, each starting with `<!-- bundlegate:<key> part i/n -->`.
///
/// Splits prefer line boundaries and never cut a UTF-8 character. A part that
/// ends inside a code fence or a `<details>` block closes it and the next part
/// reopens it, so every part renders on its own.
pub fn sticky_parts(markdown: &str, marker_key: &str) -> Vec<String> {
    let single = format!("{}\n{markdown}", marker(marker_key, 1, 1));
    if single.chars().count() <= COMMENT_LIMIT {
        return vec![single];
    }
    // Reserve room for the widest header we could need and its newline;
    // `split_body` reserves the note's own room.
    let reserve = marker(marker_key, 99_999, 99_999).chars().count() + 1;
    let budget = COMMENT_LIMIT.saturating_sub(reserve).max(1024);
    let chunks = split_body(markdown, budget, |_| 1, CONTINUED);
    let n = chunks.len();
    chunks.into_iter().enumerate().map(|(i, c)| format!("{}\n{c}", marker(marker_key, i + 1, n))).collect()
}

/// Markdown block state at a line boundary.
#[derive(Clone, Default, Debug)]
struct Blocks {
    /// Opening line of the code fence we are in, and its fence string.
    fence: Option<(String, String)>,
    /// Opening lines of the `<details>` blocks we are in (outermost first).
    details: Vec<String>,
}

impl Blocks {
    fn after(&self, line: &str) -> Blocks {
        let mut b = self.clone();
        let t = line.trim_start_matches(' ').trim_end_matches(['\n', '\r']);
        if let Some((_, fence)) = &b.fence {
            let ch = fence.chars().next().unwrap_or('`');
            let run = t.chars().take_while(|&c| c == ch).count();
            // Fence characters are ASCII: `run` characters are `run` bytes.
            if run >= fence.len() && t[run..].trim().is_empty() {
                b.fence = None;
            }
            return b;
        }
        for ch in ['`', '~'] {
            let run = t.chars().take_while(|&c| c == ch).count();
            if run >= 3 {
                b.fence = Some((t.to_string(), t[..run].to_string()));
                return b;
            }
        }
        let opens = t.matches("<details").count();
        let closes = t.matches("</details>").count();
        for _ in 0..opens {
            b.details.push(t.to_string());
        }
        for _ in 0..closes {
            b.details.pop();
        }
        b
    }

    /// Text that closes what is open, innermost first.
    fn closing(&self, cur_ends_with_newline: bool) -> String {
        let mut s = String::new();
        if let Some((_, fence)) = &self.fence {
            if !cur_ends_with_newline {
                s.push('\n');
            }
            s.push_str(fence);
            s.push('\n');
        } else if !self.details.is_empty() && !cur_ends_with_newline {
            s.push('\n');
        }
        for _ in &self.details {
            s.push_str("</details>\n");
        }
        s
    }

    /// Text that reopens what was open, outermost first.
    fn reopening(&self) -> String {
        let mut s = String::new();
        for d in &self.details {
            s.push_str(d);
            s.push_str("\n\n");
        }
        if let Some((open, _)) = &self.fence {
            s.push_str(open);
            s.push('\n');
        }
        s
    }
}

/// Split into chunks whose size (summed `unit` per char) is at most `budget`
/// including any closing text and `note` (appended to every chunk but the last).
fn split_body(text: &str, budget: usize, unit: fn(char) -> usize, note: &str) -> Vec<String> {
    let size = |s: &str| s.chars().map(unit).sum::<usize>();
    let budget = budget.saturating_sub(size(note));
    let mut out = Vec::new();
    let mut state = Blocks::default();
    let mut cur = String::new();
    let mut cur_size = 0usize;
    // Size of the reopening prefix of `cur`: a chunk holding only that has no content.
    let mut prefix_size = 0usize;

    let flush =
        |cur: &mut String, cur_size: &mut usize, prefix_size: &mut usize, state: &Blocks, out: &mut Vec<String>| {
            cur.push_str(&state.closing(cur.is_empty() || cur.ends_with('\n')));
            cur.push_str(note);
            out.push(std::mem::take(cur));
            *cur = state.reopening();
            *cur_size = size(cur);
            *prefix_size = *cur_size;
        };

    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    for (i, &line) in lines.iter().enumerate() {
        let after = state.after(line);
        let line_size = size(line);
        let close_after = size(&after.closing(line.ends_with('\n')));
        // A fenced block (a chart above all: half a chart draws nothing)
        // that does not fit in what is left of this chunk but fits in a
        // chunk of its own starts the next chunk rather than being cut.
        if state.fence.is_none() && after.fence.is_some() && cur_size > prefix_size {
            if let Some(block) = fenced_block_size(&lines[i..], &state, size) {
                let whole = block + size(&state.closing(false));
                if cur_size + whole > budget && size(&state.reopening()) + whole <= budget {
                    flush(&mut cur, &mut cur_size, &mut prefix_size, &state, &mut out);
                }
            }
        }
        if cur_size + line_size + close_after <= budget {
            cur.push_str(line);
            cur_size += line_size;
            state = after;
            continue;
        }
        if cur_size > prefix_size {
            flush(&mut cur, &mut cur_size, &mut prefix_size, &state, &mut out);
            if cur_size + line_size + close_after <= budget {
                cur.push_str(line);
                cur_size += line_size;
                state = after;
                continue;
            }
        }
        // One line longer than a whole chunk: cut it at character boundaries.
        let mut rest = line;
        while !rest.is_empty() {
            let room =
                budget.saturating_sub(cur_size + size(&state.closing(false)) + size(&after.closing(false))).max(1);
            let mut taken = 0usize;
            let mut end = 0usize;
            for (i, c) in rest.char_indices() {
                if taken + unit(c) > room {
                    break;
                }
                taken += unit(c);
                end = i + c.len_utf8();
            }
            if end == 0 {
                // Not even one char fits after the reopening prefix (the chunk
                // holds nothing else here: content was flushed before the cut
                // and after each piece): take one anyway, to make progress.
                end = rest.chars().next().map(char::len_utf8).unwrap_or(rest.len());
                taken = size(&rest[..end]);
            }
            cur.push_str(&rest[..end]);
            cur_size += taken;
            rest = &rest[end..];
            if !rest.is_empty() {
                flush(&mut cur, &mut cur_size, &mut prefix_size, &state, &mut out);
            }
        }
        state = after;
    }
    // The last chunk always holds something: every flush above is followed
    // by a line or a piece of one (or the text was empty: one empty chunk).
    cur.push_str(&state.closing(cur.is_empty() || cur.ends_with('\n')));
    out.push(cur);
    out
}

/// Size of the fenced block `lines` opens (from its opening line through
/// its closing one), or None when nothing closes it.
fn fenced_block_size(lines: &[&str], before: &Blocks, size: impl Fn(&str) -> usize) -> Option<usize> {
    let mut b = before.clone();
    let mut total = 0usize;
    for l in lines {
        b = b.after(l);
        total += size(l);
        if b.fence.is_none() {
            return Some(total);
        }
    }
    None
}

/// Cut `text` to at most `limit` bytes on a line boundary, closing open
/// blocks and saying so; unchanged when it fits.
pub fn truncate_markdown(text: &str, limit: usize, note: &str) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut first =
        split_body(text, limit.saturating_sub(note.len()), |c| c.len_utf8(), "").into_iter().next().unwrap_or_default();
    first.push_str(note);
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fence_balanced(s: &str) -> bool {
        let mut b = Blocks::default();
        for l in s.split_inclusive('\n') {
            b = b.after(l);
        }
        b.fence.is_none() && b.details.is_empty()
    }

    #[test]
    fn a_parts_key_is_read_from_its_marker() {
        assert_eq!(marker_key_of(&format!("  {}\nbody", marker("audit-a", 2, 3))), Some("audit-a"));
        assert_eq!(marker_key_of("<!-- other:audit part 1/1 -->"), None);
        assert_eq!(marker_key_of("<!-- bundlegate:audit -->"), None);
    }

    #[test]
    fn small_report_is_one_part_with_marker() {
        let p = sticky_parts("### hi\n", "report");
        assert_eq!(p, vec!["<!-- bundlegate:report part 1/1 -->\n### hi\n".to_string()]);
        assert_eq!(parse_marker(&p[0], "report"), Some((1, 1)));
        assert_eq!(parse_marker(&p[0], "other"), None);
    }

    #[test]
    fn exactly_at_the_limit_is_one_part() {
        let head = marker("k", 1, 1).chars().count() + 1;
        let md = "a".repeat(COMMENT_LIMIT - head);
        assert_eq!(sticky_parts(&md, "k").len(), 1);
        assert_eq!(sticky_parts(&(md + "b"), "k").len(), 2);
    }

    #[test]
    fn multibyte_near_the_boundary_is_never_split_and_counts_chars() {
        // 3-byte and 4-byte chars: a byte-based splitter would cut them or
        // produce parts far below the character limit.
        let line = "é€😀".repeat(1000) + "\n"; // 3001 chars, 9001 bytes
        let md = line.repeat(50);
        let parts = sticky_parts(&md, "k");
        assert!(parts.len() >= 3, "{}", parts.len());
        let mut joined = String::new();
        for (i, p) in parts.iter().enumerate() {
            assert!(p.chars().count() <= COMMENT_LIMIT);
            assert!(p.starts_with(&marker("k", i + 1, parts.len())));
            // Byte-heavy parts: well over 65,536 bytes each but within the char limit.
            if i + 1 < parts.len() {
                assert!(p.len() > COMMENT_LIMIT, "split by bytes? {}", p.len());
            }
            let body = p.split_once('\n').unwrap().1;
            joined.push_str(body.strip_suffix(CONTINUED).unwrap_or(body));
        }
        assert_eq!(joined, md, "content lost or changed");
    }

    #[test]
    fn one_giant_line_is_cut_at_char_boundaries() {
        let md = "ü".repeat(COMMENT_LIMIT * 2 + 7);
        let parts = sticky_parts(&md, "k");
        assert_eq!(parts.len(), 3);
        let total: usize =
            parts.iter().map(|p| p.split_once('\n').unwrap().1.chars().filter(|&c| c == 'ü').count()).sum();
        assert_eq!(total, COMMENT_LIMIT * 2 + 7);
        assert!(parts.iter().all(|p| p.chars().count() <= COMMENT_LIMIT));
    }

    #[test]
    fn code_fences_and_details_are_closed_and_reopened() {
        let mut md = String::from("### bundlegate run: ❌ FAIL\n\n");
        md.push_str("<details><summary>manifest diff: a/release.yaml</summary>\n\n```diff\n");
        for i in 0..8000 {
            md.push_str(&format!("+  line {i}: some manifest text here\n"));
        }
        md.push_str("```\n\n</details>\n\ntrailer\n");
        let parts = sticky_parts(&md, "k");
        assert!(parts.len() >= 4, "{}", parts.len());
        for (i, p) in parts.iter().enumerate() {
            assert!(p.chars().count() <= COMMENT_LIMIT);
            assert!(fence_balanced(p), "part {} leaves a block open:\n{}", i + 1, &p[p.len().saturating_sub(200)..]);
            if i > 0 {
                let body = p.split_once('\n').unwrap().1;
                assert!(
                    body.starts_with("<details><summary>manifest diff: a/release.yaml</summary>\n\n```diff\n"),
                    "part {} does not reopen: {}",
                    i + 1,
                    &body[..80]
                );
            }
            if i + 1 < parts.len() {
                assert!(p.ends_with(&format!("```\n</details>\n{CONTINUED}")), "{}", &p[p.len() - 80..]);
            }
        }
        assert!(parts.last().unwrap().ends_with("trailer\n"));
        // Every diff line survives exactly once.
        let all: String = parts.concat();
        assert_eq!(all.matches("+  line 7999:").count(), 1);
        assert_eq!(all.matches("+  line ").count(), 8000);
    }

    /// Small inputs, whole chunks compared: a line cut with nothing open
    /// gets no closing text, a chunk ending inside `<details>` or a fence
    /// closes it with no blank line added, the next reopens it, and the
    /// note goes on every chunk but the last, within the budget.
    #[test]
    fn chunks_are_exactly_the_text_cut_closed_and_reopened() {
        let one = |_: char| 1;
        assert_eq!(split_body("abcdefghij", 4, one, ""), ["abcd", "efgh", "ij"]);
        assert_eq!(split_body("abcdefghij", 5, one, "+"), ["abcd+", "efgh+", "ij"]);
        assert_eq!(
            split_body("<details>\nx\ny\nz\n</details>\n", 25, one, ""),
            ["<details>\nx\ny\n</details>\n", "<details>\n\nz\n</details>\n"]
        );
        assert_eq!(split_body("```\na\nb\n```\n", 10, one, ""), ["```\na\n```\n", "```\nb\n```\n"]);
        assert_eq!(split_body("```\na\nb\n```\n", 12, one, ""), ["```\na\nb\n```\n"]);
        assert_eq!(split_body("", 12, one, "+"), [""]);
        // Text that ends inside a block is closed in the last chunk, with no
        // blank line added after a line break and one added without it.
        assert_eq!(split_body("<details>\nx\n", 100, one, ""), ["<details>\nx\n</details>\n"]);
        assert_eq!(split_body("<details>\nx", 100, one, ""), ["<details>\nx\n</details>\n"]);
        // A line cut inside a block: each piece as long as the budget leaves
        // after the reopening and both closings (11 + 12 + 12 of 40).
        let mut want = vec!["<details>\n</details>\n".to_string()];
        want.extend(std::iter::repeat_n("<details>\n\naaaaa\n</details>\n".to_string(), 4));
        assert_eq!(split_body(&format!("<details>\n{}", "a".repeat(20)), 40, one, ""), want);
        // Counted in bytes, with no room left after the block's own text: one
        // character per chunk anyway (over the budget, never stuck).
        let bytes = split_body("<details>\n😀😀", 25, char::len_utf8, "");
        assert_eq!(
            bytes,
            ["<details>\n</details>\n", "<details>\n\n😀\n</details>\n", "<details>\n\n😀\n</details>\n"]
        );
    }

    /// Parts are as full as the widest header allows: one giant line fills
    /// every part but the last to the limit less the header's unused width.
    #[test]
    fn parts_are_full_to_the_limit() {
        let parts = sticky_parts(&"a".repeat(COMMENT_LIMIT * 3), "k");
        let widest = marker("k", 99_999, 99_999).chars().count();
        for (i, p) in parts.iter().enumerate().take(parts.len() - 1) {
            let head = marker("k", i + 1, parts.len()).chars().count();
            assert_eq!(p.chars().count(), COMMENT_LIMIT - (widest - head), "part {}", i + 1);
            assert!(p.ends_with(CONTINUED));
        }
    }

    /// Markdown of plain lines (multi-byte characters included, some longer
    /// than a chunk), fences of both kinds and `<details>` blocks, opened and
    /// closed in any order.
    fn markdown() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let line = prop_oneof![
            6 => "[a-zé€😀 ]{0,60}",
            1 => Just("```".to_string()),
            1 => Just("~~~~yaml".to_string()),
            1 => Just("~~~~".to_string()),
            1 => Just(DETAILS.to_string()),
            1 => Just("</details>".to_string()),
        ];
        (prop::collection::vec(line, 0..40), any::<bool>()).prop_map(|(lines, end)| {
            let mut t = lines.join("\n");
            if end {
                t.push('\n');
            }
            t
        })
    }

    const DETAILS: &str = "<details><summary>s</summary>";
    const NOTE: &str = "\n<!--c-->\n";

    /// The text's own characters, without the lines splitting adds (fences,
    /// details, the note) and without line breaks.
    fn content(s: &str) -> String {
        s.split('\n').filter(|l| !["```", "~~~~yaml", "~~~~", DETAILS, "</details>", "<!--c-->"].contains(l)).collect()
    }

    proptest::proptest! {
        #![proptest_config(crate::util::prop_config(1_000))]

        /// Every chunk fits the budget (note included) and leaves nothing
        /// open; together they hold the text's characters in order, each once.
        #[test]
        fn chunks_fit_close_and_keep_the_text(md in markdown(), room in 0usize..300, bytes in proptest::prelude::any::<bool>()) {
            let unit: fn(char) -> usize = if bytes { char::len_utf8 } else { |_| 1 };
            // A chunk must hold its blocks' reopening, a block line (so that
            // only plain lines are ever cut), their closing (twice when a line
            // is cut inside a block) and the note: the budget starts there
            // (the report's own blocks take a few hundred characters of a
            // 65,536 limit).
            let size = |t: &str| t.chars().map(unit).sum::<usize>();
            let mut b = Blocks::default();
            let mut overhead = size(&b.reopening()) + 2 * size(&b.closing(false));
            for l in md.split_inclusive('\n') {
                b = b.after(l);
                overhead = overhead.max(size(&b.reopening()) + 2 * size(&b.closing(false)));
            }
            let budget = overhead + size(NOTE) + size(DETAILS) + 1 + room;
            let chunks = split_body(&md, budget, unit, NOTE);
            for (i, c) in chunks.iter().enumerate() {
                let size: usize = c.chars().map(unit).sum();
                proptest::prop_assert!(size <= budget, "chunk {i} has {size} > {budget}: {c:?}");
                proptest::prop_assert!(fence_balanced(c), "chunk {i} leaves a block open: {c:?}");
                proptest::prop_assert_eq!(c.ends_with(NOTE), i + 1 < chunks.len(), "note on chunk {}", i);
            }
            proptest::prop_assert_eq!(content(&chunks.concat()), content(&md));
        }
    }

    /// A chart that would straddle a part's end moves whole to the next
    /// part: every part holds whole charts only, each exactly once, and
    /// the text around them is kept in order.
    #[test]
    fn a_chart_at_the_boundary_moves_whole_to_the_next_part() {
        let chart = "```mermaid\nxychart-beta\n    title \"t\"\n    x-axis [\"a\", \"b\"]\n    bar \"n\" [1, 2]\n```\n";
        // 100-character lines: 654 of them leave less room than a chart.
        for pad in [640, 653, 654, 655] {
            let filler = "x".repeat(99) + "\n";
            let mut md = filler.repeat(pad);
            md.push_str(chart);
            md.push_str(&filler.repeat(5));
            md.push_str(chart);
            let parts = sticky_parts(&md, "k");
            let mut charts = 0;
            for p in &parts {
                assert!(p.chars().count() <= COMMENT_LIMIT);
                assert!(fence_balanced(p));
                // No fence closed or reopened by the splitter: every block
                // in a part is one of the charts, whole.
                assert_eq!(p.matches("```mermaid\n").count(), p.matches(chart).count(), "a cut chart at pad {pad}");
                assert_eq!(p.matches("```").count(), 2 * p.matches(chart).count(), "a stray fence at pad {pad}");
                charts += p.matches(chart).count();
            }
            assert_eq!(charts, 2, "pad {pad}");
            let body: String =
                parts.iter().map(|p| p.split_once('\n').unwrap().1.trim_end_matches(CONTINUED)).collect();
            assert_eq!(body, md, "pad {pad}");
        }
        // A block larger than a whole part is still cut (it cannot move).
        let huge = format!("```mermaid\n{}```\n", "y\n".repeat(COMMENT_LIMIT));
        assert!(sticky_parts(&huge, "k").len() >= 2);
    }

    #[test]
    fn tilde_fences_and_longer_fences() {
        let mut b = Blocks::default();
        b = b.after("~~~~yaml\n");
        assert_eq!(b.fence.as_ref().unwrap().1, "~~~~");
        b = b.after("~~~\n"); // shorter: still inside
        assert!(b.fence.is_some());
        b = b.after("~~~~\n");
        assert!(b.fence.is_none());
    }

    #[test]
    fn summary_truncation_is_by_bytes_and_says_so() {
        let md = format!("```\n{}```\n", "ab€\n".repeat(100_000));
        let t = truncate_markdown(&md, 10_000, "\nTRUNCATED\n");
        assert!(t.len() <= 10_000, "{}", t.len());
        assert!(t.ends_with("\nTRUNCATED\n"));
        assert!(fence_balanced(&t));
        assert_eq!(truncate_markdown("small", 10, "x"), "small");
    }
}

/// What publishing the sticky comment did, part by part.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct CommentOutcome {
    pub parts: usize,
    pub created: Vec<u64>,
    pub updated: Vec<u64>,
    /// Parts whose body was already identical (no request made).
    pub unchanged: Vec<u64>,
    pub deleted: Vec<u64>,
    /// Link to the first part.
    pub url: Option<String>,
}

/// How the comment went.
pub(crate) enum Posting {
    /// The outcome, and what happened to the optional check run.
    Posted(CommentOutcome, Option<String>),
    /// Not attempted (no token / repository / PR number).
    Skipped(String),
    /// Read-only token.
    Forbidden(String),
    Failed(String),
}

impl Posting {
    /// One line for the step's summary and the job summary's footer.
    pub(crate) fn line(&self) -> String {
        match self {
            Posting::Posted(o, check) => format!(
                "PR comment: {} part(s) ({} created, {} updated, {} unchanged, {} deleted){}{}",
                o.parts,
                o.created.len(),
                o.updated.len(),
                o.unchanged.len(),
                o.deleted.len(),
                o.url.as_ref().map(|u| format!(": {u}")).unwrap_or_default(),
                check.as_ref().map(|c| format!("; {c}")).unwrap_or_default()
            ),
            Posting::Skipped(why) | Posting::Forbidden(why) => format!("no comment posted: {why}"),
            Posting::Failed(why) => format!("PR comment failed: {why}"),
        }
    }
}

/// Everything the `comment` step did, to be written up.
pub(crate) struct CommentStep {
    /// `owner/repo#N`, or "job summary" without a PR.
    pub target: String,
    pub posting: Posting,
    pub comment_line: String,
    /// Writes that failed (annotations, outputs, the job summary).
    pub problems: Vec<String>,
    pub summary_written: bool,
    /// `$GITHUB_STEP_SUMMARY` was set.
    pub summary_set: bool,
    pub annotations: usize,
    /// The step outputs written (`verdict`, `release-digests`).
    pub outputs: serde_json::Value,
}

impl CommentStep {
    /// The step: PASS when posted, NOT RUN when there was nothing to post
    /// to, ERROR when posting or any write failed; `scrub` removes the token
    /// from every text GitHub or the environment supplied.
    pub(crate) fn write_up(self, scrub: &dyn Fn(&str) -> String) -> StepReport {
        let mut s = StepReport::new("comment", &self.target);
        s.verdict = match &self.posting {
            Posting::Posted(..) => Verdict::Pass,
            Posting::Skipped(_) | Posting::Forbidden(_) => Verdict::NotRun,
            Posting::Failed(_) => Verdict::Error,
        };
        if !self.problems.is_empty() {
            s.verdict = Verdict::Error;
        }
        let mut summary = self.comment_line.clone();
        if self.summary_written {
            summary.push_str("; job summary written");
        } else if !self.summary_set {
            summary.push_str("; no job summary ($GITHUB_STEP_SUMMARY not set)");
        }
        for p in &self.problems {
            summary.push_str("; ");
            summary.push_str(p);
        }
        s.summary = scrub(&summary);
        let comment = match &self.posting {
            Posting::Posted(o, check) => {
                let mut v = serde_json::to_value(o).unwrap_or_default();
                v["posted"] = true.into();
                if let Some(c) = check {
                    v["checkRun"] = scrub(c).into();
                }
                v
            }
            Posting::Skipped(w) => serde_json::json!({"posted": false, "reason": scrub(w)}),
            Posting::Forbidden(w) => serde_json::json!({"posted": false, "forbidden": true, "reason": scrub(w)}),
            Posting::Failed(w) => serde_json::json!({"posted": false, "error": scrub(w)}),
        };
        s.data = serde_json::json!({
            "comment": comment,
            "summaryWritten": self.summary_written,
            "annotations": self.annotations,
            "outputs": self.outputs,
        });
        s
    }
}
