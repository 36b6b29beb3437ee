//! Exact BM25 and overlap top-k, dense search and recall (docs/parity.md, "BM25", "Overlap",
//! "Filters", "Fusion").
//!
//! Scores are accumulated term at a time, query terms in order of first appearance, each
//! contribution computed by the contract's exact sequence of f64 operations; a document's score
//! therefore does not depend on how postings are visited, and selection is exact over every
//! matching document.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::cell::RefCell;
use std::sync::Arc;

use crate::dense::score as dense_score;
use crate::dot::Query;
use crate::error::{check_depth, check_k, check_weights, Result};
use crate::generated::{BM25_B, BM25_K1, DEFAULT_DEPTH, DEFAULT_WEIGHTS};
use crate::index::{BankIndex, Norms, Posting, RecallRow, Scored};
use crate::rank::{canon, Key, TopK};
use crate::tokenizer::query_terms;

const K1_PLUS_1: f64 = BM25_K1 + 1.0;

/// Per-thread buffers indexed by slot, reused across queries (and indexes) so a query costs
/// O(postings visited), not O(documents).
#[derive(Default)]
struct Scratch {
    acc: Vec<f64>,
    /// Number of query terms matched; 0 marks an untouched slot (reset after each query).
    hits: Vec<u32>,
    touched: Vec<u32>,
    /// Bit set of allowed slots (cleared after each query).
    allowed: Vec<u64>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// One query's matches: slot, BM25 score, number of distinct query terms matched.
struct Match {
    slot: u32,
    score: f64,
    hits: u32,
}

/// Adds one query term's contribution to every (allowed) document of its posting list, with
/// the contract's exact operation sequence.
#[inline(always)]
fn accumulate<const FILTER: bool, const FIRST: bool>(
    s: &mut Scratch,
    size: usize,
    p: &Posting,
    idf: f64,
    norm: &[f64],
) {
    // Equal-length local slices: the compiler keeps the pointers in registers (a push to
    // `touched` cannot move them) and can merge the bounds checks.
    let acc = &mut s.acc[..size];
    let hits = &mut s.hits[..size];
    let norm = &norm[..size];
    let allowed = &s.allowed[..];
    let touched = &mut s.touched;
    for (&slot, &tf) in p.slots.iter().zip(&p.tfs) {
        let i = slot as usize;
        if FILTER && allowed[i / 64] & (1 << (i % 64)) == 0 {
            continue;
        }
        let tf = f64::from(tf);
        let c = idf * ((tf * K1_PLUS_1) / (tf + norm[i]));
        if FIRST || hits[i] == 0 {
            touched.push(slot);
            acc[i] = 0.0 + c;
            hits[i] = 1;
        } else {
            acc[i] += c;
            hits[i] += 1;
        }
    }
}

impl BankIndex {
    /// `norm(d)` per slot for the current `N` and `total_len`, computed once per write epoch.
    fn norms(&self) -> Arc<Norms> {
        let mut cache = self.norms.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = cache.as_ref() {
            return n.clone();
        }
        let avgdl = self.total_len as f64 / self.live.len() as f64;
        let values = self
            .slots
            .iter()
            .map(|s| BM25_K1 * ((1.0 - BM25_B) + BM25_B * (f64::from(s.len) / avgdl)))
            .collect();
        let norms = Arc::new(Norms { values });
        *cache = Some(norms.clone());
        norms
    }

    /// Live slots of the allowed ordinals, deduplicated and sorted.
    fn allowed_slots(&self, allow: &[u32]) -> Vec<u32> {
        let mut slots: Vec<u32> =
            allow.iter().filter_map(|o| self.slot_of.get(o).copied()).collect();
        slots.sort_unstable();
        slots.dedup();
        slots
    }

