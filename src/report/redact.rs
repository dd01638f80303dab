//! The one place credentials are cut out of text bundlegate prints or
//! writes: reports (every format), error messages, logs, PR bodies.
//!
//! Tokens held in the environment are never formatted in the first place;
//! this catches the ones that travel inside values the user supplies or a
//! server echoes: URL userinfo (`http://user:secret@host`), signed query
//! parameters (`X-Amz-Signature=…`, `token=…`, Azure `sig=…`) and
//! `Authorization` headers quoted in an error. Everything else is left
//! byte-for-byte alone, so an S3 XML error body (`<?xml …?><Error>…`) stays
//! readable.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};

/// Shown where a credential was.
pub(crate) const MASK: &str = "***";

/// `scheme://userinfo@`: the userinfo ends at the last `@` before the host's
/// end (a password may itself contain `@`), never crossing `/ ? #` or space.
/// No word boundary before the scheme: `_http://u:p@` or `x=ahttp://u:p@`
/// glued to other text is a URL to the client that reads it all the same.
static USERINFO: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)([a-z][a-z0-9+.\-]*://)([^/?#\s@'\x22<>]*@)+").expect("static regex"));

/// `user:password@host` without a scheme (HTTP clients' debug logs print
/// connection-pool keys this way).
static BARE_USERINFO: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(^|[\s(,"'=])[^\s/@:'"()<>,]+:[^\s/@'"()<>,]+@"#).expect("static regex"));

/// A query or form parameter whose value is a credential.
static PARAM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)([?&;](?:x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|signature|sig|token|access_token|id_token|refresh_token|auth|api_key|apikey|key|password|passwd|secret|client_secret|code)=)[^&#\s'\x22<>]*",
    )
    .expect("static regex")
});

/// `Authorization: Bearer …` / `"authorization": "token …"` / `Proxy-Authorization=…`.
static AUTH_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)((?:proxy-)?authorization\x22?\s*[:=]\s*\x22?)[^\x22\r\n,}]*"#).expect("static regex")
});

/// A bare bearer credential, e.g. in a debug-printed header map.
static SCHEME_TOKEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(Bearer|bearer|BEARER)\s+[A-Za-z0-9._~+/=\-]{8,}").expect("static regex"));

/// `text` with every credential replaced by [`MASK`]; borrowed when clean.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    let mut apply = |re: &Regex, f: &dyn Fn(&Captures) -> String| {
        if re.is_match(&out) {
            out = Cow::Owned(re.replace_all(&out, |c: &Captures| f(c)).into_owned());
        }
    };
    apply(&USERINFO, &|c| format!("{}{MASK}@", &c[1]));
    apply(&BARE_USERINFO, &|c| format!("{}{MASK}@", &c[1]));
    apply(&PARAM, &|c| format!("{}{MASK}", &c[1]));
    apply(&AUTH_HEADER, &|c| format!("{}{MASK}", &c[1]));
    apply(&SCHEME_TOKEN, &|c| format!("{} {MASK}", &c[1]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_is_cut_from_every_url() {
        assert_eq!(redact("GET http://user:secret@host:9000/b?x=1 failed"), "GET http://***@host:9000/b?x=1 failed");
        assert_eq!(redact("endpoint `https://AKIA:p@ss@s3.local` refused"), "endpoint `https://***@s3.local` refused");
        assert_eq!(redact("s3://bucket/key@v2"), "s3://bucket/key@v2", "an `@` in the path is not userinfo");
        assert_eq!(redact("url=_http://u:pw@h/x"), "url=_http://***@h/x", "glued to a word character");
        assert_eq!(redact("9https://u:pw@h"), "9https://***@h");
        assert_eq!(redact("mailto-free text a@b"), "mailto-free text a@b");
        assert_eq!(
            redact(r#"checkout for ("http", robot:pw@127.0.0.1:9)"#),
            r#"checkout for ("http", ***@127.0.0.1:9)"#
        );
    }

    #[test]
    fn signed_query_parameters_and_headers_are_cut() {
        let r =
            redact("https://h/o?X-Amz-Algorithm=AWS4&X-Amz-Credential=AKIA%2F1&X-Amz-Signature=abcdef&partNumber=1");
        assert_eq!(r, "https://h/o?X-Amz-Algorithm=AWS4&X-Amz-Credential=***&X-Amz-Signature=***&partNumber=1");
        assert_eq!(redact("u?token=ghp_x&y=2"), "u?token=***&y=2");
        assert_eq!(redact("authorization: Bearer ghp_abcdefgh1234"), "authorization: ***");
        assert_eq!(redact(r#"{"Authorization": "token ghp_abc", "x": 1}"#), r#"{"Authorization": "***", "x": 1}"#);
        assert_eq!(redact("sent Bearer abcdefgh12345678 to"), "sent Bearer *** to");
    }

    #[test]
    fn s3_xml_error_bodies_stay_readable() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message><Key>llm/v2/model.safetensors</Key></Error>"#;
        assert_eq!(redact(xml), xml);
        assert!(matches!(redact("plain text"), Cow::Borrowed(_)));
    }
}
