//! Dense vectors of one index: exact integer scoring of every vector up to a size threshold,
//! of the candidates a sign-bit scan proposes above it, of HNSW proposals in the largest banks
//! (docs/parity.md, "Dense stream").

use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};

use roaring::RoaringBitmap;
use usearch::{Index as Hnsw, IndexOptions, MetricKind, ScalarKind};

use crate::allow::AllowSet;
use crate::error::{Error, HnswOp, Result};
use crate::generated::{
    DENSE_EXACT_MAX, DENSE_GRAPH_MIN, DENSE_SCALE, DENSE_SIGN_CANDIDATES, DENSE_SIGN_RESCORED,
    HNSW_CONNECTIVITY, HNSW_EXPANSION_ADD, HNSW_EXPANSION_SEARCH, HNSW_OVERSAMPLE, HNSW_SCALAR,
};
use crate::rank::{canon, Key, TopK};
use crate::signs;

/// The canonical divisor: the exactly converted integer `DENSE_SCALE * DENSE_SCALE`, the same
/// value as Python's `float(DENSE_SCALE * DENSE_SCALE)`.
const DIVISOR: f64 = (DENSE_SCALE as i64 * DENSE_SCALE as i64) as f64;

/// Decodes little-endian int16 bytes, checked against the index dimension.
pub fn decode(bytes: &[u8], dim: usize) -> Result<Vec<i16>> {
    if dim == 0 || bytes.len() != 2 * dim {
        return Err(Error::VectorDim { got: bytes.len() / 2, dim });
    }
    let v: Vec<i16> = bytes.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect();
    if v.iter().all(|&x| x == 0) {
        return Err(Error::ZeroVector);
    }
    Ok(v)
}

/// The canonical score of an integer dot product.
#[inline]
pub fn score(dot: i64) -> f64 {
    canon(dot as f64 / DIVISOR)
}

/// The scalar type of the graph's copy of the vectors (`HNSW_SCALAR`; codegen admits only these).
const GRAPH_SCALAR: ScalarKind = match HNSW_SCALAR.as_bytes() {
    b"f32" => ScalarKind::F32,
    b"f16" => ScalarKind::F16,
    b"bf16" => ScalarKind::BF16,
    b"i8" => ScalarKind::I8,
    _ => panic!("unknown HNSW_SCALAR"),
};

/// The f32 vector handed to the graph: usearch converts it to [`GRAPH_SCALAR`] itself, in the
/// same C++ (the pinned release) as the Python twin's binding.
fn to_f32(v: &[i16]) -> Vec<f32> {
    // Same op as the Python twin: `vec.astype(np.float32) / np.float32(DENSE_SCALE)`.
    v.iter().map(|&x| f32::from(x) / DENSE_SCALE as f32).collect()
}

/// A change to the vectors made while a graph build is under way, replayed onto the graph
/// when it is installed.
enum Change {
    Add(u32, Vec<i16>),
    Remove(u32),
}

type Journal = Mutex<Vec<Change>>;

/// Vectors by ordinal, stored row-major in one buffer (a removed row is filled by the last one).
pub struct DenseStore {
    dim: usize,
    row_of: HashMap<u32, usize>,
    ords: Vec<u32>,
    data: Vec<i16>,
    /// Each row's sign bits (bit `i` set when component `i` > 0), `words` u64s a row, in the
    /// rows' order.
    signs: Vec<u64>,
    words: usize,
    /// The ordinals with a vector, for filtered searches.
    members: RoaringBitmap,
    /// Never built by a search: installed by [`DenseStore::install_graph`] (or loaded from a
    /// snapshot), then kept in step with every add and remove; saved in snapshots.
    hnsw: Option<Hnsw>,
    /// The journal of the newest [`GraphBuild`], while it is alive: changes made after it was
    /// planned are recorded there. A dropped build stops the recording by itself.
    journal: Mutex<Weak<Journal>>,
    exact_max: usize,
    /// Banks of more than this many vectors use the graph (once built), smaller ones the sign
    /// scan; half of it or fewer drop an installed graph.
    graph_min: usize,
    /// Candidates the sign scan's Hamming distances propose, and how many of them its second
    /// stage keeps for exact re-scoring.
    sign_candidates: usize,
    sign_rescored: usize,
    /// Admits at most [`search_slots`] searches of the graph at once (see there).
    gate: SearchGate,
}

/// The thread contexts every graph reserves, and so how many searches of one graph may run at
/// once. usearch's search borrows a free context per call (its `any_thread`) and *fails* when
/// none is free, and a reserve without a thread count reserves only as many as the machine has
/// cores: the fourth concurrent recall on a 2-core machine got "hnsw graph search failed"
/// (benchmarks/soak.py). Contexts beyond slot 0 never change a graph (insertions take slot 0,
/// and each slot's level generator is seeded by its number), so the count is free to vary.
pub fn search_slots() -> usize {
    static SLOTS: OnceLock<usize> = OnceLock::new();
    *SLOTS.get_or_init(|| {
        std::thread::available_parallelism().map_or(4, std::num::NonZero::get).clamp(4, 64)
    })
}

