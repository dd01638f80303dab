//! The golden set's outside texts: the JSONL file a bundle names, and the
//! candidate's answers (OpenAI chat/completions, KServe v2). Pure: the
//! request is sent by `adapters::prom::golden_call`.

use anyhow::Result;
use serde_json::Value;

use crate::checks::canary::golden::{GoldenAnswer, GoldenApi, GoldenSample};
use crate::parse::prom::truncate;

/// Parse a golden JSONL file; errors name the line, column and kind of
/// problem but never quote the file (the bundle names it: it may be any
/// file of the repository). A key given twice in a request is refused.
pub fn parse_golden(text: &str) -> Result<Vec<GoldenSample>> {
    // Reviewed text: a line break or bidi control the diff does not show is
    // refused before the lines are split (its text not quoted either).
    if let Err(g) = crate::yaml_guard::check_reviewed_chars(text) {
        let what = g.message.split(':').next().unwrap_or("a character a reviewer does not see");
        anyhow::bail!("line {} column {}: not a golden request ({what}; its text is not quoted)", g.line, g.column);
    }
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
        .map(|(i, l)| {
            if let Err(g) = crate::yaml_guard::check_json(l) {
                anyhow::bail!(
                    "line {} column {}: not a golden request (duplicate key; its text is not quoted)",
                    i + 1,
                    g.column
                );
            }
            crate::serde_strict::from_json_str(l).map_err(|e| {
                let kind =
                    if e.is_syntax() || e.is_eof() { "not JSON" } else { crate::bundle::problem_kind(&e.to_string()) };
                anyhow::anyhow!(
                    "line {} column {}: not a golden request ({kind}; its text is not quoted)",
                    i + 1,
                    e.column()
                )
            })
        })
        .collect()
}

