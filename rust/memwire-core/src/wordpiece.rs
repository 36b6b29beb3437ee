//! The bundled static embedder's kernel (docs/parity.md, "Static embedder"): uncased BERT
//! pre-processing from the generated `EMBED_*` tables, greedy WordPiece, the exact i32 sum of
//! the tokens' int8 rows, and that sum normalised and quantised to the canonical int16 vector
//! exactly as the shell's `quantize` does (bit-identical across backends by construction).
//!
//! Speed: one pass over the text's bytes with a table for ASCII characters (class and fold),
//! a reused word buffer, continuation pieces looked up without building a `##` string, pieces
//! longer than the longest vocabulary entry never looked up, and the rows summed in i16 blocks
//! (exact: at most 256 rows of `-128..=127` per block) that the compiler vectorises.

use rustc_hash::FxHashMap as HashMap;

use crate::error::{check_dim, Error, Result};
use crate::generated::{
    DENSE_SCALE, EMBED_CLASS_RANGES, EMBED_FOLD, EMBED_MAX_WORD_CHARS, EMBED_SUBWORD_PREFIX,
    EMBED_UNK,
};
use crate::tokenizer::range_class;

const SPACE: u8 = 1;
const DROP: u8 = 2;
const PUNCT: u8 = 3;
const CJK: u8 = 4;

/// Rows summed in one i16 block: `256 * -128 = i16::MIN` and `256 * 127 < i16::MAX`.
const BLOCK_ROWS: usize = 256;
/// A sum of squares below 2^53 is exact in f64 whatever the summation order, so its square root
/// is the one numpy computes (`memwire._kernel.vectors.quantize_many`); above, the order matters
/// and the shell quantises the sum itself.
const EXACT_SQUARES: u64 = 1 << 53;

fn is_continuation_byte(b: u8) -> bool {
    b & 0xC0 == 0x80
}

fn embed_class(c: char) -> u8 {
    range_class(EMBED_CLASS_RANGES, c as u32)
}

fn embed_fold(c: char) -> Option<&'static str> {
    EMBED_FOLD.binary_search_by_key(&(c as u32), |&(cp, _)| cp).ok().map(|i| EMBED_FOLD[i].1)
}

/// The canonical form of one text's vector (see [`StaticEmbedder::quantized`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantized {
    /// The vector was written.
    Vector,
    /// No known token, or a zero sum: no vector.
    NoVector,
    /// The sum's squares reach 2^53: the shell quantises the sum (`sum`) itself.
    Inexact,
}

/// One word being collected: its folded text (UTF-8), its length in code points, whether it is
/// ASCII.
#[derive(Default)]
struct Word {
    text: Vec<u8>,
    chars: usize,
    ascii: bool,
}

impl Word {
    fn clear(&mut self) {
        self.text.clear();
        self.chars = 0;
        self.ascii = true;
    }

    fn push_folded(&mut self, c: char) {
        match embed_fold(c) {
            Some(folded) => {
                self.text.extend_from_slice(folded.as_bytes());
                self.chars += folded.chars().count();
                self.ascii &= folded.is_ascii();
            }
            None => {
                self.text.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                self.chars += 1;
                self.ascii &= c.is_ascii();
            }
        }
    }
}

/// Buffers reused across the texts of one call.
#[derive(Default)]
struct Scratch {
    word: Word,
    bounds: Vec<usize>,
    ids: Vec<u32>,
    block: Vec<i16>,
    sum: Vec<i32>,
}

/// A vocabulary and its int8 embedding table (`rows x dim`, row-major).
pub struct StaticEmbedder {
    /// Every vocabulary entry's UTF-8 (the first piece of a word is looked up here).
    ids: HashMap<Box<[u8]>, u32>,
    /// The entries that start with `##`, without it (the later pieces of a word).
    continuations: HashMap<Box<[u8]>, u32>,
    /// The longest key of each map, in bytes: a longer piece is never looked up.
    longest: usize,
    longest_continuation: usize,
    unk: Option<u32>,
    table: Vec<i8>,
    dim: usize,
    /// Per ASCII character: its class and its folded byte (0: fold it the general way).
    ascii: [(u8, u8); 128],
    /// Per byte: an ASCII character of class 0 that folds to itself.
    verbatim: [bool; 256],
}

