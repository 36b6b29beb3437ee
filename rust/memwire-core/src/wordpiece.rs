//! The bundled static embedder's kernel (docs/parity.md, "Static embedder"): uncased BERT
//! pre-processing from the generated `EMBED_*` tables, greedy WordPiece, and the exact i32 sum
//! of the tokens' int8 rows. The Python shell normalises the sum once, so vectors are
//! bit-identical across backends by construction.

use rustc_hash::FxHashMap as HashMap;

use crate::error::{check_dim, Error, Result};
use crate::generated::{
    EMBED_CLASS_RANGES, EMBED_FOLD, EMBED_MAX_WORD_CHARS, EMBED_SUBWORD_PREFIX, EMBED_UNK,
};
use crate::tokenizer::range_class;

const SPACE: u8 = 1;
const DROP: u8 = 2;
const PUNCT: u8 = 3;
const CJK: u8 = 4;

fn embed_class(c: char) -> u8 {
    range_class(EMBED_CLASS_RANGES, c as u32)
}

fn embed_fold_into(c: char, out: &mut String) {
    match EMBED_FOLD.binary_search_by_key(&(c as u32), |&(cp, _)| cp) {
        Ok(i) => out.push_str(EMBED_FOLD[i].1),
        Err(_) => out.push(c),
    }
}

/// A vocabulary and its int8 embedding table (`rows x dim`, row-major).
pub struct StaticEmbedder {
    ids: HashMap<Box<str>, u32>,
    unk: Option<u32>,
    table: Vec<i8>,
    dim: usize,
}

impl StaticEmbedder {
    pub fn new(vocab: &[impl AsRef<str>], table: &[u8], dim: i64) -> Result<Self> {
        let rows = vocab.len() as u128;
        if dim < 1 || table.len() as u128 != rows * dim as u128 {
            return Err(Error::EmbeddingTable);
        }
        let dim = check_dim(dim)?;
        let ids: HashMap<Box<str>, u32> =
            vocab.iter().enumerate().map(|(i, t)| (t.as_ref().into(), i as u32)).collect();
        let unk = ids.get(EMBED_UNK).copied();
        Ok(Self { ids, unk, table: table.iter().map(|&b| b as i8).collect(), dim })
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Greedy longest-match-first WordPiece of one folded word; an unknown piece makes the whole
    /// word unknown (no ids), as in BERT.
    fn word_ids(&self, word: &str, piece: &mut String, out: &mut Vec<u32>) {
        let bounds: Vec<usize> = word.char_indices().map(|(i, _)| i).chain([word.len()]).collect();
        let n = bounds.len() - 1;
        if n > EMBED_MAX_WORD_CHARS {
            return;
        }
        let mark = out.len();
        let mut start = 0;
        while start < n {
            let mut end = n;
            let mut found = None;
            while start < end {
                piece.clear();
                if start > 0 {
                    piece.push_str(EMBED_SUBWORD_PREFIX);
                }
                piece.push_str(&word[bounds[start]..bounds[end]]);
                if let Some(&id) = self.ids.get(piece.as_str()) {
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

    /// WordPiece ids of `text` in order, unknown words dropped.
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        let mut word = String::new();
        let mut piece = String::new();
        for c in text.chars() {
            match embed_class(c) {
                DROP => {}
                SPACE => {
                    self.word_ids(&word, &mut piece, &mut out);
                    word.clear();
                }
                PUNCT | CJK => {
                    self.word_ids(&word, &mut piece, &mut out);
                    word.clear();
                    embed_fold_into(c, &mut word);
                    self.word_ids(&word, &mut piece, &mut out);
                    word.clear();
                }
                _ => embed_fold_into(c, &mut word),
            }
        }
        self.word_ids(&word, &mut piece, &mut out);
        out
    }

    /// The exact i32 sum of the rows of `text`'s tokens, or `None` when it has no known token.
    pub fn sum(&self, text: &str) -> Option<Vec<i32>> {
        let ids = self.token_ids(text);
        if ids.is_empty() {
            return None;
        }
        let mut acc = vec![0i32; self.dim];
        for id in ids {
            let row = &self.table[id as usize * self.dim..(id as usize + 1) * self.dim];
            for (a, &v) in acc.iter_mut().zip(row) {
                *a += i32::from(v);
            }
        }
        Some(acc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
