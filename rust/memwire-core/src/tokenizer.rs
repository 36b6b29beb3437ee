//! Tokenizer version 1 (docs/parity.md, "Tokenizer"): fold, classify, scan, emit, drop, stem.
//!
//! Only the generated UCD 15.0.0 tables are consulted, never `char::is_*` or `to_lowercase`:
//! those follow the compiler's Unicode version and would drift from the Python twin.

use std::cell::RefCell;
use std::hash::BuildHasher;
use std::sync::{Mutex, MutexGuard, OnceLock};

use rustc_hash::FxBuildHasher;

use rust_stemmers::{Algorithm, Stemmer};

use crate::generated::{
    CLASS_CJK, CLASS_JOIN, CLASS_RANGES, CLASS_SEP, CLASS_WORD, FOLD, MAX_TOKEN_CHARS,
};

/// ASCII slice of `CLASS_RANGES`, computed at compile time so the common case skips the search.
static ASCII_CLASS: [u8; 128] = {
    let mut table = [CLASS_SEP; 128];
    let mut i = 0;
    while i < CLASS_RANGES.len() {
        let (lo, hi, class) = CLASS_RANGES[i];
        let mut cp = lo;
        while cp <= hi && cp < 128 {
            table[cp as usize] = class;
            cp += 1;
        }
        i += 1;
    }
    table
};

/// ASCII slice of `FOLD`: `0` marks "folds to itself"; every ASCII entry of FOLD (A-Z) folds
/// to exactly one ASCII byte, which `ascii_fold_table_is_exact` checks.
static ASCII_FOLD: [u8; 128] = {
    let mut table = [0u8; 128];
    let mut i = 0;
    while i < FOLD.len() {
        let (cp, folded) = FOLD[i];
        if cp < 128 {
            let bytes = folded.as_bytes();
            if bytes.len() == 1 && bytes[0] < 128 {
                table[cp as usize] = bytes[0];
            }
        }
        i += 1;
    }
    table
};

/// Class of one (already folded) code point.
#[inline]
pub fn classify(c: char) -> u8 {
    let cp = c as u32;
    if cp < 128 {
        return ASCII_CLASS[cp as usize];
    }
    range_class(CLASS_RANGES, cp)
}

/// The class of `cp` in a sorted, disjoint `(first, last, class)` table; 0 when absent.
pub(crate) fn range_class(table: &[(u32, u32, u8)], cp: u32) -> u8 {
    match table.binary_search_by(|&(lo, hi, _)| {
        if hi < cp {
            std::cmp::Ordering::Less
        } else if lo > cp {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    }) {
        Ok(i) => table[i].2,
        Err(_) => 0,
    }
}

/// Appends the folded form of `c` to `out`.
#[inline]
fn fold_into(c: char, out: &mut String) {
    let cp = c as u32;
    if cp < 128 {
        let f = ASCII_FOLD[cp as usize];
        out.push(if f == 0 { c } else { f as char });
        return;
    }
    match FOLD.binary_search_by_key(&cp, |&(k, _)| k) {
        Ok(i) => out.push_str(FOLD[i].1),
        Err(_) => out.push(c),
    }
}

/// Folds `text` code point by code point (step 1).
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        fold_into(c, &mut out);
    }
    out
}

#[inline]
fn is_stopword(token: &str) -> bool {
    crate::generated::is_stopword(token)
}

/// Snowball English (Porter2), pinned to rust-stemmers 1.2.0: the Python kernel pins
/// snowballstemmer 2.2.0, generated from the same Snowball source (identical on 185k words).
fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// The stem cache: 64 shards of 512 slots. Stemming was 57% of tokenizing the benchmark
/// corpus (callgrind) and words repeat by Zipf's law: on 20,000 of its texts (25,864 distinct
/// words) a direct-mapped cache of 32,768 recent words answers ~92% of tokens (2,048: 65%).
const STEM_SHARDS: usize = 64;
const STEM_SHARD_SLOTS: usize = 512;
/// Longer words (rare) are stemmed every time: slots hold their strings inline.
const STEM_CACHED_BYTES: usize = 22;

/// One slot: a word and its stem, inline (46 bytes; the cache is ~1.5 MB when full).
#[derive(Clone, Copy)]
struct StemSlot {
    word_len: u8,
    stem_len: u8,
    word: [u8; STEM_CACHED_BYTES],
    stem: [u8; STEM_CACHED_BYTES],
}

const EMPTY_SLOT: StemSlot = StemSlot {
    word_len: 0, // stemmable words are never empty, so an empty slot never matches
    stem_len: 0,
    word: [0; STEM_CACHED_BYTES],
    stem: [0; STEM_CACHED_BYTES],
};