/// Read the generated text and finish reason out of an answer body, by
/// API. A body that is not the expected JSON shape is kept (up to 2000
/// characters) as `raw`, for the report. So is a body with a key given
/// twice: serde_json keeps the last copy, another client the first, so what
/// the model answered is not known and is never judged as an answer.
pub fn answer(api: GoldenApi, status: u16, latency_ms: u64, text: &str) -> GoldenAnswer {
    let v: Option<Value> =
        if crate::yaml_guard::check_json(text).is_ok() { serde_json::from_str(text).ok() } else { None };
    let (content, finish_reason) = match (&v, api) {
        (Some(v), GoldenApi::OpenAiChat) => {
            let c = &v["choices"][0];
            (c["message"]["content"].as_str().map(String::from), c["finish_reason"].as_str().map(String::from))
        }
        (Some(v), GoldenApi::OpenAiCompletions) => {
            let c = &v["choices"][0];
            (c["text"].as_str().map(String::from), c["finish_reason"].as_str().map(String::from))
        }
        (Some(v), GoldenApi::KserveV2) => {
            // KServe v2 has no finish reason field; an output tensor named
            // `finish_reason` is the convention we read.
            let outs = v["outputs"].as_array().cloned().unwrap_or_default();
            let named =
                |n: &str| outs.iter().find(|o| o["name"] == n).and_then(|o| o["data"][0].as_str().map(String::from));
            let text = outs.iter().find(|o| o["name"] != "finish_reason").and_then(|o| match &o["data"][0] {
                Value::String(s) => Some(s.clone()),
                Value::Null => None,
                other => Some(other.to_string()),
            });
            (text, named("finish_reason"))
        }
        (Some(v), GoldenApi::OpenAiEmbeddings) => {
            // The vector as its JSON text: the golden set compares it by cosine.
            let e = &v["data"][0]["embedding"];
            (e.as_array().map(|_| e.to_string()), None)
        }
        (None, _) => (None, None),
    };
    let raw = if content.is_none() { Some(truncate(text, 2000)) } else { None };
    GoldenAnswer { status, latency_ms, content, finish_reason, raw }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_golden_file_parses() {
        let t = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/llm-scratch/v2/golden.jsonl"))
            .unwrap();
        let g = parse_golden(&t).unwrap();
        assert_eq!(g.len(), 2);
        assert!(g[0].expect.json);
        assert!(parse_golden("{\"name\": 1}").unwrap_err().to_string().contains("line 1"));
    }

    /// Blank and `//` lines are skipped but counted; each refusal names the
    /// line, the column and the kind of problem, and never quotes the text
    /// (the bundle may name any file of the repository).
    #[test]
    fn golden_lines_are_refused_by_line_column_and_kind_without_their_text() {
        let ok = r#"{"name": "a", "api": "openai-chat", "request": {}, "expect": {}}"#;
        let file = format!("\n   \n// a comment\n  // another\n{ok}\n\n{ok}\n");
        assert_eq!(parse_golden(&file).unwrap().len(), 2);
        let err = |line: &str| parse_golden(&format!("// c\n\n{line}\n")).unwrap_err().to_string();
        let e = err(r#"{"name": "SECRET", "name": "b"}"#);
        assert_eq!(e, "line 3 column 25: not a golden request (duplicate key; its text is not quoted)");
        let e = err(r#"{"name": "SECRET""#);
        assert_eq!(e, "line 3 column 17: not a golden request (not JSON; its text is not quoted)");
        let e = err(r#"{"name": "SECRET", "api": "openai-chat", "request": {}, "expect": {}, "extra": 1}"#);
        assert!(e.starts_with("line 3 column ") && e.ends_with("(unknown field; its text is not quoted)"), "{e}");
        let e = err(r#"{"name": 7, "api": "openai-chat", "request": {}, "expect": {}}"#);
        assert!(e.ends_with("(wrong type; its text is not quoted)") && !e.contains("SECRET"), "{e}");
    }

    /// What each API's answer yields: the text and the finish reason, and
    /// the body kept (cut at 2,000 characters) only when there is no text;
    /// the status and the latency as given.
    #[test]
    fn answers_keep_status_latency_and_the_body_only_without_text() {
        let c = answer(GoldenApi::OpenAiCompletions, 201, 17, r#"{"choices":[{"text":"t","finish_reason":"length"}]}"#);
        assert_eq!(
            (c.status, c.latency_ms, c.content.as_deref(), c.finish_reason.as_deref(), c.raw),
            (201, 17, Some("t"), Some("length"), None)
        );
        // A chat answer read as completions has no `text`: no answer.
        let chat = r#"{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}"#;
        let c = answer(GoldenApi::OpenAiCompletions, 200, 1, chat);
        assert_eq!((c.content, c.finish_reason.as_deref(), c.raw.as_deref()), (None, Some("stop"), Some(chat)));
        // KServe v2: the first output not named finish_reason is the text,
        // whatever the order; a number is its JSON text; null is no text.
        let v2 = answer(
            GoldenApi::KserveV2,
            200,
            1,
            r#"{"outputs":[{"name":"finish_reason","data":["stop"]},{"name":"n","data":[42]},{"name":"t","data":["x"]}]}"#,
        );
        assert_eq!((v2.content.as_deref(), v2.finish_reason.as_deref()), (Some("42"), Some("stop")));
        let none = r#"{"outputs":[{"name":"t","data":[null]}]}"#;
        let v2 = answer(GoldenApi::KserveV2, 200, 1, none);
        assert_eq!((v2.content, v2.finish_reason, v2.raw.as_deref()), (None, None, Some(none)));
        let e = answer(GoldenApi::OpenAiEmbeddings, 200, 1, r#"{"data":[{"embedding":[0.5,-1.0]}]}"#);
        assert_eq!((e.content.as_deref(), e.raw), (Some("[0.5,-1.0]"), None));
        let e = answer(GoldenApi::OpenAiEmbeddings, 200, 1, r#"{"data":[{"embedding":"AAAA"}]}"#);
        assert_eq!(e.content, None, "a base64 embedding is not read as a vector");
        let long = "é".repeat(2500);
        let cut = answer(GoldenApi::OpenAiChat, 500, 1, &long).raw.unwrap();
        assert_eq!(cut, format!("{}…", "é".repeat(2000)));
    }

    #[test]
    fn answers_are_read_by_api() {
        let chat = answer(
            GoldenApi::OpenAiChat,
            200,
            5,
            r#"{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}"#,
        );
        assert_eq!(
            (chat.content.as_deref(), chat.finish_reason.as_deref(), chat.raw),
            (Some("hi"), Some("stop"), None)
        );
        let v2 = answer(
            GoldenApi::KserveV2,
            200,
            5,
            r#"{"outputs":[{"name":"text","data":["x"]},{"name":"finish_reason","data":["length"]}]}"#,
        );
        assert_eq!((v2.content.as_deref(), v2.finish_reason.as_deref()), (Some("x"), Some("length")));
        let broken = answer(GoldenApi::OpenAiCompletions, 502, 5, "<html>bad gateway</html>");
        // Two contents: which one the model "said" depends on the reader.
        let twice = r#"{"choices":[{"message":{"content":"wrong","content":"right"},"finish_reason":"stop"}]}"#;
        let dup = answer(GoldenApi::OpenAiChat, 200, 5, twice);
        assert_eq!((dup.content, dup.raw.as_deref()), (None, Some(twice)), "a duplicate key is not an answer");
        assert_eq!((broken.content, broken.raw.as_deref()), (None, Some("<html>bad gateway</html>")));
    }
}
