//! One bank's index (docs/parity.md, "Inverted index"): vocabulary, posting lists, document
//! lengths and optional dense vectors.
//!
//! Documents live in dense internal *slots* (reused after removal) rather than in arrays indexed
//! by ordinal: ordinals are caller-chosen up to 2**32-1, and a single large one must not cost
//! gigabytes. Posting lists hold slots ascending with the aligned term frequencies, 5 bytes per
//! entry, so scoring reads flat arrays; a slot's ordinal is one array read away. Scores do not
//! depend on the order postings are visited in (docs/parity.md), and the snapshot writer sorts
//! a list by ordinal, the contract's order, where slot order differs (after slot reuse).

use rustc_hash::FxHashMap as HashMap;
use std::sync::{Arc, Mutex};

use roaring::RoaringBitmap;

use crate::dense::{self, DenseStore, GraphBuild};
use crate::error::{check_dim, check_ordinal, Error, Result};
use crate::tokenizer::Tokenizer;

/// `(ordinal, score)`.
pub type Scored = (u32, f64);
/// `(ordinal, fused score, bm25 rank, overlap rank, dense rank)`; rank 0 means absent.
pub type RecallRow = (u32, f64, u32, u32, u32);

/// Removals after a snapshot load served by [`BankIndex::terms_of_slot`] before the term lists
/// are built: a search of every posting list costs about 1/300 of building them all at 1M.
pub(crate) const SCANNED_REMOVALS: u32 = 64;

/// The numbers `stats()` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    pub docs: u64,
    pub terms: u64,
    pub total_len: u64,
    pub vectors: u64,
    pub dim: u64,
}

/// A term frequency of at least this is kept in [`BankIndex::big_tfs`]; the posting holds the
/// marker. Almost every frequency is small (a memory is a sentence or a few), so one byte each.
pub(crate) const TF_BIG: u8 = u8::MAX;

/// `(term id, slot)` -> a term frequency of at least [`TF_BIG`].
pub(crate) type BigTfs = HashMap<(u32, u32), u32>;

/// The term frequency of a posting entry (`small` is its byte in `tfs`).
#[inline(always)]
pub(crate) fn tf_of(big: &BigTfs, id: u32, slot: u32, small: u8) -> u32 {
    if small == TF_BIG {
        big_tf(big, id, slot)
    } else {
        u32::from(small)
    }
}

#[cold]
fn big_tf(big: &BigTfs, id: u32, slot: u32) -> u32 {
    big[&(id, slot)]
}

/// One term's posting list; the two vectors are aligned, slots ascending.
#[derive(Default, Clone)]
pub(crate) struct Posting {
    pub term: Box<str>,
    pub slots: Vec<u32>,
    pub tfs: Vec<u8>,
}

impl Posting {
    fn insert(&mut self, slot: u32, tf: u8) {
        // New slots are appended in increasing order: append without searching.
        let at = match self.slots.last() {
            Some(&last) if last > slot => self.slots.partition_point(|&s| s < slot),
            _ => self.slots.len(),
        };
        // Grow by an eighth, not by doubling: a bank built from rows then holds about what one
        // loaded from its snapshot (exact sizes) holds, for a few more copies while building.
        if self.slots.len() == self.slots.capacity() {
            let more = (self.slots.len() / 8).max(4);
            self.slots.reserve_exact(more);
            self.tfs.reserve_exact(more);
        }
        self.slots.insert(at, slot);
        self.tfs.insert(at, tf);
    }

    /// Removes `slot`'s entry; its frequency byte, if it was there.
    fn remove(&mut self, slot: u32) -> Option<u8> {
        let at = self.slots.binary_search(&slot).ok()?;
        self.slots.remove(at);
        Some(self.tfs.remove(at))
    }

    pub fn df(&self) -> usize {
        self.slots.len()
    }
}

/// A live document's slot.
#[derive(Default, Clone)]
pub(crate) struct Slot {
    pub ordinal: u32,
    pub len: u32,
    /// Distinct term ids, needed by `remove` (empty until built after a snapshot load: see
    /// [`BankIndex::doc_terms_pending`]).
    pub terms: Box<[u32]>,
}