    /// Scores every live (allowed) document matching a query term and hands the matches to `f`.
    fn lexical(&self, query: &str, allow: Option<&[u32]>, mut sink: impl FnMut(Match)) {
        let n = self.live.len();
        let terms: Vec<u32> = if n == 0 || self.total_len == 0 {
            Vec::new()
        } else {
            query_terms(query).iter().filter_map(|t| self.vocab.get(t.as_str()).copied()).collect()
        };
        if terms.is_empty() {
            return;
        }
        let norms = self.norms();
        let norm = &norms.values;
        let idfs: Vec<f64> = terms
            .iter()
            .map(|&id| {
                let df = self.postings[id as usize].df() as u64;
                (1.0 + (((n - df) as f64 + 0.5) / (df as f64 + 0.5))).ln()
            })
            .collect();
        let allowed = allow.map(|a| self.allowed_slots(a));
        let visited: usize = terms.iter().map(|&id| self.postings[id as usize].df()).sum();

        // A small filter is cheaper to score document at a time (binary search per term).
        if let Some(slots) = &allowed {
            if slots.len().saturating_mul(terms.len()).saturating_mul(16) < visited {
                for m in slots.iter().filter_map(|&slot| {
                    let ordinal = self.slots[slot as usize].ordinal;
                    let mut score = 0.0;
                    let mut hits = 0;
                    for (&id, &idf) in terms.iter().zip(&idfs) {
                        let p = &self.postings[id as usize];
                        if let Ok(j) = p.ords.binary_search(&ordinal) {
                            let tf = f64::from(p.tfs[j]);
                            score += idf * ((tf * K1_PLUS_1) / (tf + norm[slot as usize]));
                            hits += 1;
                        }
                    }
                    (hits > 0).then_some(Match { slot, score, hits })
                }) {
                    sink(m);
                }
                return;
            }
        }

        SCRATCH.with(|cell| {
            let mut guard = cell.borrow_mut();
            let s = &mut *guard;
            let size = self.slots.len();
            if s.acc.len() < size {
                s.acc.resize(size, 0.0);
                s.hits.resize(size, 0);
            }
            let words = size.div_ceil(64);
            if s.allowed.len() < words {
                s.allowed.resize(words, 0);
            }
            if let Some(slots) = &allowed {
                for &slot in slots {
                    s.allowed[slot as usize / 64] |= 1 << (slot % 64);
                }
            }
            s.touched.clear();
            for (i, (&id, &idf)) in terms.iter().zip(&idfs).enumerate() {
                let p = &self.postings[id as usize];
                // Specialised loops: the first term cannot meet a touched slot, and the filter
                // test is hoisted out of the unfiltered case.
                match (allowed.is_some(), i == 0) {
                    (false, true) => accumulate::<false, true>(s, size, p, idf, norm),
                    (false, false) => accumulate::<false, false>(s, size, p, idf, norm),
                    (true, true) => accumulate::<true, true>(s, size, p, idf, norm),
                    (true, false) => accumulate::<true, false>(s, size, p, idf, norm),
                }
            }
            let Scratch { acc, hits, touched, allowed: bits } = s;
            for &slot in touched.iter() {
                sink(Match { slot, score: acc[slot as usize], hits: hits[slot as usize] });
            }
            for &slot in touched.iter() {
                hits[slot as usize] = 0;
            }
            if let Some(slots) = &allowed {
                for &slot in slots {
                    bits[slot as usize / 64] = 0;
                }
            }
        })
    }

    /// BM25 top-`bm25_k` and overlap top-`overlap_k` of one query (0 skips a list).
    fn lexical_top(
        &self,
        query: &str,
        allow: Option<&[u32]>,
        bm25_k: usize,
        overlap_k: usize,
    ) -> (Vec<Scored>, Vec<Scored>) {
        let mut bm25 = TopK::new(bm25_k);
        let mut overlap = TopK::new(overlap_k);
        self.lexical(query, allow, |m| {
            let score = canon(m.score);
            let hits = f64::from(m.hits);
            // Most candidates lose to the current k-th best on score alone; only the others
            // need their ordinal (a random access) for the full key.
            let bm25_in = bm25_k > 0 && bm25.may_enter(score);
            let overlap_in = overlap_k > 0 && overlap.may_enter(hits);
            if !(bm25_in || overlap_in) {
                return;
            }
            let ordinal = self.slots[m.slot as usize].ordinal;
            if bm25_in {
                bm25.push(Key { primary: score, secondary: 0.0, ordinal });
            }
            if overlap_in {
                overlap.push(Key { primary: hits, secondary: score, ordinal });
            }
        });
        let out = |t: TopK| t.into_sorted().into_iter().map(|k| (k.ordinal, k.primary)).collect();
        (out(bm25), out(overlap))
    }

