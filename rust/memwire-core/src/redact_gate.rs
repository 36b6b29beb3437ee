//! Redaction's gate: whether any redaction rule could change a text. The specification is
//! `memwire.redact._may_redact` (Python), which tests/security/test_redact_differential.py
//! proves equal to one substring test per literal; this is that expression evaluated in one
//! pass per text instead of one scan per literal. It is not part of the ranking contract.
//!
//! Python tests some literals on `text.lower()`. Every literal is ASCII, and the only non-ASCII
//! characters whose `str.lower()` holds ASCII are U+212A (Kelvin sign, to "k") and U+0130 (to
//! "i" + U+0307), which the lowering below maps the same way; any other non-ASCII character
//! stays non-ASCII, and an ASCII literal is found in UTF-8 bytes exactly where it is found in
//! code points. The test asserts both facts against the running interpreter.

use std::sync::OnceLock;

/// The literals looked for in the text itself (case-sensitive): `_CASED_LITERALS` of the
/// differential test but the two-byte ones (`"AC"` and `"SK"`, searched apart, as `"@"` is),
/// `"://"`, and the literal forms of `_AWS_HINT` (`A` then one of eleven triples) and
/// `_GITLAB_HINT` (`gl`, a kind, `-`).
#[rustfmt::skip]
const CASED: &[&str] = &[
    "://",
    "SG.",
    "eyJ",
    "xox",
    "sk-",
    "shp",
    "dapi",
    "sq0",
    "sig=",
    ":AA",
    "hvs.",
    "AIza",
    "ya29.",
    "dp.pt.",
    "ATATT3",
    "GOCSPX-",
    "pypi-AgE",
    "GR1348941",
    "/api/webhooks/",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "_live_",
    "_test_",
    "whsec_",
    "npm_",
    "hf_",
    "api_org_",
    "_v1_",
    "lin_api_",
    "glsa_",
    "ntn_",
    "PRIVATE KEY",
    "AKIA",
    "ASIA",
    "ABIA",
    "ACCA",
    "AGPA",
    "AIDA",
    "AIPA",
    "ANPA",
    "ANVA",
    "AROA",
    "APKA",
    "glpat-",
    "gldt-",
    "glrt-",
    "glptt-",
    "glft-",
    "glsoat-",
    "glcbt-",
    "glimt-",
    "glagent-",
    "gloas-",
    "glffct-",
];
/// The literals looked for in the lower-cased text.
const LOWER: &[&str] = &[
    "key",
    "secret",
    "token",
    "pass",
    "pwd",
    "basic",
    "bearer",
    "authorization",
    "<private",
    "sharedaccess",
];
/// Looked for in the lower-cased text only when the text holds "=" or ":".
const LOWER_ASSIGNED: &[&str] = &["auth", "credential"];