impl StaticEmbedder {
    pub fn new(vocab: &[impl AsRef<str>], table: &[u8], dim: i64) -> Result<Self> {
        let rows = vocab.len() as u128;
        if dim < 1 || table.len() as u128 != rows * dim as u128 {
            return Err(Error::EmbeddingTable);
        }
        let dim = check_dim(dim)?;
        // A repeated entry keeps its last id (as a Python dict would).
        let ids: HashMap<Box<[u8]>, u32> = vocab
            .iter()
            .enumerate()
            .map(|(i, t)| (t.as_ref().as_bytes().into(), i as u32))
            .collect();
        let continuations: HashMap<Box<[u8]>, u32> = ids
            .iter()
            .filter_map(|(k, &id)| {
                k.strip_prefix(EMBED_SUBWORD_PREFIX.as_bytes()).map(|rest| (rest.into(), id))
            })
            .collect();
        let longest = ids.keys().map(|k| k.len()).max().unwrap_or(0);
        let longest_continuation = continuations.keys().map(|k| k.len()).max().unwrap_or(0);
        let unk = ids.get(EMBED_UNK.as_bytes()).copied();
        let mut ascii = [(0u8, 0u8); 128];
        for (b, slot) in (0u8..).zip(ascii.iter_mut()) {
            let c = char::from(b);
            let folded = match embed_fold(c) {
                Some(f) if f.len() == 1 && f.is_ascii() => f.as_bytes()[0],
                Some(_) => 0,
                None => b,
            };
            *slot = (embed_class(c), folded);
        }
        let mut verbatim = [false; 256];
        for (b, &(class, folded)) in (0u8..).zip(ascii.iter()) {
            verbatim[usize::from(b)] = class == 0 && folded == b;
        }
        Ok(Self {
            ids,
            continuations,
            longest,
            longest_continuation,
            unk,
            table: table.iter().map(|&b| b as i8).collect(),
            dim,
            ascii,
            verbatim,
        })
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Greedy longest-match-first WordPiece of one folded word; an unknown piece makes the whole
    /// word unknown (no ids), as in BERT.
    /// `text`: its UTF-8, `n` code points, `ascii` when it is all ASCII.
    fn word_ids(
        &self,
        text: &[u8],
        n: usize,
        ascii: bool,
        bounds: &mut Vec<usize>,
        out: &mut Vec<u32>,
    ) {
        if n == 0 || n > EMBED_MAX_WORD_CHARS {
            return;
        }
        // Most words are one piece: the first lookup of the greedy match below.
        if let Some(&id) = self.ids.get(text) {
            if Some(id) != self.unk {
                out.push(id);
            }
            return;
        }
        bounds.clear();
        if ascii {
            bounds.extend(0..=n);
        } else {
            // The UTF-8 sequences' first bytes.
            bounds.extend((0..text.len()).filter(|&i| !is_continuation_byte(text[i])));
            bounds.push(text.len());
        }
        let mark = out.len();
        let mut start = 0;
        while start < n {
            let (pieces, longest) = if start == 0 {
                (&self.ids, self.longest)
            } else {
                (&self.continuations, self.longest_continuation)
            };
            let mut end = n;
            while end > start && bounds[end] - bounds[start] > longest {
                end -= 1;
            }
            let mut found = None;
            while end > start {
                if let Some(&id) = pieces.get(&text[bounds[start]..bounds[end]]) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => {
                    if Some(id) != self.unk {
                        out.push(id);
                    }
                    start = end;
                }
                None => {
                    out.truncate(mark);
                    return;
                }
            }
        }
    }

    fn flush(&self, s: &mut Scratch) {
        self.word_ids(&s.word.text, s.word.chars, s.word.ascii, &mut s.bounds, &mut s.ids);
        s.word.clear();
    }

    /// Splits, folds and WordPieces `text` into `s.ids`.
    fn collect_ids(&self, text: &str, s: &mut Scratch) {
        s.ids.clear();
        s.word.clear();
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if s.word.text.is_empty() {
                // A run of ASCII characters that fold to themselves, at the start of a word: when
                // whitespace, punctuation or the end follows, it is the word, looked up in place.
                let start = i;
                while i < bytes.len() && self.verbatim[usize::from(bytes[i])] {
                    i += 1;
                }
                if i > start {
                    let ends = bytes.get(i).is_none_or(|&b| {
                        b.is_ascii() && matches!(self.ascii[usize::from(b)].0, SPACE | PUNCT)
                    });
                    if ends {
                        self.word_ids(&bytes[start..i], i - start, true, &mut s.bounds, &mut s.ids);
                        continue;
                    }
                    s.word.text.extend_from_slice(&bytes[start..i]);
                    s.word.chars += i - start;
                    continue;
                }
            }
            let b = bytes[i];
            let (class, c) = if b.is_ascii() {
                i += 1;
                let (class, folded) = self.ascii[usize::from(b)];
                if class == 0 && folded != 0 {
                    s.word.text.push(folded);
                    s.word.chars += 1;
                    continue;
                }
                (class, char::from(b))
            } else {
                let c = text[i..].chars().next().unwrap_or_default();
                i += c.len_utf8();
                (embed_class(c), c)
            };
            match class {
                DROP => {}
                SPACE => self.flush(s),
                PUNCT | CJK => {
                    self.flush(s);
                    s.word.push_folded(c);
                    self.flush(s);
                }
                _ => s.word.push_folded(c),
            }
        }
        self.flush(s);
    }