    /// Exact BM25 top-k (docs/parity.md, "BM25").
    pub fn search_bm25(&self, query: &str, k: i64, allow: Option<&[u32]>) -> Result<Vec<Scored>> {
        let k = check_k(k)?;
        Ok(self.lexical_top(query, allow, k, 0).0)
    }

    /// Top-k by distinct query terms matched, then BM25, then ordinal; scores are the counts.
    pub fn search_overlap(
        &self,
        query: &str,
        k: i64,
        allow: Option<&[u32]>,
    ) -> Result<Vec<Scored>> {
        let k = check_k(k)?;
        Ok(self.lexical_top(query, allow, 0, k).1)
    }

    /// Top-k by exact dense score (`vector`: little-endian int16 bytes).
    pub fn search_dense(
        &self,
        vector: &[u8],
        k: i64,
        allow: Option<&[u32]>,
    ) -> Result<Vec<Scored>> {
        let k = check_k(k)?;
        self.dense_top(vector, k, allow)
    }

    fn dense_top(&self, vector: &[u8], k: usize, allow: Option<&[u32]>) -> Result<Vec<Scored>> {
        let query = self.decode_vector(vector)?;
        let Some(dense) = self.dense.as_ref() else { return Ok(Vec::new()) };
        let allow: Option<HashSet<u32>> = allow.map(|a| a.iter().copied().collect());
        dense.search(&query, k, allow.as_ref())
    }