/// What the lexical pass reads per slot, for one write epoch (see [`BankIndex::norms`]): the
/// BM25 length normalisation for the epoch's `(N, total_len)`, and each slot's ordinal, a
/// compact copy of `slots` (4 bytes a slot where a `Slot` is 32) for the matches that may
/// enter a top list.
pub(crate) struct Norms {
    pub values: Vec<f64>,
    pub ordinals: Vec<u32>,
}

pub struct BankIndex {
    pub(crate) dim: usize,
    pub(crate) vocab: HashMap<Box<str>, u32>,
    pub(crate) postings: Vec<Posting>,
    /// The frequencies too big for a posting's byte (rare: a term repeated 255 times).
    pub(crate) big_tfs: BigTfs,
    free_terms: Vec<u32>,
    pub(crate) slot_of: HashMap<u32, u32>,
    pub(crate) slots: Vec<Slot>,
    free_slots: Vec<u32>,
    /// Set by a snapshot load: the term lists of the slots it filled are not built. Only
    /// `remove` reads them, and building them scatters every posting entry once (1.5 s at 1M
    /// memories), so a bank opened to be searched never pays for it. The first removals find
    /// their document's terms by a search of each posting list instead (milliseconds at 1M);
    /// past [`SCANNED_REMOVALS`] of them the lists are built.
    doc_terms_pending: bool,
    scanned_removals: u32,
    pub(crate) live: RoaringBitmap,
    pub(crate) total_len: u64,
    pub(crate) dense: Option<DenseStore>,
    /// Invalidated by every write; rebuilt by the first search after it.
    pub(crate) norms: Mutex<Option<Arc<Norms>>>,
}

impl std::fmt::Debug for BankIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BankIndex").field("stats", &self.stats()).finish()
    }
}