/// A direct-mapped cache of `stemmer().stem`, shared by every thread (the kernel tokenizes on
/// many at once with the GIL released), in shards each behind its own lock, held only to read
/// or write one slot, never while stemming. A slot keeps the last word hashed to it. It only
/// ever answers what the stemmer answers for the same word, so it changes no token (tests).
struct StemCache {
    shards: Vec<Mutex<Vec<StemSlot>>>,
    slots: usize, // per shard, a power of two
}

impl StemCache {
    fn new(shards: usize, slots: usize) -> Self {
        debug_assert!(shards.is_power_of_two() && slots.is_power_of_two());
        Self { shards: (0..shards).map(|_| Mutex::new(vec![EMPTY_SLOT; slots])).collect(), slots }
    }

    fn shard(&self, hash: u64) -> MutexGuard<'_, Vec<StemSlot>> {
        let shard = &self.shards[(hash >> 32) as usize & (self.shards.len() - 1)];
        // A panic cannot leave a slot half-written (slots are plain bytes, copied whole).
        shard.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Appends the stem of `word` (non-empty ASCII `a`-`z`) to `out`.
    fn stem_into(&self, word: &str, out: &mut String) {
        let bytes = word.as_bytes();
        if bytes.len() > STEM_CACHED_BYTES {
            out.push_str(&stemmer().stem(word));
            return;
        }
        let hash = FxBuildHasher.hash_one(word);
        let index = hash as usize & (self.slots - 1);
        {
            let shard = self.shard(hash);
            let slot = &shard[index];
            if usize::from(slot.word_len) == bytes.len() && &slot.word[..bytes.len()] == bytes {
                let stem = &slot.stem[..usize::from(slot.stem_len)];
                out.push_str(std::str::from_utf8(stem).expect("stems are ASCII"));
                return;
            }
        }
        let stem = stemmer().stem(word);
        out.push_str(&stem);
        if stem.len() <= STEM_CACHED_BYTES {
            let mut slot = EMPTY_SLOT;
            slot.word_len = bytes.len() as u8;
            slot.word[..bytes.len()].copy_from_slice(bytes);
            slot.stem_len = stem.len() as u8;
            slot.stem[..stem.len()].copy_from_slice(stem.as_bytes());
            self.shard(hash)[index] = slot;
        }
    }
}

fn stem_cache() -> &'static StemCache {
    static CACHE: OnceLock<StemCache> = OnceLock::new();
    CACHE.get_or_init(|| StemCache::new(STEM_SHARDS, STEM_SHARD_SLOTS))
}

/// Step 6 of the contract: only tokens made of ASCII `a`-`z` alone are stemmed, so the
/// stemmer never sees a character whose handling could differ between implementations.
fn stemmable(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_lowercase())
}

/// Reusable buffers, so indexing many documents does not allocate per document.
#[derive(Default)]
pub struct Tokenizer {
    folded: String,
    /// (byte offset in `folded`, class) per folded code point, plus an end sentinel.
    chars: Vec<(u32, u8)>,
    /// The emitted tokens, stemmed, back to back: what [`Tokenizer::spans`] ranges index.
    tokens: String,
    raw: Vec<(u32, u32)>,
}

