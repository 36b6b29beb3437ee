//! The dense stream searched beside the lexical pass: on a bank with many vectors, a recall
//! with a query vector starts its dense search on a helper thread while its own thread runs the
//! lexical pass, when a CPU is idle (docs/architecture.md, "A recall's two threads").
//!
//! Rankings do not change: the helper returns exactly what the recall's thread would have
//! computed, under a read lock taken while that thread holds its own, so both read one version
//! of the index. The helper only ever *tries* the lock: behind a queued writer (which waits for
//! the recall's lock) it gives up at once, and the recall searches itself, so no wait can form
//! a cycle. A recall that the lookup gate answers lexically does not wait for its helper.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, OnceLock, RwLock};

use memwire_core::generated::DENSE_GRAPH_MIN;
use memwire_core::{AllowSet, BankIndex, Result, Scored};

/// Banks with fewer vectors search without a helper: where the sign scan serves the dense
/// stream (below `DENSE_GRAPH_MIN`) a helper measured no faster (100k memories: recall p50
/// 865-907 µs with one, 877-896 without, 20% more CPU), where the graph does it gains a
/// quarter (1M: 1,917-2,059 µs against 2,547-2,968; docs/BENCHMARKS.md, "Session 21").
pub const HELPER_MIN_VECTORS: u64 = DENSE_GRAPH_MIN as u64;

/// Whether helpers may start, and from how many vectors (tests and benchmarks change them to
/// compare).
static ENABLED: AtomicBool = AtomicBool::new(true);
static MIN_VECTORS: AtomicU64 = AtomicU64::new(HELPER_MIN_VECTORS);

/// Helpers started since the process began.
static STARTED: AtomicU64 = AtomicU64::new(0);

/// Recalls running in this process, and their helpers: a helper starts only while this count
/// leaves a CPU idle, so concurrent recalls (a busy server) never compete with extra threads.
static BUSY: AtomicUsize = AtomicUsize::new(0);

fn cpus() -> usize {
    static CPUS: OnceLock<usize> = OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

/// Counts a recall (or helper) as running until dropped.
pub struct Busy(());

impl Busy {
    pub fn enter() -> Self {
        BUSY.fetch_add(1, Ordering::AcqRel);
        Self(())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        BUSY.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Turns helpers on or off and sets the vectors a bank needs for one; the previous settings.
pub fn configure(on: bool, min_vectors: u64) -> (bool, u64) {
    (ENABLED.swap(on, Ordering::AcqRel), MIN_VECTORS.swap(min_vectors, Ordering::AcqRel))
}

/// How many helpers have started.
pub fn started() -> u64 {
    STARTED.load(Ordering::Acquire)
}

/// A dense search started on a helper thread for one recall.
pub struct Helper {
    depth: usize,
    result: Receiver<Option<Result<Vec<Scored>>>>,
}

impl Helper {
    /// Starts `search_dense(vector, depth, allow)` on `index` in a helper thread, when helpers
    /// are on, the index holds enough vectors and a CPU is idle. The caller must hold a read
    /// lock of `index` (its `ix`) until it has taken the result or given up on it.
    pub fn start(
        index: &Arc<RwLock<BankIndex>>,
        ix: &BankIndex,
        vector: &[u8],
        depth: Option<i64>,
        allow: Option<&Arc<AllowSet>>,
    ) -> Option<Self> {
        // The recall itself is counted: one more thread must still find a CPU.
        if !ENABLED.load(Ordering::Acquire)
            || BUSY.load(Ordering::Acquire) >= cpus()
            || ix.stats().vectors < MIN_VECTORS.load(Ordering::Acquire)
        {
            return None;
        }
        let depth = BankIndex::stream_depth(depth).ok()?;
        let (send, result) = sync_channel(1);
        let index = Arc::clone(index);
        let vector = vector.to_vec();
        let allow = allow.cloned();
        let busy = Busy::enter();
        let spawned = std::thread::Builder::new().name("memwire-dense".into()).spawn(move || {
            let _busy = busy;
            // `try_read`: a queued writer waits for the recall's lock, and the recall may wait
            // for this thread; blocking here could close that cycle.
            let found = index
                .try_read()
                .ok()
                .map(|ix| ix.search_dense(&vector, depth as i64, allow.as_deref()));
            let _ = send.send(found); // the recall may have gone (the gate answered it)
        });
        spawned.ok()?;
        STARTED.fetch_add(1, Ordering::AcqRel);
        Some(Self { depth, result })
    }

    /// The helper's result for a search of `depth`; None when it could not search (the caller
    /// then searches itself).
    pub fn take(self, depth: usize) -> Option<Result<Vec<Scored>>> {
        if depth != self.depth {
            return None;
        }
        self.result.recv().ok().flatten()
    }
}