/// A counting semaphore of [`search_slots`] permits: a search past them waits for a context
/// instead of failing.
struct SearchGate {
    free: Mutex<usize>,
    freed: Condvar,
}

impl SearchGate {
    fn new() -> Self {
        Self { free: Mutex::new(search_slots()), freed: Condvar::new() }
    }

    fn enter(&self) -> SearchPermit<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        SearchPermit(self)
    }
}

struct SearchPermit<'a>(&'a SearchGate);

impl Drop for SearchPermit<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

/// A graph built off the index: planned from `&DenseStore` (a copy of the vectors in ascending
/// ordinal order), built with no borrow of the store (so the caller can hold no lock), then
/// installed with `&mut DenseStore`, which replays the changes made meanwhile.
pub struct GraphBuild {
    dim: usize,
    ords: Vec<u32>,
    data: Vec<i16>,
    journal: Arc<Journal>,
    cancel: Arc<AtomicBool>,
    graph: Option<Hnsw>,
}

impl GraphBuild {
    /// A flag that makes a running [`GraphBuild::build`] stop early (and the build useless).
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        self.cancel.clone()
    }

    /// Builds the graph: every planned vector in ascending ordinal order, on one thread (the
    /// graph the Python twin builds), then the changes recorded so far, in order (the rest is
    /// replayed by the install). `false` when cancelled.
    pub fn build(&mut self) -> Result<bool> {
        if self.graph.is_some() {
            return Ok(true);
        }
        let graph = new_graph(self.dim)?;
        if !reserve(&graph, self.ords.len().max(1)) {
            return Err(Error::Hnsw(HnswOp::Build));
        }
        for (&o, row) in self.ords.iter().zip(self.data.chunks_exact(self.dim)) {
            if self.cancel.load(Ordering::Relaxed) {
                return Ok(false);
            }
            // The planned vectors make the graph: one the library cannot take fails the build
            // (as the Python twin's bulk insertion does), rather than leave a partial graph.
            if !graph_add(&graph, o, row) {
                return Err(Error::Hnsw(HnswOp::Build));
            }
        }
        // Catch up with the changes recorded meanwhile (a bulk import goes on during a build),
        // so that the install, under the index's write lock, replays only a short tail.
        loop {
            let changes = take_journal(&self.journal);
            let caught_up = changes.len() <= CATCH_UP_TAIL;
            replay(&graph, changes);
            if self.cancel.load(Ordering::Relaxed) {
                return Ok(false);
            }
            if caught_up {
                break;
            }
        }
        self.graph = Some(graph);
        Ok(true)
    }
}

/// A build stops catching up with the journal once a pass finds at most this many changes.
const CATCH_UP_TAIL: usize = 64;