    /// Fused recall (docs/parity.md, "Fusion"): each stream read to `depth`; the union of the
    /// weighted streams' lists scored exactly in every stream, fused into a score in [0, 1],
    /// cut to `limit`. `weights`/`depth` default to DEFAULT_WEIGHTS / DEFAULT_DEPTH. Validation
    /// order follows the Python twin: limit, weights, depth, vector.
    pub fn recall(
        &self,
        query: &str,
        limit: i64,
        weights: Option<&[f64]>,
        depth: Option<i64>,
        allow: Option<&[u32]>,
        vector: Option<&[u8]>,
    ) -> Result<Vec<RecallRow>> {
        let limit = check_k(limit)?;
        let weights = weights.unwrap_or(&DEFAULT_WEIGHTS);
        check_weights(weights, 3)?;
        let depth = match depth {
            Some(d) => check_depth(d)?,
            None => DEFAULT_DEPTH,
        };
        let (dense, qvec) = match vector {
            Some(v) => (self.dense_top(v, depth, allow)?, Some(self.decode_vector(v)?)),
            None => (Vec::new(), None),
        };
        let (bm25, overlap) = self.lexical_top(query, allow, depth, depth);
        let streams: [Vec<u32>; 3] =
            [bm25, overlap, dense].map(|s| s.into_iter().map(|e| e.0).collect());
        let ranks: Vec<HashMap<u32, u32>> = streams
            .iter()
            .map(|s| s.iter().enumerate().map(|(i, &o)| (o, i as u32 + 1)).collect())
            .collect();
        let rank = |i: usize, o: u32| ranks[i].get(&o).copied().unwrap_or(0);
        let w_dense = if qvec.is_some() { weights[2] } else { 0.0 };
        let used = [weights[0], weights[1], w_dense];
        let total = (used[0] + used[1]) + used[2];
        if total == 0.0 {
            return Ok(Vec::new());
        }
        let mut seen: HashSet<u32> = HashSet::default();
        let cands: Vec<u32> = streams
            .iter()
            .zip(used)
            .filter(|(_, w)| *w != 0.0)
            .flat_map(|(s, _)| s.iter().copied())
            .filter(|&o| seen.insert(o))
            .collect();
        let (terms, idfs, q_idf) = self.idf_terms(query);
        let norms = if terms.is_empty() { None } else { Some(self.norms()) };
        let query_dot = qvec.as_deref().map(Query::new);
        let mut fused: Vec<(u32, f64)> = Vec::with_capacity(cands.len());
        for o in cands {
            let mut bm25 = 0.0;
            let mut hits: u32 = 0;
            if let (Some(norms), Some(&slot)) = (&norms, self.slot_of.get(&o)) {
                // A longer-than-average document scores as one of average length here: the
                // fused score says how well it matches, not how long it is (docs/parity.md).
                let norm = norms.values[slot as usize].min(BM25_K1);
                for (term, &idf) in terms.iter().zip(&idfs) {
                    let Some(id) = term else { continue };
                    let p = &self.postings[*id as usize];
                    if let Ok(j) = p.ords.binary_search(&o) {
                        let tf = f64::from(p.tfs[j]);
                        bm25 += idf * ((tf * K1_PLUS_1) / (tf + norm));
                        hits += 1;
                    }
                }
            }
            let (lex, frac) = if hits > 0 {
                (bm25 / (K1_PLUS_1 * q_idf), f64::from(hits) / idfs.len() as f64)
            } else {
                (0.0, 0.0)
            };
            let mut cos = 0.0;
            if let (Some(q), Some(d)) = (&query_dot, self.dense.as_ref()) {
                if let Some(row) = d.get(o) {
                    let dot = q.dot(row);
                    if dot > 0 {
                        cos = dense_score(dot);
                    }
                }
            }
            let score = (((used[0] * lex) + (used[1] * frac)) + (used[2] * cos)) / total;
            if score > 0.0 {
                fused.push((o, score));
            }
        }
        fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(fused
            .into_iter()
            .take(limit)
            .map(|(o, s)| (o, s, rank(0, o), rank(1, o), rank(2, o)))
            .collect())
    }