    /// WordPiece ids of `text` in order, unknown words dropped.
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        let mut s = Scratch::default();
        self.collect_ids(text, &mut s);
        s.ids
    }

    /// The exact i32 sum of the rows of `s.ids` into `s.sum` (wrapping, as numpy's int32 does).
    fn sum_ids(&self, s: &mut Scratch) {
        let dim = self.dim;
        s.sum.clear();
        s.sum.resize(dim, 0);
        s.block.resize(dim, 0);
        for chunk in s.ids.chunks(BLOCK_ROWS) {
            sum_block(&self.table, dim, chunk, &mut s.block);
            for (total, &part) in s.sum.iter_mut().zip(&s.block) {
                *total = total.wrapping_add(i32::from(part));
            }
        }
    }

    /// The exact i32 sum of the rows of `text`'s tokens, or `None` when it has no known token.
    pub fn sum(&self, text: &str) -> Option<Vec<i32>> {
        let mut s = Scratch::default();
        self.collect_ids(text, &mut s);
        if s.ids.is_empty() {
            return None;
        }
        self.sum_ids(&mut s);
        Some(s.sum)
    }

    /// Per text, its sum as little-endian i32 bytes at `4 * dim * i` of the returned buffer,
    /// and whether it has one (a text without a known token has none; its bytes are zero).
    pub fn sums_le(&self, texts: &[impl AsRef<str>]) -> (Vec<u8>, Vec<bool>) {
        let width = 4 * self.dim;
        let mut out = vec![0u8; width * texts.len()];
        let mut found = Vec::with_capacity(texts.len());
        let mut s = Scratch::default();
        for (text, dest) in texts.iter().zip(out.chunks_exact_mut(width)) {
            self.collect_ids(text.as_ref(), &mut s);
            found.push(!s.ids.is_empty());
            if !s.ids.is_empty() {
                self.sum_ids(&mut s);
                for (d, x) in dest.chunks_exact_mut(4).zip(&s.sum) {
                    d.copy_from_slice(&x.to_le_bytes());
                }
            }
        }
        (out, found)
    }

    /// Per text, its canonical vector (the sum normalised and quantised by the shell's rule,
    /// `memwire._kernel.vectors.quantize`) as little-endian i16 bytes at `2 * dim * i` of the
    /// returned buffer, and what was written there.
    pub fn quantized(&self, texts: &[impl AsRef<str>]) -> (Vec<u8>, Vec<Quantized>) {
        let width = 2 * self.dim;
        let mut out = vec![0u8; width * texts.len()];
        let mut kinds = Vec::with_capacity(texts.len());
        let mut s = Scratch::default();
        for (text, dest) in texts.iter().zip(out.chunks_exact_mut(width)) {
            self.collect_ids(text.as_ref(), &mut s);
            if s.ids.is_empty() {
                kinds.push(Quantized::NoVector);
                continue;
            }
            self.sum_ids(&mut s);
            let kind = quantize(&s.sum, dest);
            if kind != Quantized::Vector {
                dest.fill(0);
            }
            kinds.push(kind);
        }
        (out, kinds)
    }
}

/// Columns summed at once: an accumulator of this many i16 stays in vector registers.
const STRIPE: usize = 64;

