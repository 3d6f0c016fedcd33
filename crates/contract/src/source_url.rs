//! `SourceUrl`: a normalized public HTTP(S) URL (SPEC §6). The only way to
//! build one is [`SourceUrl::parse`], so every stored URL went through it.

use super::ip::{self, NonPublic};
use std::fmt;
use url::{Host, Url};

pub const MAX_SOURCE_URL_CHARS: usize = 2048;

/// Special-use names that never reach a public web page.
const SPECIAL_USE_SUFFIXES: [&str; 11] = [
    "localhost",
    "local",
    "internal",
    "test",
    "example",
    "invalid",
    "onion",
    "alt",
    "home.arpa",
    // Reverse-DNS and infrastructure names: not web hosts.
    "arpa",
    "lan",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceUrl(Url);

/// Development-only relaxation (`ALLOW_PRIVATE_SOURCE_URLS`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourceUrlPolicy {
    pub allow_private: bool,
}

/// Why a source URL was refused; `code()` is the field-level error code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceUrlError {
    Empty,
    TooLong,
    WhitespaceOrControl,
    /// A character no SQS message may carry (`U+FFFE`, `U+FFFF`, …).
    UnsupportedCharacter,
    Malformed(String),
    UnsupportedScheme(String),
    Userinfo,
    Port(u16),
    NonPublicAddress(&'static str),
    NonPublicHost(String),
    InvalidHost(String),
}

impl SourceUrlError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Empty | Self::Malformed(_) => "invalid_url",
            Self::TooLong => "too_long",
            Self::WhitespaceOrControl => "whitespace_or_control",
            Self::UnsupportedCharacter => "unsupported_character",
            Self::UnsupportedScheme(_) => "unsupported_scheme",
            Self::Userinfo => "userinfo_not_allowed",
            Self::Port(_) => "port_not_allowed",
            Self::NonPublicAddress(_) => "non_public_address",
            Self::NonPublicHost(_) => "non_public_host",
            Self::InvalidHost(_) => "invalid_host",
        }
    }
}

impl fmt::Display for SourceUrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(f, "sourceUrl is empty"),
            Self::TooLong => write!(f, "sourceUrl is longer than {MAX_SOURCE_URL_CHARS} characters"),
            Self::WhitespaceOrControl => {
                write!(f, "sourceUrl contains whitespace or a control character")
            }
            Self::UnsupportedCharacter => write!(f, "sourceUrl contains a character a queue message cannot carry"),
            Self::Malformed(why) => write!(f, "sourceUrl is not a valid URL: {why}"),
            Self::UnsupportedScheme(s) => {
                write!(f, "scheme '{s}' is not allowed; use http or https")
            }
            Self::Userinfo => write!(f, "sourceUrl must not contain a user name or password"),
            Self::Port(p) => write!(f, "port {p} is not allowed; only 80 and 443"),
            Self::NonPublicAddress(range) => {
                write!(f, "the host address is not publicly reachable ({range})")
            }
            Self::NonPublicHost(why) => write!(f, "the host is not a public name: {why}"),
            Self::InvalidHost(why) => write!(f, "the host name is not valid: {why}"),
        }
    }
}

impl std::error::Error for SourceUrlError {}

impl From<NonPublic> for SourceUrlError {
    fn from(NonPublic(range): NonPublic) -> Self {
        Self::NonPublicAddress(range)
    }
}