    /// The query's distinct terms (term id, None when absent from the vocabulary), their idf,
    /// and the sum of those idf in query order; nothing when the index holds no token.
    fn idf_terms(&self, query: &str) -> (Vec<Option<u32>>, Vec<f64>, f64) {
        let n = self.live.len();
        if n == 0 || self.total_len == 0 {
            return (Vec::new(), Vec::new(), 0.0);
        }
        let mut ids = Vec::new();
        let mut idfs = Vec::new();
        let mut q_idf = 0.0;
        for t in query_terms(query) {
            let id = self.vocab.get(t.as_str()).copied();
            let df = id.map_or(0, |id| self.postings[id as usize].df() as u64);
            let idf = (1.0 + (((n - df) as f64 + 0.5) / (df as f64 + 0.5))).ln();
            ids.push(id);
            idfs.push(idf);
            q_idf += idf;
        }
        (ids, idfs, q_idf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contract's formula, evaluated directly.
    fn bm25(n: u64, df: u64, tf: u32, dl: u32, total: u64) -> f64 {
        let idf = (1.0 + (((n - df) as f64 + 0.5) / (df as f64 + 0.5))).ln();
        let avgdl = total as f64 / n as f64;
        let norm = BM25_K1 * ((1.0 - BM25_B) + BM25_B * (f64::from(dl) / avgdl));
        let tf = f64::from(tf);
        0.0 + idf * ((tf * (BM25_K1 + 1.0)) / (tf + norm))
    }

    fn corpus() -> BankIndex {
        let mut ix = BankIndex::new(0).unwrap();
        ix.add(1, "rust borrow checker error", None).unwrap();
        ix.add(2, "python error traceback error", None).unwrap();
        ix.add(3, "rust rust rust", None).unwrap();
        ix.add(4, "unrelated words only", None).unwrap();
        ix
    }

    #[test]
    fn bm25_matches_formula_and_order() {
        let ix = corpus();
        let got = ix.search_bm25("rust", 10, None).unwrap();
        assert_eq!(got.iter().map(|e| e.0).collect::<Vec<_>>(), [3, 1]);
        assert_eq!(got[0].1.to_bits(), bm25(4, 2, 3, 3, 13).to_bits());
        assert_eq!(got[1].1.to_bits(), bm25(4, 2, 1, 4, 13).to_bits());
        assert!(ix.search_bm25("nothing here", 3, None).unwrap().is_empty());
        assert_eq!(
            ix.search_bm25("rust", 0, None).unwrap_err().to_string(),
            "k must be at least 1, got 0"
        );
    }

    #[test]
    fn multi_term_scores_add_in_query_order() {
        let ix = corpus();
        let got = ix.search_bm25("error rust error", 10, None).unwrap();
        let first = bm25(4, 2, 1, 4, 13);
        let want1 = first + {
            let idf = (1.0f64 + ((2.0 + 0.5) / 2.5)).ln();
            let avgdl = 13.0 / 4.0;
            let norm = BM25_K1 * ((1.0 - BM25_B) + BM25_B * (4.0 / avgdl));
            idf * ((1.0 * K1_PLUS_1) / (1.0 + norm))
        };
        let one = got.iter().find(|e| e.0 == 1).unwrap();
        assert_eq!(one.1.to_bits(), want1.to_bits());
    }

    #[test]
    fn overlap_ranks_by_terms_then_bm25() {
        let ix = corpus();
        let got = ix.search_overlap("rust error", 10, None).unwrap();
        assert_eq!(got[0], (1, 2.0));
        let bm25 = ix.search_bm25("rust error", 10, None).unwrap();
        let rest: Vec<_> = bm25.iter().map(|e| e.0).filter(|&o| o != 1).collect();
        assert_eq!(got[1..].iter().map(|e| e.0).collect::<Vec<_>>(), rest);
    }

    #[test]
    fn allow_filters_without_changing_scores() {
        let ix = corpus();
        let all = ix.search_bm25("rust error", 10, None).unwrap();
        for allow in [vec![1u32, 4, 99], vec![3], vec![], vec![2, 2, 1, 3, 4]] {
            let got = ix.search_bm25("rust error", 10, Some(&allow)).unwrap();
            let want: Vec<_> = all.iter().filter(|e| allow.contains(&e.0)).copied().collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn doc_at_a_time_equals_term_at_a_time() {
        let mut ix = BankIndex::new(0).unwrap();
        for o in 0..500 {
            let text = format!("common word{} extra{} common", o % 7, o % 13);
            ix.add(o, &text, None).unwrap();
        }
        let allow = [3u32, 77, 150, 499];
        let small = ix.search_bm25("common word3 extra1", 10, Some(&allow)).unwrap();
        let all = ix.search_bm25("common word3 extra1", 1000, None).unwrap();
        let want: Vec<_> = all.iter().filter(|e| allow.contains(&e.0)).copied().collect();
        assert_eq!(small, want);
    }

    #[test]
    fn recall_fuses_streams() {
        let ix = corpus();
        let rows = ix.recall("rust error", 10, None, None, None, None).unwrap();
        assert_eq!(rows[0].0, 1);
        assert_eq!(rows[0].2, 1);
        assert_eq!(rows[0].3, 1);
        assert_eq!(rows[0].4, 0);
        assert_eq!(
            ix.recall("x", 1, Some(&[1.0]), None, None, None).unwrap_err().to_string(),
            "expected 3 weights, got 1"
        );
        assert_eq!(
            ix.recall("x", 1, None, Some(0), None, None).unwrap_err().to_string(),
            "depth must be at least 1, got 0"
        );
    }
}