impl Tokenizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls `emit` with every token of `text`, in order (steps 1-5 of the contract).
    pub fn for_each<F: FnMut(&str)>(&mut self, text: &str, mut emit: F) {
        let mut spans = Vec::new();
        self.spans(text, &mut spans);
        for (a, b) in spans {
            emit(&self.tokens[a as usize..b as usize]);
        }
    }

    /// Folds and classifies `text`, then calls `emit(start, end)` with the byte range of every
    /// kept token in `self.folded`, before stemming.
    fn scan<F: FnMut(usize, usize)>(&mut self, text: &str, mut emit: F) {
        self.folded.clear();
        self.chars.clear();
        for c in text.chars() {
            fold_into(c, &mut self.folded);
        }
        for (offset, c) in self.folded.char_indices() {
            self.chars.push((offset as u32, classify(c)));
        }
        let n = self.chars.len();
        self.chars.push((self.folded.len() as u32, CLASS_SEP));
        let chars = &self.chars;
        let folded = self.folded.as_str();
        // Token [a, b) in code point indices; its length in code points is b - a.
        let mut out = |a: usize, b: usize| {
            if b - a > MAX_TOKEN_CHARS {
                return;
            }
            let (start, end) = (chars[a].0 as usize, chars[b].0 as usize);
            if !is_stopword(&folded[start..end]) {
                emit(start, end);
            }
        };
        let class = |i: usize| chars[i].1;
        let mut i = 0;
        while i < n {
            match class(i) {
                CLASS_WORD => {
                    let start = i;
                    while class(i) == CLASS_WORD {
                        i += 1;
                    }
                    let first_end = i;
                    // A joiner joins only when a word character follows it (the sentinel
                    // at index n is a separator, so i + 1 is always in bounds here).
                    while class(i) == CLASS_JOIN && class(i + 1) == CLASS_WORD {
                        i += 1;
                        while class(i) == CLASS_WORD {
                            i += 1;
                        }
                    }
                    if i == first_end {
                        out(start, i);
                    } else {
                        out(start, i);
                        let mut p = start;
                        while p < i {
                            let q = {
                                let mut q = p;
                                while class(q) == CLASS_WORD {
                                    q += 1;
                                }
                                q
                            };
                            out(p, q);
                            p = q + 1; // skip the joiner
                        }
                    }
                }
                CLASS_CJK => {
                    let start = i;
                    while class(i) == CLASS_CJK {
                        i += 1;
                    }
                    if i - start == 1 {
                        out(start, i);
                    } else {
                        for a in start..i - 1 {
                            out(a, a + 2);
                        }
                    }
                }
                _ => i += 1,
            }
        }
    }

    /// Collects the tokens of `text` as byte ranges of [`Tokenizer::tokens`], in order
    /// (lets the indexer count terms without allocating a string per token).
    pub fn spans(&mut self, text: &str, out: &mut Vec<(u32, u32)>) {
        out.clear();
        let mut raw = std::mem::take(&mut self.raw);
        raw.clear();
        self.scan(text, |a, b| raw.push((a as u32, b as u32)));
        self.tokens.clear();
        for &(a, b) in &raw {
            let token = &self.folded[a as usize..b as usize];
            let start = self.tokens.len() as u32;
            if stemmable(token) {
                stem_cache().stem_into(token, &mut self.tokens);
            } else {
                self.tokens.push_str(token);
            }
            out.push((start, self.tokens.len() as u32));
        }
        self.raw = raw;
    }

    /// The tokens of the last [`Tokenizer::spans`] call, which its ranges index.
    pub fn tokens(&self) -> &str {
        &self.tokens
    }

    /// The tokens of `text` as owned strings.
    pub fn tokenize(&mut self, text: &str) -> Vec<String> {
        let mut tokens = Vec::new();
        self.for_each(text, |t| tokens.push(t.to_owned()));
        tokens
    }
}

thread_local! {
    /// Buffers for the one-call functions below, kept across calls (they grew from empty at
    /// every call: ~9% of tokenizing a short text went to reallocation).
    static BUFFERS: RefCell<Tokenizer> = RefCell::new(Tokenizer::new());
}

/// Buffers grown past this by a long text are dropped after the call, so a thread does not
/// keep a long text's worth of them for good.
const KEPT_BUFFER_BYTES: usize = 64 * 1024;

fn with_buffers<R>(work: impl FnOnce(&mut Tokenizer) -> R) -> R {
    BUFFERS.with(|cell| {
        let mut tokenizer = cell.borrow_mut();
        let result = work(&mut tokenizer);
        if tokenizer.folded.capacity() > KEPT_BUFFER_BYTES {
            *tokenizer = Tokenizer::new();
        }
        result
    })
}

/// The tokens of `text` (docs/parity.md, "Tokenizer"); duplicates are kept.
pub fn tokenize(text: &str) -> Vec<String> {
    with_buffers(|tokenizer| tokenizer.tokenize(text))
}

/// Calls `emit` with every token of `text`, in order, on this thread's buffers.
pub fn for_each_token<F: FnMut(&str)>(text: &str, emit: F) {
    with_buffers(|tokenizer| tokenizer.for_each(text, emit));
}