impl SourceUrl {
    pub fn parse(input: &str, policy: SourceUrlPolicy) -> Result<Self, SourceUrlError> {
        let trimmed = input.trim();
        if trimmed.is_empty() {
            return Err(SourceUrlError::Empty);
        }
        if trimmed.chars().count() > MAX_SOURCE_URL_CHARS {
            return Err(SourceUrlError::TooLong);
        }
        // WHATWG parsing silently drops tabs and newlines anywhere, even inside the host.
        if trimmed.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(SourceUrlError::WhitespaceOrControl);
        }
        if !trimmed.chars().all(crate::job::sqs_can_carry) {
            return Err(SourceUrlError::UnsupportedCharacter);
        }
        let mut url = Url::parse(trimmed).map_err(|e| match e {
            url::ParseError::IdnaError => SourceUrlError::InvalidHost("not a valid internationalized name".into()),
            other => SourceUrlError::Malformed(other.to_string()),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(SourceUrlError::UnsupportedScheme(url.scheme().to_owned()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(SourceUrlError::Userinfo);
        }
        match url.port_or_known_default() {
            Some(80 | 443) => {}
            Some(p) => return Err(SourceUrlError::Port(p)),
            None => return Err(SourceUrlError::Malformed("no port".into())),
        }
        let host = match url.host() {
            Some(Host::Ipv4(v4)) => {
                if !policy.allow_private {
                    ip::check_public_v4(v4)?;
                }
                None
            }
            Some(Host::Ipv6(v6)) => {
                if !policy.allow_private {
                    ip::check_public_v6(v6)?;
                }
                None
            }
            Some(Host::Domain(domain)) => Some(check_domain(domain, policy)?),
            None => return Err(SourceUrlError::Malformed("missing host".into())),
        };
        if let Some(host) = host {
            url.set_host(Some(&host))
                .map_err(|e| SourceUrlError::InvalidHost(e.to_string()))?;
        }
        url.set_fragment(None);
        // Percent-encoding can lengthen the URL; the stored form obeys the same
        // limit, so it is itself an acceptable input (found by fuzzing).
        if url.as_str().len() > MAX_SOURCE_URL_CHARS {
            return Err(SourceUrlError::TooLong);
        }
        Ok(Self(url))
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The host name to resolve, when the host is a name rather than an IP literal.
    pub fn domain(&self) -> Option<&str> {
        self.0.domain()
    }
}

impl fmt::Display for SourceUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Checks a host name (already IDNA-mapped and lowercased by the URL parser)
/// and returns it with one trailing dot dropped.
fn check_domain(domain: &str, policy: SourceUrlPolicy) -> Result<String, SourceUrlError> {
    let name = domain.strip_suffix('.').unwrap_or(domain);
    if name.is_empty() || name.len() > 253 {
        return Err(SourceUrlError::InvalidHost("length".into()));
    }
    for label in name.split('.') {
        check_label(label)?;
    }
    if policy.allow_private {
        return Ok(name.to_owned());
    }
    if !name.contains('.') {
        return Err(SourceUrlError::NonPublicHost(
            "single-label names are not public".into(),
        ));
    }
    if let Some(suffix) = SPECIAL_USE_SUFFIXES
        .iter()
        .find(|s| name == **s || name.ends_with(&format!(".{s}")))
    {
        return Err(SourceUrlError::NonPublicHost(format!(
            ".{suffix} is a special-use name"
        )));
    }
    match psl::domain(name.as_bytes()) {
        Some(d) if d.suffix().is_known() => Ok(name.to_owned()),
        Some(_) => Err(SourceUrlError::NonPublicHost("unknown top-level domain".into())),
        None => Err(SourceUrlError::NonPublicHost("the name is a public suffix".into())),
    }
}

/// LDH labels (letters, digits, hyphen), 1–63 octets, no hyphen at either end,
/// no `--` at positions 3–4 except a valid `xn--` A-label.
fn check_label(label: &str) -> Result<(), SourceUrlError> {
    let invalid = |why: &str| {
        Err(SourceUrlError::InvalidHost(format!(
            "label '{}': {why}",
            shorten(label)
        )))
    };
    if label.is_empty() {
        return invalid("empty label");
    }
    if label.len() > 63 {
        return invalid("longer than 63 characters");
    }
    if !label
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return invalid("only letters, digits and hyphens are allowed");
    }
    if label.starts_with('-') || label.ends_with('-') {
        return invalid("must not start or end with a hyphen");
    }
    if label.get(2..4) == Some("--") {
        if !label.starts_with("xn--") {
            return invalid("reserved hyphen positions");
        }
        let (unicode, result) = idna::domain_to_unicode(label);
        if result.is_err() || unicode == label || idna::domain_to_ascii(&unicode).ok().as_deref() != Some(label) {
            return invalid("not a valid internationalized label");
        }
    }
    Ok(())
}

fn shorten(label: &str) -> String {
    label.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const STRICT: SourceUrlPolicy = SourceUrlPolicy { allow_private: false };

    /// (input, Ok(normalized) | Err(code))
    const CASES: &[(&str, Result<&str, &str>)] = &[
        // Benign, with their exact stored form.
        ("https://example.com/pricing", Ok("https://example.com/pricing")),
        (
            "https://Example.COM:443/a/../b/./c?q=1#frag",
            Ok("https://example.com/b/c?q=1"),
        ),
        ("https://münchen.de/über", Ok("https://xn--mnchen-3ya.de/%C3%BCber")),
        ("  https://example.com/x  ", Ok("https://example.com/x")),
        ("http://example.com", Ok("http://example.com/")),
        ("http://example.com:80/", Ok("http://example.com/")),
        ("https://example.com:443", Ok("https://example.com/")),
        ("http://example.com:443/", Ok("http://example.com:443/")),
        ("https://example.com./path", Ok("https://example.com/path")),
        ("https://www.example.co.uk/", Ok("https://www.example.co.uk/")),
        ("https://foo.github.io/page", Ok("https://foo.github.io/page")),
        ("HTTPS://EXAMPLE.COM/Path", Ok("https://example.com/Path")),
        ("https://example.com/?q=%20x", Ok("https://example.com/?q=%20x")),
        ("https://example.com/#", Ok("https://example.com/")),
        ("https://example.com/%7Efoo", Ok("https://example.com/%7Efoo")),
        (
            "https://sub-domain.example.org/x?y",
            Ok("https://sub-domain.example.org/x?y"),
        ),
        ("https://xn--mnchen-3ya.de/", Ok("https://xn--mnchen-3ya.de/")),
        ("https://EXAMPLE.com/ä?ü=1", Ok("https://example.com/%C3%A4?%C3%BC=1")),
        ("https://8.8.8.8/", Ok("https://8.8.8.8/")),
        (
            "https://[2606:4700:4700::1111]/dns",
            Ok("https://[2606:4700:4700::1111]/dns"),
        ),
        ("https://134744072/", Ok("https://8.8.8.8/")),
        ("https://ｅｘａｍｐｌｅ.com/", Ok("https://example.com/")),
        ("https://example.com/a/%2e%2e/b", Ok("https://example.com/b")),
        ("http://1.1.1.1:80", Ok("http://1.1.1.1/")),
        // Schemes, userinfo, ports.
        ("ftp://example.com/", Err("unsupported_scheme")),
        ("file:///etc/passwd", Err("unsupported_scheme")),
        ("javascript:alert(1)", Err("unsupported_scheme")),
        ("data:text/html,hi", Err("unsupported_scheme")),
        ("gopher://example.com/", Err("unsupported_scheme")),
        ("https://user:pass@example.com/", Err("userinfo_not_allowed")),
        ("https://user@example.com/", Err("userinfo_not_allowed")),
        ("https://example.com:8080/", Err("port_not_allowed")),
        ("https://example.com:22/", Err("port_not_allowed")),
        // Malformed, too long, whitespace and controls.
        ("", Err("invalid_url")),
        ("   ", Err("invalid_url")),
        ("example.com", Err("invalid_url")),
        ("https://", Err("invalid_url")),
        ("https://exa mple.com/", Err("whitespace_or_control")),
        ("https://exa\tmple.com/", Err("whitespace_or_control")),
        ("https://example.com/\npath", Err("whitespace_or_control")),
        ("https://example.com/\u{0}", Err("whitespace_or_control")),
        ("https://example.com/\u{7f}", Err("whitespace_or_control")),
        ("https://example.com/a\u{2028}b", Err("whitespace_or_control")),
        ("https://[::1/", Err("invalid_url")),
        ("https://example.com:99999/", Err("invalid_url")),
        // IPv4 literals in every spelling.
        ("http://127.0.0.1/", Err("non_public_address")),
        ("http://2130706433/", Err("non_public_address")),
        ("http://0x7f.1/", Err("non_public_address")),
        ("http://0177.0.0.1/", Err("non_public_address")),
        ("http://１２７.０.０.１/", Err("non_public_address")),
        ("http://%31%32%37.0.0.1/", Err("non_public_address")),
        ("http://0/", Err("non_public_address")),
        ("http://10.0.0.1/", Err("non_public_address")),
        ("http://169.254.169.254/latest/meta-data", Err("non_public_address")),
        ("http://192.168.0.1/", Err("non_public_address")),
        ("http://100.64.1.1/", Err("non_public_address")),
        ("http://224.0.0.1/", Err("non_public_address")),
        ("http://255.255.255.255/", Err("non_public_address")),
        ("http://240.1.2.3/", Err("non_public_address")),
        ("http://198.18.0.1/", Err("non_public_address")),
        // IPv6 literals and embeddings.
        ("http://[::1]/", Err("non_public_address")),
        ("http://[::]/", Err("non_public_address")),
        ("http://[fe80::1]/", Err("non_public_address")),
        ("http://[fd00::1]/", Err("non_public_address")),
        ("http://[::ffff:127.0.0.1]/", Err("non_public_address")),
        ("http://[::ffff:7f00:1]/", Err("non_public_address")),
        ("http://[64:ff9b::a00:1]/", Err("non_public_address")),
        ("http://[2002:7f00:1::]/", Err("non_public_address")),
        (
            "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
            Err("non_public_address"),
        ),
        ("http://[2001:db8::1]/", Err("non_public_address")),
        ("http://[ff02::1]/", Err("non_public_address")),
        // Names.
        ("http://localhost/", Err("non_public_host")),
        ("http://LOCALHOST./", Err("non_public_host")),
        ("http://api.localhost/", Err("non_public_host")),
        ("http://intranet/", Err("non_public_host")),
        ("http://printer.local/", Err("non_public_host")),
        ("http://db.internal/", Err("non_public_host")),
        ("http://site.test/", Err("non_public_host")),
        ("http://www.example/", Err("non_public_host")),
        ("http://x.invalid/", Err("non_public_host")),
        (
            "http://duckduckgogg42xjoc72x3sjasowoarfbgcmvfimaftt6twagswzczad.onion/",
            Err("non_public_host"),
        ),
        ("http://foo.alt/", Err("non_public_host")),
        ("http://router.home.arpa/", Err("non_public_host")),
        ("http://1.0.0.127.in-addr.arpa/", Err("non_public_host")),
        ("http://example.notatld/", Err("non_public_host")),
        ("http://co.uk/", Err("non_public_host")),
        ("http://*.example.com/", Err("invalid_host")),
        ("http://xn--zz.com/", Err("invalid_host")),
        ("http://under_score.example.com/", Err("invalid_host")),
        ("http://-lead.example.com/", Err("invalid_host")),
        ("http://trail-.example.com/", Err("invalid_host")),
        ("http://ab--cd.example.com/", Err("invalid_host")),
        ("http://a..b.com/", Err("invalid_host")),
        ("http://example.com../", Err("invalid_host")),
    ];

    #[test]
    fn table_of_cases() {
        assert!(CASES.len() >= 50);
        let mut failures = Vec::new();
        for (input, expected) in CASES {
            let got = SourceUrl::parse(input, STRICT);
            let got = got.as_ref().map(|u| u.as_str()).map_err(|e| e.code());
            if got != *expected {
                failures.push(format!("{input:?}: expected {expected:?}, got {got:?}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn over_2048_chars_is_too_long() {
        let long = format!("https://example.com/{}", "a".repeat(2048));
        assert_eq!(SourceUrl::parse(&long, STRICT).unwrap_err().code(), "too_long");
        let exact = format!("https://example.com/{}", "a".repeat(2048 - 20));
        assert!(SourceUrl::parse(&exact, STRICT).is_ok());
        // Short enough as typed, too long once percent-encoded.
        let expands = format!("https://example.com/{}", "ü".repeat(400));
        assert!(expands.chars().count() < 2048);
        assert_eq!(SourceUrl::parse(&expands, STRICT).unwrap_err().code(), "too_long");
    }

    #[test]
    fn development_policy_accepts_private_hosts() {
        let dev = SourceUrlPolicy { allow_private: true };
        for input in [
            "http://127.0.0.1/",
            "http://localhost/",
            "http://[::1]/",
            "http://intranet/",
        ] {
            assert!(SourceUrl::parse(input, dev).is_ok(), "{input}");
        }
        assert_eq!(
            SourceUrl::parse("http://localhost:8080/", dev).unwrap_err().code(),
            "port_not_allowed"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn never_panics(input in "\\PC{0,80}") {
            let _ = SourceUrl::parse(&input, STRICT);
        }

        #[test]
        fn never_panics_on_url_like_input(
            scheme in "(https?|ftp|HTTP)",
            host in "[a-zA-Z0-9.\\-_%:\\[\\]@ｅ１]{0,30}",
            path in "[a-zA-Z0-9./%?#&=ü]{0,30}",
        ) {
            let _ = SourceUrl::parse(&format!("{scheme}://{host}/{path}"), STRICT);
        }

        #[test]
        fn accepted_output_is_a_fixed_point(
            sub in "[a-z0-9]{1,10}",
            tld in "(com|org|de|co\\.uk|io|jp)",
            port in "(|:80|:443)",
            path in "[a-zA-Z0-9./%?#&=ü~-]{0,40}",
        ) {
            let input = format!("https://{sub}.example.{tld}{port}/{path}");
            if let Ok(url) = SourceUrl::parse(&input, STRICT) {
                let again = SourceUrl::parse(url.as_str(), STRICT).expect("normalized URL re-parses");
                prop_assert_eq!(again.as_str(), url.as_str());
                prop_assert!(!url.as_str().contains('#'));
            }
        }
    }
}