fn take_journal(journal: &Journal) -> Vec<Change> {
    std::mem::take(&mut *journal.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Applies recorded changes to a graph, in the order they were made.
fn replay(graph: &Hnsw, changes: Vec<Change>) {
    for change in changes {
        match change {
            Change::Add(o, v) => {
                let _ = graph_add(graph, o, &v);
            }
            Change::Remove(o) => graph_remove(graph, o),
        }
    }
}

impl DenseStore {
    pub fn new(dim: usize) -> Self {
        Self {
            dim,
            row_of: HashMap::default(),
            ords: Vec::new(),
            data: Vec::new(),
            signs: Vec::new(),
            words: dim.div_ceil(64),
            members: RoaringBitmap::new(),
            hnsw: None,
            journal: Mutex::new(Weak::new()),
            exact_max: DENSE_EXACT_MAX,
            graph_min: DENSE_GRAPH_MIN,
            sign_candidates: DENSE_SIGN_CANDIDATES,
            sign_rescored: DENSE_SIGN_RESCORED,
            gate: SearchGate::new(),
        }
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn len(&self) -> usize {
        self.ords.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ords.is_empty()
    }

    /// Lowers the exact-search threshold and the graph's with it (tests exercise the HNSW path
    /// on small data).
    #[doc(hidden)]
    pub fn set_exact_max(&mut self, n: usize) {
        self.set_tiers(n, n, DENSE_SIGN_CANDIDATES, DENSE_SIGN_RESCORED);
    }

    /// Sets the search tiers' bounds (tests exercise the sign scan on small data).
    #[doc(hidden)]
    pub fn set_tiers(
        &mut self,
        exact_max: usize,
        graph_min: usize,
        sign_candidates: usize,
        sign_rescored: usize,
    ) {
        self.exact_max = exact_max;
        self.graph_min = graph_min.max(exact_max);
        self.sign_candidates = sign_candidates.max(1);
        self.sign_rescored = sign_rescored.max(1);
    }

    pub fn get(&self, ordinal: u32) -> Option<&[i16]> {
        self.row_of.get(&ordinal).map(|&r| self.row(r))
    }

    fn row(&self, r: usize) -> &[i16] {
        &self.data[r * self.dim..(r + 1) * self.dim]
    }

    fn sign_row(&self, r: usize) -> &[u64] {
        &self.signs[r * self.words..(r + 1) * self.words]
    }

    /// Drops an installed graph once the bank has shrunk to half the graph's threshold: the
    /// scan serves it, and the graph would cost memory and an insertion per add for nothing
    /// (half, so that a bank hovering at the threshold does not rebuild it again and again).
    fn shed_graph(&mut self) {
        if self.hnsw.is_some() && self.len() <= self.graph_min / 2 {
            self.hnsw = None;
        }
    }

    /// Records a change in the journal of the graph build under way, if any.
    fn record(&mut self, change: impl FnOnce() -> Change) {
        let slot = self.journal.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(journal) = slot.upgrade() {
            journal.lock().unwrap_or_else(|e| e.into_inner()).push(change());
        }
    }

    /// Adds a vector already checked by [`decode`]; the ordinal must not have one.
    pub fn add(&mut self, ordinal: u32, vector: &[i16]) {
        debug_assert_eq!(vector.len(), self.dim);
        let prev = self.row_of.insert(ordinal, self.ords.len());
        debug_assert!(prev.is_none());
        self.ords.push(ordinal);
        self.members.insert(ordinal);
        self.data.extend_from_slice(vector);
        signs::push(&mut self.signs, vector, self.words);
        self.shed_graph();
        if let Some(graph) = &self.hnsw {
            let _ = graph_add(graph, ordinal, vector);
        }
        self.record(|| Change::Add(ordinal, vector.to_vec()));
    }

    pub fn remove(&mut self, ordinal: u32) -> bool {
        let Some(r) = self.row_of.remove(&ordinal) else {
            return false;
        };
        let last = self.ords.len() - 1;
        if r != last {
            let moved = self.ords[last];
            self.ords[r] = moved;
            self.data.copy_within(last * self.dim..(last + 1) * self.dim, r * self.dim);
            self.signs.copy_within(last * self.words..(last + 1) * self.words, r * self.words);
            self.row_of.insert(moved, r);
        }
        self.ords.pop();
        self.members.remove(ordinal);
        self.data.truncate(last * self.dim);
        self.signs.truncate(last * self.words);
        if let Some(graph) = &self.hnsw {
            graph_remove(graph, ordinal);
        }
        self.shed_graph();
        self.record(|| Change::Remove(ordinal));
        true
    }

    /// The ordinals with a vector.
    pub fn docs(&self) -> RoaringBitmap {
        self.members.clone()
    }

    /// Whether a search would use a graph that is not there: more than `graph_min` vectors
    /// and none installed. Searches scan sign bits meanwhile.
    pub fn needs_graph(&self) -> bool {
        self.hnsw.is_none() && self.len() > self.graph_min
    }

    /// Phase 1 of a detached graph build: copies the vectors in ascending ordinal order and
    /// starts recording the changes made after this point (a newer plan supersedes an older
    /// one). `None` when no graph is needed.
    pub fn plan_graph(&self) -> Option<GraphBuild> {
        if !self.needs_graph() {
            return None;
        }
        let journal = Arc::new(Mutex::new(Vec::new()));
        *self.journal.lock().unwrap_or_else(|e| e.into_inner()) = Arc::downgrade(&journal);
        let mut ords = Vec::with_capacity(self.len());
        let mut data = Vec::with_capacity(self.data.len());
        for (o, row) in self.sorted_rows() {
            ords.push(o);
            data.extend_from_slice(row);
        }
        let cancel = Arc::new(AtomicBool::new(false));
        Some(GraphBuild { dim: self.dim, ords, data, journal, cancel, graph: None })
    }

    /// Phase 3: replays onto the built graph, in call order, the changes recorded since it was
    /// planned, and installs it. `false` (nothing installed) when the build was not finished,
    /// was cancelled, was superseded by a newer plan or comes from another store, or when a
    /// graph is already installed.
    pub fn install_graph(&mut self, build: GraphBuild) -> bool {
        let slot = self.journal.get_mut().unwrap_or_else(|e| e.into_inner());
        let current = std::ptr::eq(slot.as_ptr(), Arc::as_ptr(&build.journal));
        if current {
            *slot = Weak::new();
        }
        let Some(graph) = build.graph else { return false };
        if !current || self.hnsw.is_some() || build.cancel.load(Ordering::Relaxed) {
            return false;
        }
        replay(&graph, take_journal(&build.journal));
        self.hnsw = Some(graph);
        true
    }

    /// The `k` best `(ordinal, score)` for `query` among the ordinals `allow` admits
    /// (docs/parity.md, "Dense stream" and "Filters").
    pub fn search(
        &self,
        query: &[i16],
        k: usize,
        allow: Option<&AllowSet>,
    ) -> Result<Vec<(u32, f64)>> {
        let mut top = TopK::new(k);
        let prepared = crate::dot::Query::new(query);
        let mut consider = |o: u32, v: &[i16]| {
            top.push(Key { primary: score(prepared.dot(v)), secondary: 0.0, ordinal: o });
        };
        let tier = match self.hnsw.as_ref() {
            _ if self.len() <= self.exact_max => Tier::Exact,
            Some(graph) if self.len() > self.graph_min => Tier::Graph(graph),
            _ => Tier::Signs,
        };
        // A filter that leaves at most `exact_max` vectors is searched exactly, whatever the tier.
        let few = allow.filter(|a| {
            !matches!(tier, Tier::Exact)
                && a.bitmap().intersection_len(&self.members) <= self.exact_max as u64
        });
        match (tier, few) {
            (_, Some(a)) => {
                for o in a.bitmap() & &self.members {
                    if let Some(v) = self.get(o) {
                        consider(o, v);
                    }
                }
            }
            (Tier::Exact, None) => {
                for (r, &o) in self.ords.iter().enumerate() {
                    if allow.is_none_or(|a| a.contains(o)) {
                        consider(o, self.row(r));
                    }
                }
            }
            (Tier::Graph(graph), None) => {
                for o in self.graph_proposals(graph, query, k, allow)? {
                    if let Some(v) = self.get(o) {
                        consider(o, v);
                    }
                }
            }
            (Tier::Signs, None) => {
                // In row order, each row's load started a few rows ahead: the candidates lie
                // all over the matrix, and their reads, not the dot products, bound this loop.
                let mut rows = self.sign_candidates(query, k, allow);
                rows.sort_unstable();
                for (i, &r) in rows.iter().enumerate() {
                    if let Some(&ahead) = rows.get(i + PREFETCH_AHEAD) {
                        signs::prefetch(self.row(ahead));
                    }
                    consider(self.ords[r], self.row(r));
                }
            }
        }
        Ok(top.into_sorted().into_iter().map(|k| (k.ordinal, k.primary)).collect())
    }

    /// The graph's distinct proposals that `allow` admits, ascending: `k * HNSW_OVERSAMPLE`
    /// asked for, twice as many while fewer than `k` pass, until it has proposed every vector.
    fn graph_proposals(
        &self,
        graph: &Hnsw,
        query: &[i16],
        k: usize,
        allow: Option<&AllowSet>,
    ) -> Result<Vec<u32>> {
        let query = to_f32(query);
        let mut wanted = self.len().min(k.saturating_mul(HNSW_OVERSAMPLE));
        loop {
            let found = {
                // The context is back in usearch's pool when `search` returns (the C++ result
                // that holds it is dropped once the matches are copied out).
                let _permit = self.gate.enter();
                graph.search(&query, wanted)
            }
            .map_err(|_| Error::Hnsw(HnswOp::Search))?;
            let mut kept: Vec<u32> = found
                .keys
                .iter()
                .filter_map(|&key| u32::try_from(key).ok())
                .filter(|&o| allow.is_none_or(|a| a.contains(o)) && self.get(o).is_some())
                .collect();
            kept.sort_unstable();
            kept.dedup();
            if allow.is_none() || kept.len() >= k || wanted >= self.len() {
                return Ok(kept);
            }
            wanted = self.len().min(wanted.saturating_mul(2));
        }
    }

    /// The rows the sign scan proposes for exact scoring (docs/parity.md, "Dense stream"), in
    /// no particular order: of the vectors `allow` admits, the `c1 = max(sign_candidates, c2)`
    /// nearest to `query` by the Hamming distance of their sign bits (ties by ascending
    /// ordinal), then of those the `c2 = max(sign_rescored, k)` whose positive components hold
    /// the largest sum of the query's components (ties by ascending ordinal).
    fn sign_candidates(&self, query: &[i16], k: usize, allow: Option<&AllowSet>) -> Vec<usize> {
        let c2 = self.sign_rescored.max(k);
        let c1 = self.sign_candidates.max(c2);
        let mut q = Vec::with_capacity(self.words);
        signs::push(&mut q, query, self.words);
        let mut rows = self.nearest_signs(&q, c1, allow);
        if rows.len() <= c2 {
            return rows;
        }
        let asym = signs::Asym::new(query, self.words);
        let mut scored: Vec<(i32, u32, usize)> = Vec::with_capacity(rows.len());
        for (i, &r) in rows.iter().enumerate() {
            if let Some(&ahead) = rows.get(i + 2 * PREFETCH_AHEAD) {
                signs::prefetch(self.sign_row(ahead));
            }
            scored.push((asym.score(self.sign_row(r)), self.ords[r], r));
        }
        // Highest score first, then lowest ordinal: a total order (ordinals are distinct).
        scored.select_nth_unstable_by(c2 - 1, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        rows.clear();
        rows.extend(scored[..c2].iter().map(|&(_, _, r)| r));
        rows
    }

    /// The rows of the `wanted` vectors `allow` admits with the smallest Hamming distance to
    /// the query's sign bits `q`, ties by ascending ordinal; every admitted row when there
    /// are no more.
    fn nearest_signs(&self, q: &[u64], wanted: usize, allow: Option<&AllowSet>) -> Vec<usize> {
        // One distance a row and how many rows lie at each distance: the cut-off distance then
        // follows without sorting. A row the filter rejects gets `FILTERED`, out of the counts.
        const FILTERED: u16 = u16::MAX;
        let (mut dist, mut at) = signs::distances(&self.signs, q);
        if let Some(a) = allow {
            for (d, &o) in dist.iter_mut().zip(&self.ords) {
                if !a.contains(o) {
                    at[usize::from(*d)] -= 1;
                    *d = FILTERED;
                }
            }
        }
        let admitted: usize = at.iter().map(|&n| n as usize).sum();
        if admitted <= wanted {
            return (0..self.len()).filter(|&r| dist[r] != FILTERED).collect();
        }
        // The smallest distance `cut` with at least `wanted` rows at or below it.
        let mut below = 0;
        let mut cut = 0;
        while below + (at[cut] as usize) < wanted {
            below += at[cut] as usize;
            cut += 1;
        }
        let mut rows: Vec<usize> = Vec::with_capacity(wanted);
        let mut ties: Vec<usize> = Vec::with_capacity(at[cut] as usize);
        let cut = cut as u16;
        signs::each_at_most(&dist, cut, |r, d| if d < cut { rows.push(r) } else { ties.push(r) });
        let need = wanted - rows.len();
        if need < ties.len() {
            ties.select_nth_unstable_by_key(need, |&r| self.ords[r]);
            ties.truncate(need);
        }
        rows.extend(ties);
        rows
    }

    /// The serialised graph, when one is installed.
    pub fn hnsw_bytes(&self) -> Result<Option<Vec<u8>>> {
        let Some(graph) = self.hnsw.as_ref() else { return Ok(None) };
        let mut buf = vec![0u8; graph.serialized_length()];
        graph.save_to_buffer(&mut buf).map_err(|_| Error::Hnsw(HnswOp::Save))?;
        Ok(Some(buf))
    }

    /// The length of [`DenseStore::hnsw_bytes`], without serialising.
    pub fn hnsw_len(&self) -> Option<usize> {
        self.hnsw.as_ref().map(Hnsw::serialized_length)
    }

    /// Serialises the graph into `out`, exactly [`DenseStore::hnsw_len`] bytes (snapshots write
    /// it in place).
    pub fn save_hnsw(&self, out: &mut [u8]) -> Result<()> {
        let Some(graph) = self.hnsw.as_ref() else { return Err(Error::Hnsw(HnswOp::Save)) };
        graph.save_to_buffer(out).map_err(|_| Error::Hnsw(HnswOp::Save))
    }

    /// Installs a graph read from a snapshot; it must describe exactly these vectors.
    pub fn load_hnsw(&mut self, bytes: &[u8]) -> Result<()> {
        let bad = |what: &str| Error::corrupt(format!("hnsw: {what}"));
        // Checked in this order by both kernels: the header, what it says, the body, its keys.
        let meta = Hnsw::metadata_from_buffer(bytes).map_err(|_| bad("header"))?;
        if meta.dimensions != self.dim as u64
            || meta.count_present != self.len() as u64
            || meta.metric != MetricKind::IP
            || meta.quantization != GRAPH_SCALAR
        {
            return Err(bad("does not match the vectors"));
        }
        let graph = new_graph(self.dim)?;
        graph.load_from_buffer(bytes).map_err(|_| bad("body"))?;
        // A loaded graph has the loading machine's default number of contexts.
        if !reserve(&graph, graph.capacity()) {
            return Err(Error::Hnsw(HnswOp::Create));
        }
        if graph.multi()
            || graph.size() != self.len()
            || self.ords.iter().any(|&o| !graph.contains(u64::from(o)))
        {
            return Err(bad("does not match the vectors"));
        }
        self.hnsw = Some(graph);
        Ok(())
    }

    /// Rows in ascending ordinal order, for snapshots.
    pub fn sorted_rows(&self) -> impl Iterator<Item = (u32, &[i16])> {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_unstable_by_key(|&r| self.ords[r]);
        order.into_iter().map(move |r| (self.ords[r], self.row(r)))
    }
}

/// How many candidate rows ahead of the one scored the scan's re-scoring prefetches (2, 4
/// and 8 measured alike at 100k; docs/dense.md, "The sign scan").
const PREFETCH_AHEAD: usize = 4;

/// Which search a [`DenseStore::search`] makes (the graph's only when one is installed).
enum Tier<'a> {
    Exact,
    Signs,
    Graph(&'a Hnsw),
}

fn new_graph(dim: usize) -> Result<Hnsw> {
    let options = IndexOptions {
        dimensions: dim,
        metric: MetricKind::IP,
        quantization: GRAPH_SCALAR,
        connectivity: HNSW_CONNECTIVITY,
        expansion_add: HNSW_EXPANSION_ADD,
        expansion_search: HNSW_EXPANSION_SEARCH,
        multi: false,
    };
    Hnsw::new(&options).map_err(|_| Error::Hnsw(HnswOp::Create))
}

/// Inserts one vector; `false` when the library failed. Outside a build the failure is ignored:
/// a graph in use that misses a vector only lacks one proposal, and exact scores never depend
/// on the graph (the Python twin ignores it the same way).
fn graph_add(graph: &Hnsw, ordinal: u32, vector: &[i16]) -> bool {
    // The C++ index needs capacity reserved ahead of insertion; grow geometrically.
    let capacity = if graph.size() < graph.capacity() {
        graph.capacity()
    } else {
        (graph.capacity() * 2).max(64)
    };
    // Reserve before every insertion, even with room to spare: a reserve hands the index's
    // thread slots out again from slot 0, so the insertion takes slot 0 and draws its level from
    // that slot's generator, as the Python binding's `add(threads=1)` does (docs/parity.md,
    // "Dense stream"). The store is borrowed exclusively here: no search holds a slot.
    reserve(graph, capacity);
    graph.add(u64::from(ordinal), &to_f32(vector)).is_ok()
}

/// Reserves room for `capacity` vectors and [`search_slots`] thread contexts. Never while a
/// search runs: it hands the contexts out anew (callers hold the store exclusively).
fn reserve(graph: &Hnsw, capacity: usize) -> bool {
    graph.reserve_capacity_and_threads(capacity, search_slots()).is_ok()
}

fn graph_remove(graph: &Hnsw, ordinal: u32) {
    // A failed removal only leaves a stale proposal, which re-scoring skips.
    let _ = graph.remove(u64::from(ordinal));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(v: &[i16]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn decode_checks_dimension_and_zero() {
        assert_eq!(decode(&bytes(&[1, 2, 3]), 3).unwrap(), [1, 2, 3]);
        assert_eq!(decode(&[1, 2, 3], 2).unwrap_err(), Error::VectorDim { got: 1, dim: 2 });
        assert_eq!(
            decode(&bytes(&[1]), 0).unwrap_err().to_string(),
            "vector has 1 dimensions, index has 0"
        );
        assert_eq!(decode(&bytes(&[0, 0]), 2).unwrap_err(), Error::ZeroVector);
    }

    #[test]
    fn score_is_exact_division() {
        assert_eq!(DIVISOR, 1_073_676_289.0);
        assert_eq!(score(crate::dot::scalar(&[32767, 0], &[32767, 0])), 1.0);
        assert_eq!(score(crate::dot::scalar(&[-3, 0], &[0, 5])).to_bits(), 0.0f64.to_bits());
    }

    #[test]
    fn exact_search_and_removal() {
        let mut s = DenseStore::new(2);
        s.add(5, &[100, 0]);
        s.add(2, &[100, 0]);
        s.add(9, &[0, 100]);
        let got = s.search(&[1, 0], 10, None).unwrap();
        assert_eq!(got.iter().map(|e| e.0).collect::<Vec<_>>(), [2, 5, 9]);
        assert!(s.remove(2));
        assert!(!s.remove(2));
        assert_eq!(s.get(9), Some(&[0i16, 100][..]));
        let allow = AllowSet::from_ordinals([9]);
        assert_eq!(s.search(&[1, 0], 10, Some(&allow)).unwrap(), vec![(9, 0.0)]);
    }

    /// 64 small vectors, more than an exact threshold of 4.
    fn above_threshold() -> DenseStore {
        let mut s = DenseStore::new(4);
        s.set_exact_max(4);
        for o in 0..64u32 {
            s.add(o, &[(o as i16) - 30, 7, (o as i16 % 5) + 1, -2]);
        }
        s
    }

    fn installed(mut s: DenseStore) -> DenseStore {
        let mut build = s.plan_graph().unwrap();
        assert!(build.build().unwrap());
        assert!(s.install_graph(build));
        s
    }

    #[test]
    fn search_above_the_threshold_without_a_graph_is_exact() {
        let s = above_threshold();
        let mut exact = DenseStore::new(4);
        for (o, v) in s.sorted_rows() {
            exact.add(o, v);
        }
        let allow = AllowSet::from_ordinals(10..40);
        for q in [[3, 1, 2, 0], [-5, 0, 1, 9]] {
            assert_eq!(s.search(&q, 7, None).unwrap(), exact.search(&q, 7, None).unwrap());
            assert_eq!(
                s.search(&q, 3, Some(&allow)).unwrap(),
                exact.search(&q, 3, Some(&allow)).unwrap()
            );
        }
        assert!(s.needs_graph(), "a search never builds the graph");
        assert!(s.hnsw_bytes().unwrap().is_none());
        assert!(!exact.needs_graph() && exact.plan_graph().is_none());
    }

    /// The sign scan spelled out: distances one component at a time, the `max(c1, c2, k)`
    /// nearest by (distance, ordinal), of those the `max(c2, k)` best by (-sum of the query at
    /// positive components, ordinal), then exact scores.
    fn sign_reference(
        s: &DenseStore,
        q: &[i16],
        k: usize,
        c1: usize,
        c2: usize,
    ) -> Vec<(u32, f64)> {
        let c2 = c2.max(k);
        let mut rows: Vec<(u32, u32, &[i16])> = s
            .sorted_rows()
            .map(|(o, v)| {
                let d = v.iter().zip(q).filter(|(&a, &b)| (a > 0) != (b > 0)).count() as u32;
                (d, o, v)
            })
            .collect();
        rows.sort_unstable_by_key(|&(d, o, _)| (d, o));
        rows.truncate(c1.max(c2));
        let asym = |v: &[i16]| -> i64 {
            v.iter().zip(q).filter(|(&a, _)| a > 0).map(|(_, &b)| i64::from(b)).sum()
        };
        rows.sort_unstable_by_key(|&(_, o, v)| (-asym(v), o));
        rows.truncate(c2);
        let mut exact = DenseStore::new(s.dim());
        for (_, o, v) in rows {
            exact.add(o, v);
        }
        exact.search(q, k, None).unwrap()
    }

    #[test]
    fn the_sign_scan_rescores_the_nearest_sign_patterns() {
        // 70-d (a partial second word), few distinct components so distances tie often.
        let mut s = DenseStore::new(70);
        s.set_tiers(8, 10_000, 30, 12);
        let vector = |seed: u32| -> Vec<i16> {
            (0..70u32).map(|i| [-2, 0, 1, 3, -1][((seed * 31 + i * 7) % 5) as usize]).collect()
        };
        for o in 0..200u32 {
            s.add(o, &vector(o % 37 + o / 50));
        }
        for o in (0..200).step_by(9) {
            assert!(s.remove(o));
        }
        s.add(9, &vector(3));
        assert!(!s.needs_graph());
        for seed in [1, 5, 40] {
            let q = vector(seed);
            for k in [1, 10, 30] {
                assert_eq!(s.search(&q, k, None).unwrap(), sign_reference(&s, &q, k, 30, 12));
            }
            // Filtered: the scan admits only the allowed rows.
            let allow = AllowSet::from_ordinals((0..200).filter(|o| o % 4 == 1));
            let mut only = DenseStore::new(70);
            only.set_tiers(8, 10_000, 30, 12);
            for (o, v) in s.sorted_rows().filter(|(o, _)| o % 4 == 1) {
                only.add(o, v);
            }
            let got = s.search(&q, 6, Some(&allow)).unwrap();
            assert_eq!(got, sign_reference(&only, &q, 6, 30, 12));
        }
    }

    #[test]
    fn hnsw_proposals_are_rescored_exactly() {
        let mut s = installed(above_threshold());
        assert!(!s.needs_graph() && s.plan_graph().is_none());
        let mut exact = DenseStore::new(4);
        for (o, v) in s.sorted_rows() {
            exact.add(o, v);
        }
        let q = [3, 1, 2, 0];
        // 10 wanted, 20 proposals: enough for the graph to reach the exact best here.
        let got = s.search(&q, 10, None).unwrap();
        // The graph's i8 copies of these near-parallel 4-d vectors tie, so it may propose
        // another of the exactly tied candidates; what it returns is scored exactly.
        let all = exact.search(&q, 64, None).unwrap();
        assert_eq!(got[0], all[0]);
        for hit in &got {
            assert!(all.contains(hit), "{hit:?} is not scored exactly");
        }
        // Along the query: first by the exact inner product and by the graph's cosine alike.
        s.add(100, &[3000, 1000, 2000, 0]);
        s.remove(63);
        let bytes = s.hnsw_bytes().unwrap().unwrap();
        let mut t = DenseStore::new(4);
        t.set_exact_max(4);
        for (o, v) in s.sorted_rows() {
            t.add(o, v);
        }
        t.load_hnsw(&bytes).unwrap();
        assert_eq!(t.search(&q, 5, None).unwrap(), s.search(&q, 5, None).unwrap());
        assert_eq!(s.search(&q, 1, None).unwrap()[0].0, 100);
    }

    #[test]
    fn a_selective_filter_never_empties_the_graph_stream() {
        // 400 vectors over a threshold of 4, the graph in use: a filter of 6 (at most the
        // threshold) is searched exactly; one of 100, far from the query, widens the graph's
        // proposals until `k` of them pass.
        let mut s = DenseStore::new(4);
        s.set_exact_max(4);
        for o in 0..400u32 {
            let x = o as i16;
            s.add(o, &[x - 200, (x % 9) + 1, 3, -(x % 4)]);
        }
        let s = installed(s);
        let mut exact = DenseStore::new(4);
        for (o, v) in s.sorted_rows() {
            exact.add(o, v);
        }
        let q = [300, 1, 1, 0];
        let few = AllowSet::from_ordinals([0, 1, 2, 3, 4, 5, 999]);
        assert_eq!(s.search(&q, 3, Some(&few)).unwrap(), exact.search(&q, 3, Some(&few)).unwrap());
        let far = AllowSet::from_ordinals(0..100);
        let got = s.search(&q, 5, Some(&far)).unwrap();
        assert_eq!(got.len(), 5);
        assert!(got.iter().all(|e| far.contains(e.0)));
        assert!(s.search(&q, 5, Some(&AllowSet::default())).unwrap().is_empty());
    }

    #[test]
    fn searches_between_insertions_do_not_change_the_graph() {
        // A search borrows a thread slot of the C++ index; every insertion must still draw its
        // level from slot 0, as the Python twin's does.
        let mut quiet = installed(above_threshold());
        let mut busy = installed(above_threshold());
        for o in 100..400u32 {
            let v = [(o % 13) as i16 - 6, (o % 7) as i16 + 1, (o % 3) as i16 - 1, 5];
            quiet.add(o, &v);
            for _ in 0..o % 3 {
                busy.search(&v, 2, None).unwrap();
            }
            busy.add(o, &v);
        }
        assert_eq!(quiet.hnsw_bytes().unwrap(), busy.hnsw_bytes().unwrap());
    }

    #[test]
    fn more_concurrent_searches_than_thread_contexts_all_succeed() {
        let s = installed(above_threshold());
        let queries: Vec<[i16; 4]> =
            (0..20).map(|i| [i - 10, 3 - i % 4, (i % 5) + 1, 2 * i - 7]).collect();
        let want: Vec<_> = queries.iter().map(|q| s.search(q, 5, None).unwrap()).collect();
        let threads = 3 * search_slots();
        let start = std::sync::Barrier::new(threads);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    start.wait();
                    for _ in 0..20 {
                        for (q, w) in queries.iter().zip(&want) {
                            assert_eq!(&s.search(q, 5, None).unwrap(), w);
                        }
                    }
                });
            }
        });
    }

    #[test]
    fn changes_during_a_detached_build_are_replayed_at_install() {
        // Reference: the graph built at once, then following the same changes.
        let mut reference = installed(above_threshold());
        let mut s = above_threshold();
        let mut build = s.plan_graph().unwrap();
        s.add(200, &[9, 9, 9, 9]);
        s.remove(3);
        reference.add(200, &[9, 9, 9, 9]);
        reference.remove(3);
        assert!(build.build().unwrap());
        s.remove(200);
        s.add(3, &[-1, 2, -3, 4]);
        s.add(201, &[900, -900, 900, -900]);
        reference.remove(200);
        reference.add(3, &[-1, 2, -3, 4]);
        reference.add(201, &[900, -900, 900, -900]);
        assert!(s.needs_graph(), "searches stay exact until the install");
        assert!(s.install_graph(build));
        assert_eq!(s.hnsw_bytes().unwrap(), reference.hnsw_bytes().unwrap());
        for q in [[3, 1, 2, 0], [900, -900, 900, -900], [-1, 2, -3, 4]] {
            assert_eq!(s.search(&q, 4, None).unwrap(), reference.search(&q, 4, None).unwrap());
        }
        assert_eq!(s.search(&[5, -5, 5, -5], 1, None).unwrap()[0].0, 201);
        // Changes after the install are not recorded any more, they go to the graph.
        s.add(202, &[1, 1, 1, 1]);
        reference.add(202, &[1, 1, 1, 1]);
        assert_eq!(s.hnsw_bytes().unwrap(), reference.hnsw_bytes().unwrap());
    }

    #[test]
    fn the_build_catches_up_with_a_long_journal() {
        let mut reference = installed(above_threshold());
        let mut s = above_threshold();
        let mut build = s.plan_graph().unwrap();
        for o in 1000..1200u32 {
            let v = [(o % 17) as i16 - 8, (o % 5) as i16 + 1, -3, (o % 11) as i16];
            s.add(o, &v);
            reference.add(o, &v);
        }
        s.remove(1100);
        reference.remove(1100);
        assert!(build.build().unwrap());
        assert!(build.journal.lock().unwrap().is_empty(), "replayed by the build");
        s.add(2000, &[1, 2, 3, 4]);
        reference.add(2000, &[1, 2, 3, 4]);
        assert!(s.install_graph(build));
        assert_eq!(s.hnsw_bytes().unwrap(), reference.hnsw_bytes().unwrap());
    }

    #[test]
    fn a_stale_cancelled_or_foreign_build_is_not_installed() {
        let mut s = above_threshold();
        let mut older = s.plan_graph().unwrap();
        let mut newer = s.plan_graph().unwrap();
        assert!(older.build().unwrap() && newer.build().unwrap());
        assert!(!s.install_graph(older), "superseded by a newer plan");
        let other = above_threshold();
        let mut foreign = other.plan_graph().unwrap();
        assert!(foreign.build().unwrap());
        assert!(!s.install_graph(foreign));
        assert!(s.install_graph(newer));
        assert!(s.plan_graph().is_none());

        let mut s = above_threshold();
        let unbuilt = s.plan_graph().unwrap();
        assert!(!s.install_graph(unbuilt));
        let mut cancelled = s.plan_graph().unwrap();
        cancelled.cancel_flag().store(true, Ordering::Relaxed);
        assert!(!cancelled.build().unwrap());
        assert!(!s.install_graph(cancelled));
        assert!(s.needs_graph());

        // A dropped plan stops the recording.
        drop(s.plan_graph().unwrap());
        s.add(300, &[1, 2, 3, 4]);
        assert!(s.journal.get_mut().unwrap().upgrade().is_none());
    }
}
