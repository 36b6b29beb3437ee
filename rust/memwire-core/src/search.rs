//! Exact BM25 and overlap top-k, dense search and recall (docs/parity.md, "BM25", "Overlap",
//! "Filters", "Fusion").
//!
//! Scores are accumulated term at a time (within blocks of slots), query terms in order of
//! first appearance, each contribution computed by the contract's exact sequence of f64
//! operations; a document's score therefore does not depend on how postings are visited, and
//! selection is exact over every matching document.

use std::cell::RefCell;
use std::sync::Arc;

use crate::allow::AllowSet;
use crate::dense::score as dense_score;
use crate::dot::Query;
use crate::error::{check_depth, check_k, check_weights, Error, Result};
use crate::generated::{BM25_B, BM25_K1, DEFAULT_DEPTH, DEFAULT_WEIGHTS};
use crate::index::{tf_of, BankIndex, BigTfs, Norms, RecallRow, Scored};
use crate::rank::{canon, Key, TopK};
use crate::signs::prefetch;
use crate::tokenizer::query_terms;

const K1_PLUS_1: f64 = BM25_K1 + 1.0;

/// One slot's running BM25 score and how many query terms it matched, side by side so a
/// posting's update reads one cache line.
#[derive(Clone, Copy, Default)]
struct Tally {
    score: f64,
    /// `(stamp << 32) | terms matched`, `stamp` the query's (see [`Scratch::stamp`]): an
    /// entry below the current query's base is untouched by it, so no pass clears the marks.
    mark: u64,
}

/// Per-thread buffers indexed by slot, reused across queries (and indexes) so a query costs
/// O(postings visited), not O(documents).
#[derive(Default)]
struct Scratch {
    tally: Vec<Tally>,
    /// The current query's number, from 1; every mark is cleared when it wraps.
    stamp: u32,
    touched: Vec<u32>,
}

impl Scratch {
    /// Starts a query over `size` slots: its mark base (`stamp << 32`).
    fn begin(&mut self, size: usize) -> u64 {
        if self.tally.len() < size {
            self.tally.resize(size, Tally::default());
        }
        self.touched.clear();
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.tally.iter_mut().for_each(|t| t.mark = 0);
            self.stamp = 1;
        }
        u64::from(self.stamp) << 32
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The lexical pass's per-slot buffers: the BM25 score and number of query terms matched of
/// the slots it touched (marks at or above `base`), and `norm(d)`.
struct Accumulated<'a> {
    tally: &'a [Tally],
    base: u64,
    norm: &'a [f64],
}

impl Accumulated<'_> {
    /// Query terms matched by the document at `slot` (0: none).
    fn hits(&self, slot: usize) -> u32 {
        let mark = self.tally[slot].mark;
        if mark >= self.base {
            (mark - self.base) as u32
        } else {
            0
        }
    }
}

/// A fusion candidate: its 1-based rank in each stream (0: absent), whether a weighted stream
/// proposed it, and its exact cosine when the dense stream ranked it.
struct Candidate {
    ordinal: u32,
    ranks: [u32; 3],
    proposed: bool,
    cos: Option<f64>,
}

/// The streams' entries merged by ordinal (at most `3 * depth`, so a sort beats hashing);
/// `streams` are BM25, overlap and dense, `used` their weights.
fn candidates(streams: [&[Scored]; 3], used: [f64; 3]) -> Vec<Candidate> {
    let mut all: Vec<Candidate> = Vec::with_capacity(streams.iter().map(|s| s.len()).sum());
    for (i, (stream, w)) in streams.into_iter().zip(used).enumerate() {
        for (r, &(ordinal, score)) in stream.iter().enumerate() {
            let mut ranks = [0; 3];
            ranks[i] = r as u32 + 1;
            // A dense score is positive exactly when its integer dot is (docs/parity.md).
            let cos = (i == 2).then_some(if score > 0.0 { score } else { 0.0 });
            all.push(Candidate { ordinal, ranks, proposed: w != 0.0, cos });
        }
    }
    all.sort_unstable_by_key(|c| c.ordinal);
    let mut merged: Vec<Candidate> = Vec::with_capacity(all.len());
    for c in all {
        match merged.last_mut() {
            Some(m) if m.ordinal == c.ordinal => {
                for (mine, theirs) in m.ranks.iter_mut().zip(c.ranks) {
                    *mine = (*mine).max(theirs);
                }
                m.proposed |= c.proposed;
                m.cos = m.cos.or(c.cos);
            }
            _ => merged.push(c),
        }
    }
    merged
}