/// Query terms: the tokens deduplicated, in order of first appearance.
pub fn query_terms(text: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    with_buffers(|tokenizer| {
        tokenizer.for_each(text, |t| {
            if !terms.iter().any(|u| u == t) {
                terms.push(t.to_owned());
            }
        })
    });
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        tokenize(s)
    }

    #[test]
    fn ascii_fold_table_is_exact() {
        for &(cp, folded) in FOLD {
            if cp < 128 {
                assert_eq!(folded.len(), 1, "{cp:#x}");
                assert!(folded.as_bytes()[0] < 128 && folded.as_bytes()[0] != 0);
            }
        }
        assert_eq!(fold("ABCxyz"), "abcxyz");
    }

    #[test]
    fn ascii_class_table_matches_search() {
        for cp in 0u32..128 {
            let c = char::from_u32(cp).unwrap();
            let slow = CLASS_RANGES
                .iter()
                .find(|&&(lo, hi, _)| lo <= cp && cp <= hi)
                .map_or(CLASS_SEP, |r| r.2);
            assert_eq!(classify(c), slow, "{cp:#x}");
        }
    }

    #[test]
    fn tables_are_sorted() {
        assert!(FOLD.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(CLASS_RANGES.windows(2).all(|w| w[0].1 < w[1].0));
        use crate::generated::STOPWORDS;
        assert!(STOPWORDS.windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()));
        // The generated `match` and the list are the same set.
        assert!(STOPWORDS.iter().all(|w| is_stopword(w)));
        for w in ["", "ab", "theirs2", "memory", "The", "the "] {
            assert_eq!(is_stopword(w), STOPWORDS.contains(&w), "{w:?}");
        }
    }

    #[test]
    fn compound_identifiers() {
        assert_eq!(toks("src/main.rs"), ["src/main.rs", "src", "main", "rs"]);
        assert_eq!(
            toks("snake_case v1.2.3"),
            ["snake_case", "snake", "case", "v1.2.3", "v1", "2", "3"]
        );
        assert_eq!(toks("a--b"), ["b"]); // "a" is a stopword; two joiners split
        assert_eq!(toks("foo--bar. baz-"), ["foo", "bar", "baz"]);
        assert_eq!(toks("localhost:8080"), ["localhost:8080", "localhost", "8080"]);
    }

    #[test]
    fn folding_and_stopwords() {
        assert_eq!(toks("The Café STRASSE Straße"), ["cafe", "strass", "strass"]);
        assert_eq!(toks("ΣΊΣΥΦΟΣ"), ["σισυφοσ"]);
        assert_eq!(toks("İstanbul"), ["istanbul"]);
        assert_eq!(toks("zero\u{200D}width"), ["zerowidth"]);
        assert_eq!(toks("running organizations"), ["run", "organ"]);
        assert_eq!(toks("caroline's"), ["caroline's", "carolin"]); // "s" is a stopword
    }

    #[test]
    fn cjk_bigrams() {
        assert_eq!(toks("東京都"), ["東京", "京都"]);
        assert_eq!(toks("東"), ["東"]);
        assert_eq!(toks("abc東京def"), ["abc", "東京", "def"]);
        assert_eq!(
            toks("src/main.rs E0502 東京都"),
            ["src/main.rs", "src", "main", "rs", "e0502", "東京", "京都"]
        );
    }

    #[test]
    fn long_tokens_dropped() {
        let long = "x".repeat(65);
        assert!(toks(&long).is_empty());
        assert_eq!(toks(&"y".repeat(64)).len(), 1);
        let group = format!("{}-{}", "p".repeat(40), "q".repeat(40));
        assert_eq!(toks(&group), ["p".repeat(40), "q".repeat(40)]);
    }

    #[test]
    fn emoji_and_punctuation_separate() {
        assert_eq!(toks("fix🙂bug!!later"), ["fix", "bug", "later"]);
        assert!(toks("").is_empty());
        assert!(toks("--- ... ###").is_empty());
    }

    #[test]
    fn stem_cache_returns_the_stemmers_stems() {
        // Eight slots in two shards for ~60 words: most lookups evict, hit or collide; every answer must be
        // the stemmer's, in any order and after any eviction.
        let words: Vec<String> = "running runs ran runner connection connected connecting \
            generously generous generosity happily happiness happy agreed agreement \
            relational relativity relate caresses ponies ties caress cats feed agreed \
            plastered bled motoring sing conflated troubled sized hopping tanned falling \
            hissing fizzed failing filing happy sky news innings outing canning herring \
            earring proceed exceed succeed dying lying tying skis idly gently ugly early \
            only singly internationalizations counterrevolutionaries"
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let cache = StemCache::new(2, 4);
        for round in 0..3 {
            for (i, word) in words.iter().enumerate() {
                let word = if round == 1 { &words[words.len() - 1 - i] } else { word };
                let mut out = String::from("x");
                cache.stem_into(word, &mut out);
                assert_eq!(out, format!("x{}", stemmer().stem(word)), "{word}");
            }
        }
    }

    #[test]
    fn tokenize_is_unchanged_by_the_caches() {
        let text = "Running runners ran; the connected connections connect generously.";
        let direct: Vec<String> = {
            let mut t = Tokenizer::new();
            t.tokenize(text)
        };
        for _ in 0..3 {
            assert_eq!(tokenize(text), direct);
        }
        // A long text's buffers are dropped after the call; the next call is unchanged.
        let long = "word ".repeat(KEPT_BUFFER_BYTES / 4);
        assert_eq!(tokenize(&long).len(), KEPT_BUFFER_BYTES / 4);
        assert!(BUFFERS.with(|cell| cell.borrow().folded.capacity()) <= KEPT_BUFFER_BYTES);
        assert_eq!(tokenize(text), direct);
        assert_eq!(direct, ["run", "runner", "ran", "connect", "connect", "connect", "generous"]);
    }

    #[test]
    fn query_terms_dedup_in_order() {
        assert_eq!(query_terms("rust python rust go"), ["rust", "python", "go"]);
    }
}