/// One list of literals (each at least three bytes long), found by their first three bytes:
/// a bitmap of those triples, hashed to 16 bits (8 KiB), is one lookup per position, and only
/// a position whose triple may begin a literal compares the few literals sharing its first
/// byte (the list is sorted; `first` holds each byte's range).
struct Literals {
    starts: Box<[u64; 1024]>,
    list: Vec<(&'static [u8], bool)>,
    first: Box<[(u8, u8); 256]>,
}

fn triple(a: u8, b: u8, c: u8) -> usize {
    let key = u32::from(a) << 16 | u32::from(b) << 8 | u32::from(c);
    (key.wrapping_mul(0x9E37_79B1) >> 16) as usize
}

impl Literals {
    /// `assigned` literals count only when `assigned` is passed to [`Literals::found`].
    fn new(plain: &[&'static str], assigned: &[&'static str]) -> Literals {
        let mut list: Vec<(&'static [u8], bool)> = plain
            .iter()
            .map(|lit| (lit.as_bytes(), false))
            .chain(assigned.iter().map(|lit| (lit.as_bytes(), true)))
            .collect();
        list.sort_unstable();
        let mut starts = Box::new([0u64; 1024]);
        let mut first = Box::new([(0u8, 0u8); 256]);
        for (i, (lit, _)) in list.iter().enumerate() {
            let key = triple(lit[0], lit[1], lit[2]);
            starts[key >> 6] |= 1 << (key & 63);
            let i = u8::try_from(i).expect("fewer than 256 literals");
            let range = &mut first[usize::from(lit[0])];
            *range = if range.1 == 0 { (i, 1) } else { (range.0, range.1 + 1) };
        }
        Literals { starts, list, first }
    }

    fn found(&self, hay: &[u8], assigned: bool) -> bool {
        let n = hay.len();
        (2..n).any(|i| {
            let key = triple(hay[i - 2], hay[i - 1], hay[i]);
            self.starts[key >> 6] & (1 << (key & 63)) != 0 && self.starts_at(hay, i - 2, assigned)
        })
    }

    /// Whether a literal starts at `hay[i]` (kept out of the scanning loop: rarely reached).
    #[inline(never)]
    fn starts_at(&self, hay: &[u8], i: usize, assigned: bool) -> bool {
        let (at, len) = self.first[usize::from(hay[i])];
        let at = usize::from(at);
        self.list[at..at + usize::from(len)]
            .iter()
            .any(|&(lit, only_assigned)| (assigned || !only_assigned) && hay[i..].starts_with(lit))
    }
}

struct Needles {
    cased: Literals,
    lower: Literals,
}

fn needles() -> &'static Needles {
    static NEEDLES: OnceLock<Needles> = OnceLock::new();
    NEEDLES.get_or_init(|| Needles {
        cased: Literals::new(CASED, &[]),
        lower: Literals::new(LOWER, LOWER_ASSIGNED),
    })
}

/// `\.[A-Za-z0-9_-]{6}\.`, the Discord bot token's middle part (`_DISCORD_HINT`).
fn discord_hint(t: &[u8]) -> bool {
    let class = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    memchr::memchr_iter(b'.', t)
        .any(|i| t.len() > i + 7 && t[i + 1..i + 7].iter().all(|&b| class(b)) && t[i + 7] == b'.')
}

/// `text.lower()` as far as ASCII literals can tell (see the module's comment), into `out`.
fn lower_into(text: &str, out: &mut Vec<u8>) {
    out.clear();
    if text.is_ascii() {
        out.extend_from_slice(text.as_bytes());
        out.make_ascii_lowercase();
        return;
    }
    let mut buf = [0u8; 4];
    for ch in text.chars() {
        match ch {
            '\u{212a}' => out.push(b'k'),
            '\u{0130}' => out.extend_from_slice("i\u{307}".as_bytes()),
            c if c.is_ascii() => out.push(c.to_ascii_lowercase() as u8),
            c => out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
        }
    }
}

/// Whether a redaction rule could change `text` (`memwire.redact._may_redact`).
pub fn may_redact(text: &str) -> bool {
    let mut lo = Vec::new();
    may_redact_with(text, &mut lo)
}

/// [`may_redact`] with a caller's buffer for the lower-cased text (one per batch).
pub fn may_redact_with(text: &str, lo: &mut Vec<u8>) -> bool {
    let t = text.as_bytes();
    if t.iter().filter(|b| b.is_ascii_digit()).count() >= 9 {
        return true;
    }
    let has = |b: u8| memchr::memchr(b, t).is_some();
    let needles = needles();
    if has(b'@')
        || memchr::memmem::find(t, b"AC").is_some()
        || memchr::memmem::find(t, b"SK").is_some()
        || needles.cased.found(t, false)
        || discord_hint(t)
    {
        return true;
    }
    lower_into(text, lo);
    needles.lower.found(lo, has(b'=') || has(b':'))
}

/// [`may_redact`] of each text.
pub fn may_redact_many<S: AsRef<str>>(texts: &[S]) -> Vec<bool> {
    let mut lo = Vec::new();
    texts.iter().map(|t| may_redact_with(t.as_ref(), &mut lo)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_passes_and_literals_stop() {
        assert!(!may_redact("The user asked about the weather in Paris, then booked a table."));
        for hit in [
            "my KEY",
            "a\u{212a}ey",
            "x@y",
            "123456789",
            "AKIAxx",
            "glpat-x",
            "a.abcdef.b",
            "Auth: x",
            "CREDENTIAL=",
            "<PRIVATE",
            "x ghp_",
            "sig=",
        ] {
            assert!(may_redact(hit), "{hit}");
        }
        for miss in ["12345678", "glpat", "a.abcde.b", "auth", "credential", "gl-pat-", "\u{0130}"]
        {
            assert!(!may_redact(miss), "{miss}");
        }
    }
}