/// One query's matches: slot, BM25 score, number of distinct query terms matched.
struct Match {
    slot: u32,
    score: f64,
    hits: u32,
}

/// What [`accumulate`] reads besides the scratch buffers: the ordinal of each slot (for a
/// filter), the index's big term frequencies, `norm(d)` per slot, the filter and the query's
/// mark base.
struct Reads<'a> {
    ordinals: &'a [u32],
    big: &'a BigTfs,
    norm: &'a [f64],
    allow: &'a AllowSet,
    base: u64,
}

/// Slots scored together: each query term's postings are added one block of slots at a time,
/// so the block's tallies and norms (24 bytes a slot, 768 KiB) stay in a core's L2 cache
/// across the terms, and its matches are handed to the sink while they are still there. Term
/// at a time over the whole bank, a 1M-memory bank's pass waited mostly on cache misses of
/// those per-slot arrays (docs/BENCHMARKS.md, "Session 21"). Unit tests use tiny blocks, so
/// their small banks span many.
#[cfg(not(test))]
const BLOCK: usize = 1 << 15;
#[cfg(test)]
const BLOCK: usize = 8;

/// How many postings ahead [`accumulate`] asks for a slot's entries (measured: 8 to 32 alike).
const PREFETCH_AHEAD: usize = 16;

/// Adds term `id`'s contribution to every (allowed) document of `slots` (a run of its posting
/// list, with the aligned `tfs`), with the contract's exact operation sequence. `allow` is
/// read only when `FILTER`.
#[inline(always)]
fn accumulate<const FILTER: bool, const FIRST: bool>(
    s: &mut Scratch,
    run: (&[u32], &[u8]),
    id: u32,
    idf: f64,
    r: &Reads<'_>,
) {
    // Almost no bank holds a frequency of 255 or more: its loop skips the marker test.
    if r.big.is_empty() {
        accumulate_with::<FILTER, FIRST, false>(s, run, id, idf, r);
    } else {
        accumulate_with::<FILTER, FIRST, true>(s, run, id, idf, r);
    }
}

#[inline(always)]
fn accumulate_with<const FILTER: bool, const FIRST: bool, const BIG: bool>(
    s: &mut Scratch,
    (slots, tfs): (&[u32], &[u8]),
    id: u32,
    idf: f64,
    r: &Reads<'_>,
) {
    let size = r.norm.len();
    // Equal-length local slices: the compiler keeps the pointers in registers (a push to
    // `touched` cannot move them) and can merge the bounds checks.
    let tally = &mut s.tally[..size];
    let norm = &r.norm[..size];
    let ordinals = &r.ordinals[..size];
    let touched = &mut s.touched;
    let base = r.base;
    for (j, (&slot, &tf)) in slots.iter().zip(tfs).enumerate() {
        // The slots' entries are scattered over the block: asked for a few postings ahead,
        // their cache misses overlap (a quarter off the pass at 1M memories).
        if let Some(&ahead) = slots.get(j + PREFETCH_AHEAD) {
            prefetch(std::slice::from_ref(&tally[ahead as usize]));
            prefetch(std::slice::from_ref(&norm[ahead as usize]));
        }
        let i = slot as usize;
        if FILTER && !r.allow.contains(ordinals[i]) {
            continue;
        }
        let tf = f64::from(if BIG { tf_of(r.big, id, slot, tf) } else { u32::from(tf) });
        let c = idf * ((tf * K1_PLUS_1) / (tf + norm[i]));
        let t = &mut tally[i];
        if FIRST || t.mark < base {
            touched.push(slot);
            *t = Tally { score: 0.0 + c, mark: base | 1 };
        } else {
            t.score += c;
            t.mark += 1;
        }
    }
}

/// The end of the run of `slots` (ascending) that starts at `from` and stays below `end`:
/// galloping from `from`, so a block's run costs the log of its own length, near postings the
/// pass reads next, rather than a search of the whole list.
fn run_end(slots: &[u32], from: usize, end: u32) -> usize {
    let mut lo = from;
    let mut step = 1;
    while let Some(&slot) = slots.get(lo + step - 1) {
        if slot >= end {
            break;
        }
        lo += step;
        step *= 2;
    }
    let hi = (lo + step - 1).min(slots.len());
    lo + slots[lo..hi].partition_point(|&slot| slot < end)
}