/// `block` = the i16 sum of the rows `ids` (at most [`BLOCK_ROWS`]) of `table`, one stripe of
/// columns at a time.
#[inline(always)]
fn sum_block_any(table: &[i8], dim: usize, ids: &[u32], block: &mut [i16]) {
    let mut col = 0;
    while col + STRIPE <= dim {
        let mut acc = [0i16; STRIPE];
        for &id in ids {
            let at = id as usize * dim + col;
            let row = &table[at..at + STRIPE];
            for (a, &v) in acc.iter_mut().zip(row) {
                *a = a.wrapping_add(i16::from(v));
            }
        }
        block[col..col + STRIPE].copy_from_slice(&acc);
        col += STRIPE;
    }
    if col < dim {
        block[col..].fill(0);
        for &id in ids {
            let at = id as usize * dim;
            for (a, &v) in block[col..].iter_mut().zip(&table[at + col..at + dim]) {
                *a = a.wrapping_add(i16::from(v));
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn sum_block_avx2(table: &[i8], dim: usize, ids: &[u32], block: &mut [i16]) {
    sum_block_any(table, dim, ids, block);
}

/// [`sum_block_any`] compiled for AVX2 when the CPU has it (the same integer sums).
fn sum_block(table: &[i8], dim: usize, ids: &[u32], block: &mut [i16]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available (checked just above).
        unsafe { sum_block_avx2(table, dim, ids, block) };
        return;
    }
    sum_block_any(table, dim, ids, block);
}

/// The shell's `quantize` of an integer vector whose squares sum below 2^53 (exact, so the norm
/// is the correctly rounded square root numpy takes): `rint(x / norm * DENSE_SCALE)` per
/// component, ties to even, as little-endian i16 into `out` (`2 * sum.len()` bytes).
pub fn quantize(sum: &[i32], out: &mut [u8]) -> Quantized {
    let mut squares: u64 = 0;
    for &x in sum {
        let a = u64::from(x.unsigned_abs());
        squares += a * a; // < 2^53 + 2^62: no overflow
        if squares >= EXACT_SQUARES {
            return Quantized::Inexact;
        }
    }
    if squares == 0 {
        return Quantized::NoVector;
    }
    let norm = (squares as f64).sqrt();
    let scale = f64::from(DENSE_SCALE);
    let mut any = false;
    for (&x, dest) in sum.iter().zip(out.chunks_exact_mut(2)) {
        let q = round_ties_even_small(f64::from(x) / norm * scale) as i16;
        any |= q != 0;
        dest.copy_from_slice(&q.to_le_bytes());
    }
    if any {
        Quantized::Vector
    } else {
        Quantized::NoVector
    }
}

/// 1.5 * 2^52: a sum with it lands where the spacing of f64 is exactly 1.
const ROUNDER: f64 = 6_755_399_441_055_744.0;

/// `y.round_ties_even()` for `|y| < 2^51` (here `|y| <= DENSE_SCALE`): adding `ROUNDER` rounds
/// `y` to an integer, ties to even (IEEE 754's default mode, and `ROUNDER` is even), and taking
/// it away again is exact. Without SSE4.1 in the target, `round_ties_even` is a libm call per
/// component, a sixth of the embedder's time. (Only -0.0 differs, as +0.0: the same i16.)
#[inline(always)]
fn round_ties_even_small(y: f64) -> f64 {
    (y + ROUNDER) - ROUNDER
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rounder_rounds_as_round_ties_even() {
        let mut ys: Vec<f64> = (-70_000..=70_000).map(|i| f64::from(i) * 0.5).collect();
        ys.extend((-2000..2000).map(|i| f64::from(i) * 16.384 + 0.123_456_789));
        for k in [0.0, 1.0, 2.0, 32766.0, 32767.0] {
            for d in [f64::EPSILON, 1e-9, 0.5 - 1e-12, 0.5, 0.5 + 1e-12] {
                ys.extend([k + d, k - d, -k + d, -k - d]);
            }
        }
        for y in ys {
            assert_eq!(round_ties_even_small(y) as i16, y.round_ties_even() as i16, "{y}");
        }
    }

    fn toy() -> StaticEmbedder {
        let vocab = ["[UNK]", "hello", "world", "un", "##aff", "##able", ",", "東", "cafe"];
        let mut table = Vec::new();
        for i in 0..vocab.len() {
            table.extend([i as u8, 1u8, (i as i8).wrapping_neg() as u8]);
        }
        StaticEmbedder::new(&vocab, &table, 3).unwrap()
    }

    #[test]
    fn wordpiece_greedy_longest_match() {
        let e = toy();
        assert_eq!(e.token_ids("Hello, WORLD"), [1, 6, 2]);
        assert_eq!(e.token_ids("unaffable"), [3, 4, 5]);
        assert_eq!(e.token_ids("unknownword hello"), [1]);
        assert_eq!(e.token_ids("東京 Café"), [7, 8]);
        assert_eq!(e.token_ids("hel\u{200B}lo"), [1]);
        assert!(e.token_ids("   ").is_empty());
    }

    #[test]
    fn sums_are_exact_integers() {
        let e = toy();
        assert_eq!(e.sum("hello hello"), Some(vec![2, 2, -2]));
        assert_eq!(e.sum("nothing known"), None);
    }

    #[test]
    fn fast_and_general_paths_agree() {
        let e = toy();
        // ASCII runs looked up in place, upper case folded, a dropped character inside a word,
        // a non-ASCII word split into pieces, a word longer than the longest entry.
        assert_eq!(e.token_ids("hello\tWorld,hello"), [1, 2, 6, 1]);
        assert_eq!(e.token_ids("HELLO un\u{200B}affable"), [1, 3, 4, 5]);
        assert_eq!(e.token_ids("Caféaffable"), [8, 4, 5]);
        assert_eq!(e.token_ids("東東"), [7, 7]);
        assert_eq!(e.token_ids(&"un".repeat(20)), []);
        let long = format!("un{}", "aff".repeat(33)); // 101 characters: unknown
        assert_eq!(e.token_ids(&long), []);
        // `#` is punctuation: "aff" starts a word, where only "##aff" is known.
        assert_eq!(e.token_ids("un##aff"), [3]);
    }

    #[test]
    fn quantize_is_the_shell_rule() {
        let mut out = [0u8; 6];
        assert_eq!(quantize(&[3, 4, 0], &mut out), Quantized::Vector);
        let q: Vec<i16> = out.chunks(2).map(|b| i16::from_le_bytes([b[0], b[1]])).collect();
        // rint(3 / 5 * 32767) = rint(19660.2), rint(4 / 5 * 32767) = rint(26213.6)
        assert_eq!(q, [19660, 26214, 0]);
        assert_eq!(quantize(&[0, 0, 0], &mut out), Quantized::NoVector);
        // 1 / 2 * 32767 = 16383.5: ties go to the even neighbour.
        let mut two = [0u8; 8];
        assert_eq!(quantize(&[1, 1, 1, 1], &mut two), Quantized::Vector);
        assert_eq!(i16::from_le_bytes([two[0], two[1]]), 16384);
        let big = 1i32 << 26; // (2^26)^2 * 2 = 2^53
        assert_eq!(quantize(&[big, big], &mut two[..4]), Quantized::Inexact);
        assert_eq!(quantize(&[big - 1, big], &mut two[..4]), Quantized::Vector);
        assert_eq!(quantize(&[i32::MIN, i32::MIN], &mut two[..4]), Quantized::Inexact);
    }

    #[test]
    fn batches_match_single_texts() {
        let e = toy();
        let texts = ["hello world", "nothing known", "unaffable, cafe"];
        let (flat, found) = e.sums_le(&texts);
        assert_eq!(found, [true, false, true]);
        for (i, text) in texts.iter().enumerate() {
            let got: Vec<i32> = flat[12 * i..12 * (i + 1)]
                .chunks(4)
                .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            assert_eq!(got, e.sum(text).unwrap_or(vec![0; 3]));
        }
        let (flat, kinds) = e.quantized(&texts);
        assert_eq!(kinds, [Quantized::Vector, Quantized::NoVector, Quantized::Vector]);
        let mut one = [0u8; 6];
        quantize(&e.sum("hello world").unwrap(), &mut one);
        assert_eq!(&flat[..6], &one);
        assert_eq!(&flat[6..12], &[0; 6]);
    }

    #[test]
    fn long_texts_sum_in_blocks() {
        let e = toy();
        // 1,000 rows of "un" (row [3, 1, -3]) cross several i16 blocks.
        let text = "un ".repeat(1000);
        assert_eq!(e.sum(&text), Some(vec![3000, 1000, -3000]));
    }

    #[test]
    fn table_must_match() {
        assert_eq!(
            StaticEmbedder::new(&["a", "b"], &[0u8; 5], 3).err(),
            Some(Error::EmbeddingTable)
        );
        assert!(matches!(
            StaticEmbedder::new(&["a"], &[0u8; 5000], 5000).err(),
            Some(Error::DimRange(_))
        ));
    }
}