impl BankIndex {
    /// An empty index; `dim` 0 means no dense part.
    pub fn new(dim: i64) -> Result<Self> {
        let dim = check_dim(dim)?;
        Ok(Self {
            dim,
            vocab: HashMap::default(),
            postings: Vec::new(),
            big_tfs: BigTfs::default(),
            free_terms: Vec::new(),
            slot_of: HashMap::default(),
            slots: Vec::new(),
            free_slots: Vec::new(),
            doc_terms_pending: false,
            scanned_removals: 0,
            live: RoaringBitmap::new(),
            total_len: 0,
            dense: (dim > 0).then(|| DenseStore::new(dim)),
            norms: Mutex::new(None),
        })
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn len(&self) -> usize {
        self.live.len() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    pub fn contains(&self, ordinal: u32) -> bool {
        self.live.contains(ordinal)
    }

    pub fn stats(&self) -> Stats {
        Stats {
            docs: self.live.len(),
            terms: self.vocab.len() as u64,
            total_len: self.total_len,
            vectors: self.dense.as_ref().map_or(0, |d| d.len() as u64),
            dim: self.dim as u64,
        }
    }

    /// The stored vector of `ordinal`, if any.
    pub fn vector(&self, ordinal: u32) -> Option<&[i16]> {
        self.dense.as_ref()?.get(ordinal)
    }

    /// Lowers the exact dense threshold (tests exercise the HNSW path on small data).
    #[doc(hidden)]
    pub fn set_dense_exact_max(&mut self, n: usize) {
        if let Some(d) = self.dense.as_mut() {
            d.set_exact_max(n);
        }
    }

    /// Sets the dense search tiers' bounds (tests exercise the sign scan on small data).
    #[doc(hidden)]
    pub fn set_dense_tiers(&mut self, exact_max: usize, graph_min: usize, signs: (usize, usize)) {
        if let Some(d) = self.dense.as_mut() {
            d.set_tiers(exact_max, graph_min, signs.0, signs.1);
        }
    }

    /// Whether the dense part is above the exact threshold with no HNSW graph installed (its
    /// searches are exact until [`BankIndex::install_dense_graph`]).
    pub fn dense_graph_needed(&self) -> bool {
        self.dense.as_ref().is_some_and(DenseStore::needs_graph)
    }

    /// Phase 1 of a detached HNSW build (docs/parity.md, "Dense stream"): `None` when no graph
    /// is needed. Build the plan with no borrow of the index, then install it.
    pub fn plan_dense_graph(&self) -> Option<GraphBuild> {
        self.dense.as_ref()?.plan_graph()
    }

    /// Phase 3: installs a built plan, replaying the changes made since it was planned;
    /// `false` when it could not be (see [`DenseStore::install_graph`]).
    pub fn install_dense_graph(&mut self, build: GraphBuild) -> bool {
        self.dense.as_mut().is_some_and(|d| d.install_graph(build))
    }

    /// The three phases in one call, for a caller that holds the index exclusively anyway.
    pub fn build_dense_graph(&mut self) -> Result<bool> {
        let Some(mut build) = self.plan_dense_graph() else { return Ok(false) };
        Ok(build.build()? && self.install_dense_graph(build))
    }

    /// Decodes a query or document vector for this index.
    pub fn decode_vector(&self, bytes: &[u8]) -> Result<Vec<i16>> {
        dense::decode(bytes, self.dim)
    }

    /// Indexes one document; see [`BankIndex::add_many`].
    pub fn add(&mut self, ordinal: i64, text: &str, vector: Option<&[u8]>) -> Result<()> {
        self.add_many(&[ordinal], &[text], Some(&[vector]))
    }

    /// Indexes documents. Everything is validated first (lengths, then each ordinal in order,
    /// then each vector, the order the Python twin checks in), so an error changes nothing.
    pub fn add_many<S: AsRef<str>>(
        &mut self,
        ordinals: &[i64],
        texts: &[S],
        vectors: Option<&[Option<&[u8]>]>,
    ) -> Result<()> {
        if ordinals.len() != texts.len() || vectors.is_some_and(|v| v.len() != texts.len()) {
            return Err(Error::LengthMismatch);
        }
        let mut checked = Vec::with_capacity(ordinals.len());
        let mut batch = RoaringBitmap::new();
        for &o in ordinals {
            let o = check_ordinal(o)?;
            if self.live.contains(o) || !batch.insert(o) {
                return Err(Error::DuplicateOrdinal(o));
            }
            checked.push(o);
        }
        let decoded: Vec<Option<Vec<i16>>> = match vectors {
            None => Vec::new(),
            Some(vs) => vs
                .iter()
                .map(|v| v.map(|b| self.decode_vector(b)).transpose())
                .collect::<Result<_>>()?,
        };
        self.invalidate();
        let mut tokenizer = Tokenizer::new();
        let mut spans = Vec::new();
        for (i, (&o, text)) in checked.iter().zip(texts).enumerate() {
            self.index_text(o, text.as_ref(), &mut tokenizer, &mut spans);
            if let (Some(Some(v)), Some(d)) = (decoded.get(i), self.dense.as_mut()) {
                d.add(o, v);
            }
        }
        Ok(())
    }

    fn index_text(
        &mut self,
        ordinal: u32,
        text: &str,
        tok: &mut Tokenizer,
        spans: &mut Vec<(u32, u32)>,
    ) {
        tok.spans(text, spans);
        let folded = tok.tokens();
        let len = spans.len() as u64;
        // Group equal tokens by sorting: term frequencies without a per-token allocation.
        let mut terms: Vec<&str> =
            spans.iter().map(|&(a, b)| &folded[a as usize..b as usize]).collect();
        terms.sort_unstable();
        let slot = match self.free_slots.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
        };
        let mut term_ids = Vec::new();
        let mut i = 0;
        while i < terms.len() {
            let term = terms[i];
            let mut j = i + 1;
            while j < terms.len() && terms[j] == term {
                j += 1;
            }
            let tf = j - i;
            i = j;
            let id = match self.vocab.get(term) {
                Some(&id) => id,
                None => {
                    let id = match self.free_terms.pop() {
                        Some(id) => id,
                        None => {
                            self.postings.push(Posting::default());
                            (self.postings.len() - 1) as u32
                        }
                    };
                    let boxed: Box<str> = term.into();
                    self.postings[id as usize].term = boxed.clone();
                    self.vocab.insert(boxed, id);
                    id
                }
            };
            let small = match u8::try_from(tf) {
                Ok(t) if t < TF_BIG => t,
                // A document longer than u32::MAX tokens is cut to that length below anyway.
                _ => {
                    self.big_tfs.insert((id, slot), u32::try_from(tf).unwrap_or(u32::MAX));
                    TF_BIG
                }
            };
            self.postings[id as usize].insert(slot, small);
            term_ids.push(id);
        }
        // A document longer than u32::MAX tokens cannot be represented in a snapshot either.
        let len32 = u32::try_from(len).unwrap_or(u32::MAX);
        self.slots[slot as usize] = Slot { ordinal, len: len32, terms: term_ids.into() };
        self.slot_of.insert(ordinal, slot);
        self.live.insert(ordinal);
        self.total_len += u64::from(len32);
    }

    /// Removes a document from every posting list and from the counts; whether it was live.
    pub fn remove(&mut self, ordinal: i64) -> Result<bool> {
        let ordinal = check_ordinal(ordinal)?;
        let Some(slot) = self.slot_of.remove(&ordinal) else {
            return Ok(false);
        };
        self.invalidate();
        if self.doc_terms_pending {
            self.scanned_removals += 1;
            if self.scanned_removals > SCANNED_REMOVALS {
                self.build_doc_terms();
            }
        }
        let mut doc = std::mem::take(&mut self.slots[slot as usize]);
        if self.doc_terms_pending && doc.terms.is_empty() {
            doc.terms = self.terms_of_slot(slot);
        }
        for &id in doc.terms.iter() {
            let p = &mut self.postings[id as usize];
            if p.remove(slot) == Some(TF_BIG) {
                self.big_tfs.remove(&(id, slot));
            }
            if p.slots.is_empty() {
                let term = std::mem::take(&mut p.term);
                *p = Posting::default();
                self.vocab.remove(&term);
                self.free_terms.push(id);
            }
        }
        self.total_len -= u64::from(doc.len);
        self.live.remove(ordinal);
        self.free_slots.push(slot);
        if let Some(d) = self.dense.as_mut() {
            d.remove(ordinal);
        }
        Ok(true)
    }

    /// A term's posting list in the contract's order: ordinals ascending, with their
    /// frequencies (the snapshot's form).
    pub(crate) fn posting_by_ordinal(&self, id: u32) -> (Vec<u32>, Vec<u32>) {
        let p = &self.postings[id as usize];
        let mut pairs: Vec<(u32, u32)> = p
            .slots
            .iter()
            .zip(&p.tfs)
            .map(|(&s, &t)| (self.slots[s as usize].ordinal, tf_of(&self.big_tfs, id, s, t)))
            .collect();
        // Already sorted unless a slot was reused; the sort checks that in one pass.
        pairs.sort_unstable_by_key(|&(o, _)| o);
        pairs.into_iter().unzip()
    }

    fn invalidate(&mut self) {
        *self.norms.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Rebuilds an index from snapshot parts (validated by the caller): live ordinals with their
    /// lengths ascending, and per term (sorted by bytes) its ordinals and frequencies.
    pub(crate) fn from_parts(
        dim: usize,
        docs: &[(u32, u32)],
        terms: Vec<(String, Vec<u32>, Vec<u32>)>,
    ) -> Result<Self> {
        let mut index = Self::new(dim as i64)?;
        index.slots.reserve(docs.len());
        index.slot_of.reserve(docs.len());
        // Slots are handed out in ascending ordinal order, so a document's slot is its position
        // in `docs`.
        for (slot, &(ordinal, len)) in docs.iter().enumerate() {
            index.slots.push(Slot { ordinal, len, terms: Box::default() });
            index.slot_of.insert(ordinal, slot as u32);
            index.live.insert(ordinal);
            index.total_len += u64::from(len);
        }
        let slot_by_ordinal = SlotTable::new(docs);
        // Each document's frequencies must sum to its length; the entries visit documents at
        // random, so this one counter per document is the load's main cost.
        let mut sums = vec![0u64; docs.len()];
        for (term, ords, tfs) in terms {
            let id = index.postings.len() as u32;
            let mut slots = Vec::with_capacity(ords.len());
            let mut small = Vec::with_capacity(ords.len());
            for (&o, &tf) in ords.iter().zip(&tfs) {
                let Some(slot) = slot_by_ordinal.get(o, &index.slot_of) else {
                    return Err(Error::corrupt("posting of a document that is not live"));
                };
                if tf == 0 {
                    return Err(Error::corrupt("zero term frequency"));
                }
                let sum = &mut sums[slot as usize];
                *sum = sum.wrapping_add(u64::from(tf));
                slots.push(slot);
                small.push(match u8::try_from(tf) {
                    Ok(t) if t < TF_BIG => t,
                    _ => {
                        index.big_tfs.insert((id, slot), tf);
                        TF_BIG
                    }
                });
            }
            let term: Box<str> = term.into();
            if index.vocab.insert(term.clone(), id).is_some() {
                return Err(Error::corrupt("duplicate term"));
            }
            index.postings.push(Posting { term, slots, tfs: small });
        }
        for (doc, &sum) in index.slots.iter().zip(&sums) {
            if sum != u64::from(doc.len) {
                return Err(Error::corrupt(format!(
                    "doc_lens: document {} has length {}, its term frequencies sum to {sum}",
                    doc.ordinal, doc.len
                )));
            }
        }
        index.doc_terms_pending = true;
        Ok(index)
    }

    /// The ids of the terms whose posting lists hold `slot` (ascending slots: a binary search
    /// each).
    fn terms_of_slot(&self, slot: u32) -> Box<[u32]> {
        let holds = |p: &&Posting| p.slots.binary_search(&slot).is_ok();
        self.postings
            .iter()
            .enumerate()
            .filter(|(_, p)| holds(p))
            .map(|(id, _)| id as u32)
            .collect()
    }

    /// Builds every slot's term list from the postings if a snapshot load left them out: a
    /// counting sort (terms ascend by id) into one flat array, cut into each slot's box.
    fn build_doc_terms(&mut self) {
        if !std::mem::take(&mut self.doc_terms_pending) {
            return;
        }
        let mut counts = vec![0usize; self.slots.len()];
        for posting in &self.postings {
            for &slot in &posting.slots {
                counts[slot as usize] += 1;
            }
        }
        let mut next = Vec::with_capacity(counts.len());
        let mut total = 0usize;
        for n in &mut counts {
            next.push(total);
            total += *n;
            *n = total; // now the end of the slot's run
        }
        let mut flat = vec![0u32; total];
        for (id, posting) in self.postings.iter().enumerate() {
            for &slot in &posting.slots {
                let at = &mut next[slot as usize];
                flat[*at] = id as u32;
                *at += 1;
            }
        }
        let mut start = 0;
        for (doc, &end) in self.slots.iter_mut().zip(&counts) {
            doc.terms = flat[start..end].into();
            start = end;
        }
    }
}

/// Ordinal -> slot while a snapshot loads: a direct table when the ordinals are dense enough
/// (the usual bank: ordinals handed out in sequence, a few removed), so each of the tens of
/// millions of posting entries costs one read of a small array; else the slot map's hash.
enum SlotTable {
    /// Every ordinal from the first to the last is live: the slot is the distance from the
    /// first (`first`, the number of documents).
    Offset(u32, u32),
    Direct(Vec<u32>),
    Hashed,
}

impl SlotTable {
    /// The table may be this many times the number of documents (4 bytes an entry) before the
    /// hash is used instead.
    const SPREAD: u64 = 4;

    fn new(docs: &[(u32, u32)]) -> Self {
        let (Some(&(min, _)), Some(&(max, _))) = (docs.first(), docs.last()) else {
            return Self::Hashed;
        };
        if (max - min) as usize == docs.len() - 1 {
            return Self::Offset(min, docs.len() as u32);
        }
        if u64::from(max) >= Self::SPREAD * docs.len() as u64 + 1024 {
            return Self::Hashed;
        }
        let mut table = vec![u32::MAX; max as usize + 1];
        for (slot, &(ordinal, _)) in docs.iter().enumerate() {
            table[ordinal as usize] = slot as u32;
        }
        Self::Direct(table)
    }

    #[inline]
    fn get(&self, ordinal: u32, slot_of: &HashMap<u32, u32>) -> Option<u32> {
        match self {
            Self::Offset(first, n) => ordinal.checked_sub(*first).filter(|s| s < n),
            Self::Direct(table) => table.get(ordinal as usize).copied().filter(|&s| s != u32::MAX),
            Self::Hashed => slot_of.get(&ordinal).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_table_maps_dense_and_sparse_ordinals_alike() {
        let empty: HashMap<u32, u32> = HashMap::default();
        for ordinals in [vec![0u32, 1, 2, 5, 9], vec![3, 70, 4_000_000_000], vec![7, 8, 9, 10]] {
            let docs: Vec<(u32, u32)> = ordinals.iter().map(|&o| (o, 1)).collect();
            let table = SlotTable::new(&docs);
            let slot_of: HashMap<u32, u32> =
                ordinals.iter().enumerate().map(|(s, &o)| (o, s as u32)).collect();
            let map = if matches!(table, SlotTable::Hashed) { &slot_of } else { &empty };
            for o in 0..100 {
                assert_eq!(table.get(o, map), slot_of.get(&o).copied(), "ordinal {o}");
            }
            assert_eq!(table.get(4_000_000_000, map), slot_of.get(&4_000_000_000).copied());
        }
        assert!(matches!(SlotTable::new(&[(0, 1), (5, 1)]), SlotTable::Direct(_)));
        assert!(matches!(SlotTable::new(&[(4, 1), (5, 1)]), SlotTable::Offset(4, 2)));
        assert!(matches!(SlotTable::new(&[(0, 1), (4_000_000_000, 1)]), SlotTable::Hashed));
        assert!(matches!(SlotTable::new(&[]), SlotTable::Hashed));
    }

    #[test]
    fn add_remove_keep_statistics_exact() {
        let mut ix = BankIndex::new(0).unwrap();
        ix.add(3, "rust borrow checker rust", None).unwrap();
        ix.add(1, "python borrow", None).unwrap();
        ix.add(2, "", None).unwrap();
        assert_eq!(ix.stats(), Stats { docs: 3, terms: 4, total_len: 6, vectors: 0, dim: 0 });
        assert!(ix.contains(2));
        assert_eq!(ix.add(1, "again", None).unwrap_err(), Error::DuplicateOrdinal(1));
        assert!(ix.remove(3).unwrap());
        assert!(!ix.remove(3).unwrap());
        assert_eq!(ix.stats(), Stats { docs: 2, terms: 2, total_len: 2, vectors: 0, dim: 0 });
        assert_eq!(ix.posting_by_ordinal(ix.vocab["borrow"]), (vec![1], vec![1]));
        // The freed slot and term ids are reused.
        ix.add(7, "checker", None).unwrap();
        assert_eq!(ix.slots.len(), 3);
        assert_eq!(ix.stats().terms, 3);
    }

    #[test]
    fn postings_stay_sorted_for_out_of_order_ordinals() {
        let mut ix = BankIndex::new(0).unwrap();
        for o in [10, 4, 7, 1, 12] {
            ix.add(o, "common word", None).unwrap();
        }
        let id = ix.vocab["common"];
        assert_eq!(ix.posting_by_ordinal(id), (vec![1, 4, 7, 10, 12], vec![1; 5]));
        // Slot order after a reuse: ordinal 0 takes 4's slot, between 10's and 7's.
        assert!(ix.remove(4).unwrap());
        ix.add(0, "common", None).unwrap();
        assert_eq!(ix.postings[id as usize].slots, [0, 1, 2, 3, 4]);
        assert_eq!(ix.posting_by_ordinal(id), (vec![0, 1, 7, 10, 12], vec![1; 5]));
    }

    #[test]
    fn add_many_validates_everything_first() {
        let mut ix = BankIndex::new(2).unwrap();
        let v = 1i16.to_le_bytes().repeat(2);
        let err = ix.add_many(&[1, 2, 1], &["a", "b", "c"], None).unwrap_err();
        assert_eq!(err.to_string(), "ordinal 1 is already indexed");
        let err = ix.add_many(&[1, -5], &["a", "b"], None).unwrap_err();
        assert_eq!(err.to_string(), "ordinal must be between 0 and 4294967295, got -5");
        let err = ix
            .add_many(&[1, 2], &["a", "b"], Some(&[Some(&v[..]), Some(&[0u8, 0, 0, 0][..])]))
            .unwrap_err();
        assert_eq!(err, Error::ZeroVector);
        assert_eq!(ix.add_many(&[1], &["a", "b"], None).unwrap_err(), Error::LengthMismatch);
        assert!(ix.is_empty());
        ix.add_many(&[1, 2], &["a b", "c"], Some(&[Some(&v[..]), None])).unwrap();
        assert_eq!(ix.stats().vectors, 1);
        assert_eq!(ix.vector(1), Some(&[1i16, 1][..]));
        assert_eq!(
            BankIndex::new(4097).unwrap_err().to_string(),
            "dim must be between 0 and 4096, got 4097"
        );
        let mut no_dense = BankIndex::new(0).unwrap();
        assert_eq!(
            no_dense.add(1, "x", Some(&v)).unwrap_err().to_string(),
            "vector has 2 dimensions, index has 0"
        );
    }
}