impl BankIndex {
    /// `norm(d)` per slot for the current `N` and `total_len`, and the slots' ordinals, computed
    /// once per write epoch.
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
        let ordinals = self.slots.iter().map(|s| s.ordinal).collect();
        let norms = Arc::new(Norms { values, ordinals });
        *cache = Some(norms.clone());
        norms
    }

    /// The query's distinct terms present in the vocabulary, with their idf, in query order;
    /// nothing when the index holds no token.
    fn present_terms(&self, query: &str) -> Vec<(u32, f64)> {
        let (ids, idfs, _) = self.idf_terms(query);
        ids.into_iter().zip(idfs).filter_map(|(id, idf)| id.map(|id| (id, idf))).collect()
    }

    /// Scores every live (allowed) document matching a term of `terms` (id, idf), hands each
    /// match to `sink`, then calls `then` with the per-slot accumulators when the matches were
    /// scored term at a time (`None` when a small filter scored them document at a time).
    /// `state` is threaded through both, so `then` can read what `sink` gathered. `terms` is not
    /// empty; `norms` are [`BankIndex::norms`].
    fn lexical<S, R>(
        &self,
        norms: &Norms,
        terms: &[(u32, f64)],
        allow: Option<&AllowSet>,
        state: &mut S,
        mut sink: impl FnMut(&mut S, Match),
        then: impl FnOnce(&mut S, Option<Accumulated<'_>>) -> R,
    ) -> R {
        let norm = &norms.values[..];
        let visited: usize = terms.iter().map(|&(id, _)| self.postings[id as usize].df()).sum();

        // A small filter is cheaper to score document at a time (binary search per term).
        if let Some(allow) = allow {
            let n = usize::try_from(allow.len()).unwrap_or(usize::MAX);
            if n.saturating_mul(terms.len()).saturating_mul(16) < visited {
                let live = allow.bitmap().iter().filter_map(|o| self.slot_of.get(&o).copied());
                for m in live.filter_map(|slot| {
                    let mut score = 0.0;
                    let mut hits = 0;
                    for &(id, idf) in terms {
                        let p = &self.postings[id as usize];
                        if let Ok(j) = p.slots.binary_search(&slot) {
                            let tf = f64::from(tf_of(&self.big_tfs, id, slot, p.tfs[j]));
                            score += idf * ((tf * K1_PLUS_1) / (tf + norm[slot as usize]));
                            hits += 1;
                        }
                    }
                    (hits > 0).then_some(Match { slot, score, hits })
                }) {
                    sink(state, m);
                }
                return then(state, None);
            }
        }

        SCRATCH.with(|cell| {
            let mut guard = cell.borrow_mut();
            let s = &mut *guard;
            let size = self.slots.len();
            let base = s.begin(size);
            let none = AllowSet::default();
            let r = Reads {
                ordinals: &norms.ordinals,
                big: &self.big_tfs,
                norm,
                allow: allow.unwrap_or(&none),
                base,
            };
            // Each term's next posting to score, and how many touched slots the sink has seen.
            let mut next = vec![0usize; terms.len()];
            let mut sunk = 0;
            for start in (0..size).step_by(BLOCK) {
                let end = u32::try_from(start.saturating_add(BLOCK)).unwrap_or(u32::MAX);
                for (i, &(id, idf)) in terms.iter().enumerate() {
                    let p = &self.postings[id as usize];
                    let from = next[i];
                    let to = run_end(&p.slots, from, end);
                    next[i] = to;
                    let run = (&p.slots[from..to], &p.tfs[from..to]);
                    // Specialised loops: the first term cannot meet a slot touched in this
                    // block, and the filter test is hoisted out of the unfiltered case.
                    match (allow.is_some(), i == 0) {
                        (false, true) => accumulate::<false, true>(s, run, id, idf, &r),
                        (false, false) => accumulate::<false, false>(s, run, id, idf, &r),
                        (true, true) => accumulate::<true, true>(s, run, id, idf, &r),
                        (true, false) => accumulate::<true, false>(s, run, id, idf, &r),
                    }
                }
                for &slot in &s.touched[sunk..] {
                    let t = s.tally[slot as usize];
                    let hits = (t.mark - base) as u32;
                    sink(state, Match { slot, score: t.score, hits });
                }
                sunk = s.touched.len();
            }
            then(state, Some(Accumulated { tally: &s.tally, base, norm }))
        })
    }

    /// BM25 top-`bm25_k` and overlap top-`overlap_k` of one query (0 skips a list), handed to
    /// `then` with the lexical pass's accumulators (see [`BankIndex::lexical`]).
    fn lexical_top<R>(
        &self,
        terms: &[(u32, f64)],
        allow: Option<&AllowSet>,
        bm25_k: usize,
        overlap_k: usize,
        then: impl FnOnce(Vec<Scored>, Vec<Scored>, Option<Accumulated<'_>>) -> R,
    ) -> R {
        if terms.is_empty() {
            return then(Vec::new(), Vec::new(), None);
        }
        let mut tops = (TopK::new(bm25_k), TopK::new(overlap_k));
        // Read once per query: the pass's norms and the sink's ordinals.
        let norms = self.norms();
        let ordinals = &norms.ordinals[..];
        let sink = |(bm25, overlap): &mut (TopK, TopK), m: Match| {
            let score = canon(m.score);
            let hits = f64::from(m.hits);
            // Most candidates lose to the current k-th best on their scores alone; only the
            // others need their ordinal for the full key.
            let bm25_in = bm25.may_enter(score, 0.0);
            let overlap_in = overlap.may_enter(hits, score);
            if !(bm25_in || overlap_in) {
                return;
            }
            let ordinal = ordinals[m.slot as usize];
            if bm25_in {
                bm25.push(Key { primary: score, secondary: 0.0, ordinal });
            }
            if overlap_in {
                overlap.push(Key { primary: hits, secondary: score, ordinal });
            }
        };
        self.lexical(&norms, terms, allow, &mut tops, sink, |tops, acc| {
            let out = |t: &mut TopK| {
                let t = std::mem::replace(t, TopK::new(0));
                t.into_sorted().into_iter().map(|k| (k.ordinal, k.primary)).collect()
            };
            then(out(&mut tops.0), out(&mut tops.1), acc)
        })
    }

    /// Exact BM25 top-k (docs/parity.md, "BM25").
    pub fn search_bm25(
        &self,
        query: &str,
        k: i64,
        allow: Option<&AllowSet>,
    ) -> Result<Vec<Scored>> {
        let k = check_k(k)?;
        Ok(self.lexical_top(&self.present_terms(query), allow, k, 0, |bm25, _, _| bm25))
    }

    /// Top-k by distinct query terms matched, then BM25, then ordinal; scores are the counts.
    pub fn search_overlap(
        &self,
        query: &str,
        k: i64,
        allow: Option<&AllowSet>,
    ) -> Result<Vec<Scored>> {
        let k = check_k(k)?;
        Ok(self.lexical_top(&self.present_terms(query), allow, 0, k, |_, overlap, _| overlap))
    }

    /// Top-k by exact dense score (`vector`: little-endian int16 bytes).
    pub fn search_dense(
        &self,
        vector: &[u8],
        k: i64,
        allow: Option<&AllowSet>,
    ) -> Result<Vec<Scored>> {
        let k = check_k(k)?;
        self.dense_top(vector, k, allow)
    }

    fn dense_top(&self, vector: &[u8], k: usize, allow: Option<&AllowSet>) -> Result<Vec<Scored>> {
        let query = self.decode_vector(vector)?;
        let Some(dense) = self.dense.as_ref() else { return Ok(Vec::new()) };
        dense.search(&query, k, allow)
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
        allow: Option<&AllowSet>,
        vector: Option<&[u8]>,
    ) -> Result<Vec<RecallRow>> {
        let dense = |v: &[u8], k: usize, allow: Option<&AllowSet>| self.dense_top(v, k, allow);
        Ok(self.recall_gated(query, limit, 0.0, weights, depth, allow, vector, dense)?.0)
    }

    /// The depth each stream is read to: `depth`, checked, or [`DEFAULT_DEPTH`].
    pub fn stream_depth(depth: Option<i64>) -> Result<usize> {
        depth.map_or(Ok(DEFAULT_DEPTH), check_depth)
    }

    /// [`Self::recall`] with the lookup gate in its BM25 pass (docs/parity.md, "The lookup
    /// gate"): when `vector` is given and BM25's best hit (among `allow`) scores at least
    /// `lookup_ratio` (> 0) times the second, the dense stream is left out, as by `recall`
    /// with no vector and a dense weight of 0, and the flag is true. The same rows as that
    /// gate decided by `search_bm25(query, 2, allow)` first, for one lexical pass.
    ///
    /// The dense stream's list comes from `dense`, called (at most once, after the lexical
    /// pass) as `dense(vector, depth, allow)` when the stream is used: it must return what
    /// [`Self::search_dense`] would (a caller may have started that search on another thread
    /// while this one runs the lexical pass).
    #[allow(clippy::too_many_arguments)]
    pub fn recall_gated(
        &self,
        query: &str,
        limit: i64,
        lookup_ratio: f64,
        weights: Option<&[f64]>,
        depth: Option<i64>,
        allow: Option<&AllowSet>,
        vector: Option<&[u8]>,
        dense: impl FnOnce(&[u8], usize, Option<&AllowSet>) -> Result<Vec<Scored>>,
    ) -> Result<(Vec<RecallRow>, bool)> {
        let limit = check_k(limit)?;
        let weights = weights.unwrap_or(&DEFAULT_WEIGHTS);
        check_weights(weights, 3)?;
        let depth = Self::stream_depth(depth)?;
        if !lookup_ratio.is_finite() || lookup_ratio < 0.0 {
            return Err(Error::BadLookupRatio);
        }
        let qvec = match vector {
            Some(v) => Some(self.decode_vector(v)?),
            None => None,
        };
        let total = (weights[0] + weights[1]) + if qvec.is_some() { weights[2] } else { 0.0 };
        if total == 0.0 {
            return Ok((Vec::new(), false));
        }
        // The query is tokenised once: the lexical streams read its present terms, the fused
        // score all of them (absent ones count in Q and T).
        let (ids, idfs, q_idf) = self.idf_terms(query);
        let present: Vec<(u32, f64)> =
            ids.iter().zip(&idfs).filter_map(|(id, &idf)| id.map(|id| (id, idf))).collect();
        // The gate reads BM25's two best scores, which the BM25 list begins with (two at least).
        let gating = lookup_ratio > 0.0 && qvec.is_some() && (weights[0] > 0.0 || weights[1] > 0.0);
        let bm25_k = if gating { depth.max(2) } else { depth };
        self.lexical_top(&present, allow, bm25_k, depth, |mut bm25, overlap, acc| {
            let gated = gating && bm25.len() >= 2 && bm25[0].1 >= lookup_ratio * bm25[1].1;
            bm25.truncate(depth);
            let (dense, qvec) = match (vector, gated) {
                (Some(v), false) => (dense(v, depth, allow)?, qvec),
                _ => (Vec::new(), None),
            };
            let w_dense = if qvec.is_some() { weights[2] } else { 0.0 };
            let used = [weights[0], weights[1], w_dense];
            let total = (used[0] + used[1]) + used[2];
            let cands = candidates([&bm25, &overlap, &dense], used);
            let query_dot = qvec.as_deref().map(Query::new);
            let mut fused: Vec<RecallRow> = Vec::with_capacity(cands.len());
            for c in cands.iter().filter(|c| c.proposed) {
                let o = c.ordinal;
                let (bm25, hits) = match self.slot_of.get(&o) {
                    Some(&slot) if !present.is_empty() => {
                        self.fused_lexical(&present, slot, acc.as_ref())
                    }
                    _ => (0.0, 0),
                };
                let (lex, frac) = if hits > 0 {
                    (bm25 / (K1_PLUS_1 * q_idf), f64::from(hits) / idfs.len() as f64)
                } else {
                    (0.0, 0.0)
                };
                // The dense stream's score is the exact cosine; others are scored here.
                let cos = match (c.cos, &query_dot, self.dense.as_ref()) {
                    (Some(cos), _, _) => cos,
                    (None, Some(q), Some(d)) => d.get(o).map_or(0.0, |row| {
                        let dot = q.dot(row);
                        if dot > 0 {
                            dense_score(dot)
                        } else {
                            0.0
                        }
                    }),
                    _ => 0.0,
                };
                let score = (((used[0] * lex) + (used[1] * frac)) + (used[2] * cos)) / total;
                if score > 0.0 {
                    fused.push((o, score, c.ranks[0], c.ranks[1], c.ranks[2]));
                }
            }
            fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            fused.truncate(limit);
            Ok((fused, gated))
        })
    }

    /// `(bm25, hits)` of the fused score for the document at `slot` (docs/parity.md, "Fusion",
    /// step 5: length normalisation capped at K1). The lexical pass's accumulators hold exactly
    /// that for a document no longer than the average (same operations, same order); a longer
    /// one, or any when the pass ran document at a time, is re-scored term by term.
    fn fused_lexical(
        &self,
        terms: &[(u32, f64)],
        slot32: u32,
        acc: Option<&Accumulated<'_>>,
    ) -> (f64, u32) {
        let slot = slot32 as usize;
        let (norm, known) = match acc.map(|a| (a, a.hits(slot))) {
            Some((_, 0)) => return (0.0, 0),
            Some((a, hits)) if a.norm[slot] <= BM25_K1 => return (a.tally[slot].score, hits),
            Some((a, hits)) => (a.norm[slot], hits),
            None => (self.norms().values[slot], u32::MAX),
        };
        // A longer-than-average document scores as one of average length here: the fused
        // score says how well it matches, not how long it is (docs/parity.md).
        let norm = norm.min(BM25_K1);
        let mut bm25 = 0.0;
        let mut hits: u32 = 0;
        for &(id, idf) in terms {
            if hits == known {
                break;
            }
            let p = &self.postings[id as usize];
            if let Ok(j) = p.slots.binary_search(&slot32) {
                let tf = f64::from(tf_of(&self.big_tfs, id, slot32, p.tfs[j]));
                bm25 += idf * ((tf * K1_PLUS_1) / (tf + norm));
                hits += 1;
            }
        }
        (bm25, hits)
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
            let set = AllowSet::from_ordinals(allow.iter().copied());
            let got = ix.search_bm25("rust error", 10, Some(&set)).unwrap();
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
        let set = AllowSet::from_ordinals(allow);
        let small = ix.search_bm25("common word3 extra1", 10, Some(&set)).unwrap();
        let all = ix.search_bm25("common word3 extra1", 1000, None).unwrap();
        let want: Vec<_> = all.iter().filter(|e| allow.contains(&e.0)).copied().collect();
        assert_eq!(small, want);
    }

    #[test]
    fn big_term_frequencies_score_exactly() {
        // 254 fits a posting's byte; 255 and more are kept aside, keyed by term and slot.
        let mut ix = BankIndex::new(0).unwrap();
        let text = |tf: usize| format!("{}zebra", "loud ".repeat(tf));
        for (o, tf) in [(1, 254), (2, 255), (3, 300), (4, 1)] {
            ix.add(o, &text(tf), None).unwrap();
        }
        let total = 254 + 255 + 300 + 1 + 4;
        let got = ix.search_bm25("loud", 10, None).unwrap();
        assert_eq!(got.iter().map(|e| e.0).collect::<Vec<_>>(), [3, 2, 1, 4]);
        for (&(o, score), (tf, dl)) in got.iter().zip([(300, 301), (255, 256), (254, 255), (1, 2)])
        {
            assert_eq!(score.to_bits(), bm25(4, 4, tf, dl, total).to_bits(), "ordinal {o}");
        }
        let set = AllowSet::from_ordinals([3]);
        assert_eq!(ix.search_bm25("loud", 10, Some(&set)).unwrap(), got[..1]);
        let back = BankIndex::from_bytes(&ix.to_bytes().unwrap()).unwrap();
        assert_eq!(back.search_bm25("loud", 10, None).unwrap(), got);
        assert_eq!(back.big_tfs.len(), 2);
        // Removing a document drops its big frequencies; its slot's next tenant has none.
        assert!(ix.remove(3).unwrap());
        assert_eq!(ix.big_tfs.len(), 1);
        ix.add(5, "loud", None).unwrap();
        assert_eq!(ix.big_tfs.len(), 1);
        let mut fresh = BankIndex::new(0).unwrap();
        for (o, tf) in [(1, 254), (2, 255), (4, 1)] {
            fresh.add(o, &text(tf), None).unwrap();
        }
        fresh.add(5, "loud", None).unwrap();
        for q in ["loud", "loud zebra"] {
            let rows = ix.recall(q, 10, None, None, None, None).unwrap();
            assert_eq!(rows.len(), 4);
            assert_eq!(rows, fresh.recall(q, 10, None, None, None, None).unwrap());
        }
    }

    #[test]
    fn run_end_finds_each_boundary() {
        let slots: Vec<u32> = (0..200u32).map(|i| i * 3 + i % 7).collect();
        for from in [0, 1, 5, 63, 64, 150, 199, 200] {
            for end in [0, 1, 2, 3, 100, 300, 301, 598, 599, 600, 10_000] {
                let want = from + slots[from..].partition_point(|&s| s < end);
                assert_eq!(run_end(&slots, from, end), want, "from {from} end {end}");
            }
        }
        assert_eq!(run_end(&[], 0, 5), 0);
    }

    /// Many blocks (eight slots each under test), reused slots, frequencies past a byte and a
    /// filter: every score is the contract's sum in query order over the document's terms,
    /// evaluated directly from its words.
    #[test]
    fn blocked_pass_equals_direct_scoring() {
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let words = ["alpha", "bravo", "delta", "echo", "golf", "hotel", "kilo", "lima"];
        let mut docs: std::collections::BTreeMap<u32, Vec<&str>> = Default::default();
        let mut ix = BankIndex::new(0).unwrap();
        for o in 0..400u32 {
            let n = 1 + next(9) as usize;
            let mut doc: Vec<&str> = (0..n).map(|_| words[next(8) as usize]).collect();
            if o % 97 == 0 {
                doc.extend(std::iter::repeat_n("kilo", 300));
            }
            ix.add(i64::from(o), &doc.join(" "), None).unwrap();
            docs.insert(o, doc);
        }
        for o in (0..400u32).step_by(3) {
            assert!(ix.remove(i64::from(o)).unwrap());
            docs.remove(&o);
        }
        for o in 400..450u32 {
            let doc = vec![words[next(8) as usize], words[next(8) as usize]];
            ix.add(i64::from(o), &doc.join(" "), None).unwrap();
            docs.insert(o, doc);
        }
        let n = docs.len() as u64;
        let total: u64 = docs.values().map(|d| d.len() as u64).sum();
        let direct = |query: &[&str]| -> Vec<(u32, f64, u32)> {
            let mut out = Vec::new();
            for (&o, doc) in &docs {
                let mut score = 0.0;
                let mut hits = 0;
                for term in query {
                    let tf = doc.iter().filter(|w| *w == term).count() as u32;
                    if tf > 0 {
                        let df = docs.values().filter(|d| d.contains(term)).count() as u64;
                        score += bm25(n, df, tf, doc.len() as u32, total);
                        hits += 1;
                    }
                }
                if hits > 0 {
                    out.push((o, score, hits));
                }
            }
            out
        };
        let allow = AllowSet::from_ordinals((0..450).filter(|o| o % 5 != 0));
        for query in [vec!["kilo"], vec!["golf", "alpha"], vec!["lima", "kilo", "echo", "bravo"]] {
            let q = query.join(" ");
            let mut want = direct(&query);
            want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            let bm25: Vec<Scored> = want.iter().map(|&(o, s, _)| (o, s)).collect();
            assert_eq!(ix.search_bm25(&q, 1000, None).unwrap(), bm25, "{q}");
            let kept: Vec<Scored> = bm25.iter().copied().filter(|e| e.0 % 5 != 0).collect();
            assert_eq!(ix.search_bm25(&q, 1000, Some(&allow)).unwrap(), kept, "{q}");
            want.sort_by(|a, b| b.2.cmp(&a.2).then(b.1.total_cmp(&a.1)).then(a.0.cmp(&b.0)));
            let overlap: Vec<Scored> = want.iter().map(|&(o, _, h)| (o, f64::from(h))).collect();
            assert_eq!(ix.search_overlap(&q, 1000, None).unwrap(), overlap, "{q}");
        }
    }

    /// A query's marks tell its touched slots from earlier queries' without a clearing pass,
    /// also across the wrap of the query counter.
    #[test]
    fn query_marks_survive_the_counter_wrapping() {
        let ix = corpus();
        let queries = ["rust error", "error traceback", "rust", "words only error"];
        let want: Vec<_> =
            queries.iter().map(|q| ix.recall(q, 10, None, None, None, None).unwrap()).collect();
        SCRATCH.with(|cell| cell.borrow_mut().stamp = u32::MAX - 2);
        for round in 0..3 {
            for (q, w) in queries.iter().zip(&want) {
                assert_eq!(&ix.recall(q, 10, None, None, None, None).unwrap(), w, "{round} {q}");
            }
        }
        assert!(SCRATCH.with(|cell| cell.borrow().stamp) < 20);
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
