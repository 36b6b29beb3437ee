//! `memwire._kernel._native`: PyO3 bindings of `memwire-core`. Only argument conversion, GIL release and
//! error mapping live here; behaviour is in the core crate (docs/parity.md).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use memwire_core::error::{Error, ErrorKind};
use memwire_core::generated::CONTRACT_VERSION;
use memwire_core::wordpiece::Quantized;
use memwire_core::{
    budget, fusion, pack, redact_gate, tokenizer, AllowSet as CoreAllow, BankIndex as CoreIndex,
    GraphBuild, StaticEmbedder as CoreEmbedder,
};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::{PyBytes, PyDict, PyInt, PyString};

mod dense_helper;

/// Raises the `memwire.errors` class of `err` with its exact message. The module is imported at
/// raise time so the classes are the very ones the rest of the package catches.
fn raise(py: Python<'_>, err: Error) -> PyErr {
    let name = match err.kind() {
        ErrorKind::InvalidInput => "InvalidInputError",
        ErrorKind::Snapshot => "SnapshotError",
        ErrorKind::Hnsw => "HnswError",
    };
    let made = py
        .import("memwire.errors")
        .and_then(|m| m.getattr(name))
        .and_then(|cls| cls.call1((err.to_string(),)));
    match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(import_failed) => import_failed,
    }
}

trait OrRaise<T> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> OrRaise<T> for Result<T, Error> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| raise(py, e))
    }
}

/// A Python int that may not fit an i64: such values keep Python's own spelling for messages.
enum Int {
    Small(i64),
    Big { negative: bool, text: String },
}

fn int_arg(obj: &Bound<'_, PyAny>) -> PyResult<Int> {
    if !obj.is_instance_of::<PyInt>() {
        // Integer-like objects (numpy integers) convert through `__index__`, floats do not.
        let index = obj.py().import("operator")?.getattr("index")?.call1((obj,));
        return match index {
            Ok(i) => int_arg(&i),
            Err(_) => {
                let ty = obj.get_type().name()?;
                Err(PyTypeError::new_err(format!("expected an int, got {ty}")))
            }
        };
    }
    match obj.extract::<i64>() {
        Ok(v) => Ok(Int::Small(v)),
        Err(_) => Ok(Int::Big { negative: obj.lt(0)?, text: obj.str()?.to_string() }),
    }
}

/// An ordinal argument, range-checked with the contract's message (never an OverflowError).
fn ordinal_arg(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    match int_arg(obj)? {
        Int::Small(v) => Ok(v),
        Int::Big { text, .. } => Err(raise(py, Error::OrdinalRange(text))),
    }
}

/// A count argument (`k`, `limit`, `depth`, `budget_tokens`): huge positive values saturate,
/// huge negative ones raise `too_small` with Python's spelling of the number.
fn count_arg(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    too_small: fn(String) -> Error,
) -> PyResult<i64> {
    match int_arg(obj)? {
        Int::Small(v) => Ok(v),
        Int::Big { negative: false, .. } => Ok(i64::MAX),
        Int::Big { negative: true, text } => Err(raise(py, too_small(text))),
    }
}

/// The `allow` filter: an [`AllowSet`] is shared as it is; from any other iterable, ordinals
/// that cannot be live are ignored, as in the Python twin.
fn allow_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Arc<CoreAllow>>> {
    let Some(obj) = obj else { return Ok(None) };
    if obj.is_none() {
        return Ok(None);
    }
    if let Ok(set) = obj.cast::<AllowSet>() {
        return Ok(Some(set.get().inner.clone()));
    }
    let mut out = Vec::new();
    for item in obj.try_iter()? {
        if let Int::Small(v) = int_arg(&item?)? {
            if let Ok(o) = u32::try_from(v) {
                out.push(o);
            }
        }
    }
    Ok(Some(Arc::new(CoreAllow::from_ordinals(out))))
}

fn weights_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<f64>>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => o.try_iter()?.map(|w| w?.extract::<f64>()).collect::<PyResult<_>>().map(Some),
    }
}

/// Text this short (tens of microseconds of tokenizing) is worked on with the GIL held:
/// releasing it costs a hand-over, and beside a thread running Python (another client's large
/// write) taking it back waits up to the switch interval (1 ms in `memwire serve`).
const SHORT_WORK_BYTES: usize = 2 * 1024;

/// `work()`, off the GIL when `heavy` (see [`SHORT_WORK_BYTES`]).
fn detach_if<T: Send>(py: Python<'_>, heavy: bool, work: impl FnOnce() -> T + Send) -> T {
    if heavy {
        py.detach(work)
    } else {
        work()
    }
}

/// Splits `text` into index terms (docs/parity.md, "Tokenizer").
#[pyfunction]
fn tokenize(py: Python<'_>, text: PyBackedStr) -> Vec<String> {
    detach_if(py, text.len() > SHORT_WORK_BYTES, || tokenizer::tokenize(&text))
}

/// Weighted reciprocal rank fusion of ranked ordinal lists.
#[pyfunction]
fn rrf(
    py: Python<'_>,
    streams: &Bound<'_, PyAny>,
    weights: &Bound<'_, PyAny>,
) -> PyResult<Vec<(i64, f64)>> {
    let streams: Vec<Vec<i64>> = streams
        .try_iter()?
        .map(|s| s?.try_iter()?.map(|o| o?.extract::<i64>()).collect::<PyResult<Vec<i64>>>())
        .collect::<PyResult<_>>()?;
    let weights = weights_arg(Some(weights))?.unwrap_or_default();
    fusion::rrf(&streams, &weights).or_raise(py)
}

/// Keeps texts, in rank order, within `budget_tokens * CHARS_PER_TOKEN` code points.
#[pyfunction]
fn trim_to_budget(
    py: Python<'_>,
    texts: Vec<PyBackedStr>,
    budget_tokens: &Bound<'_, PyAny>,
) -> PyResult<Vec<(usize, String)>> {
    let budget = count_arg(py, budget_tokens, Error::BudgetTooSmall)?;
    let strs: Vec<&str> = texts.iter().map(|t| &**t).collect();
    budget::trim_to_budget(&strs, budget).or_raise(py)
}

/// Facts about this build, for `memwire doctor` and bug reports (the pure kernel's has the
/// same first three keys: `backend`, `version`, `contract`).
/// Redaction's gate over a batch (`memwire.redact._may_redact` of each text). A text with lone
/// surrogates (not UTF-8) is read with each one replaced: both are non-ASCII, and the gate only
/// tells ASCII characters apart.
#[pyfunction]
fn may_redact_many(py: Python<'_>, texts: Vec<Bound<'_, PyString>>) -> Vec<bool> {
    let strs: Vec<std::borrow::Cow<'_, str>> = texts
        .iter()
        .map(|t| t.to_str().map_or_else(|_| t.to_string_lossy(), std::borrow::Cow::Borrowed))
        .collect();
    py.detach(|| redact_gate::may_redact_many(&strs))
}

#[pyfunction]
fn build_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("backend", "rust")?;
    d.set_item("version", env!("CARGO_PKG_VERSION"))?;
    d.set_item("contract", CONTRACT_VERSION)?;
    d.set_item("profile", if cfg!(debug_assertions) { "debug" } else { "release" })?;
    d.set_item("opt_level", env!("MEMWIRE_OPT_LEVEL"))?;
    d.set_item("target", env!("MEMWIRE_TARGET"))?;
    d.set_item("pyo3", env!("MEMWIRE_PYO3_VERSION"))?;
    d.set_item("usearch", env!("MEMWIRE_USEARCH_VERSION"))?;
    d.set_item("features", env!("MEMWIRE_PYO3_FEATURES").split(',').collect::<Vec<_>>())?;
    d.set_item("simd", usearch::hardware_acceleration_compiled())?;
    Ok(d)
}

/// One bank's derived index: inverted lexical index plus optional dense vectors.
///
/// Thread-safe: searches share a read lock and run without the GIL; writes take the write lock.
#[pyclass(module = "memwire._kernel._native", name = "BankIndex", frozen)]
struct BankIndex {
    /// Shared with a recall's dense helper thread (`dense_helper`).
    inner: Arc<RwLock<CoreIndex>>,
    /// The served pack's terms of recently packed memories: beside the lock, not under it, so
    /// a pack never waits behind a queued writer (it has a mutex of its own).
    pack_terms: pack::PackTerms,
}

impl BankIndex {
    fn wrap(index: CoreIndex) -> Self {
        Self { inner: Arc::new(RwLock::new(index)), pack_terms: pack::PackTerms::default() }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, CoreIndex> {
        // A panic inside the core cannot leave the index half-written (writes validate first),
        // so a poisoned lock is still consistent.
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, CoreIndex> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl BankIndex {
    #[new]
    #[pyo3(signature = (dim = None), text_signature = "(dim=0)")]
    fn new(py: Python<'_>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let dim = match dim {
            None => 0,
            Some(d) => match int_arg(d)? {
                Int::Small(v) => v,
                Int::Big { text, .. } => return Err(raise(py, Error::DimRange(text))),
            },
        };
        Ok(Self::wrap(CoreIndex::new(dim).or_raise(py)?))
    }

    #[getter]
    fn dim(&self) -> usize {
        self.read().dim()
    }

    fn __len__(&self) -> usize {
        self.read().len()
    }

    fn __contains__(&self, ordinal: &Bound<'_, PyAny>) -> bool {
        // Only real ints are ordinals here, as in the Python twin (`isinstance(o, int)`).
        if !ordinal.is_instance_of::<PyInt>() {
            return false;
        }
        match ordinal.extract::<i64>() {
            Ok(v) => u32::try_from(v).is_ok_and(|o| self.read().contains(o)),
            Err(_) => false,
        }
    }

    fn __repr__(&self) -> String {
        let s = self.read().stats();
        format!(
            "<memwire._kernel._native.BankIndex dim={} docs={} terms={}>",
            s.dim, s.docs, s.terms
        )
    }

    #[pyo3(signature = (ordinal, text, vector = None))]
    fn add(
        &self,
        py: Python<'_>,
        ordinal: &Bound<'_, PyAny>,
        text: PyBackedStr,
        vector: Option<PyBackedBytes>,
    ) -> PyResult<()> {
        let ordinal = ordinal_arg(py, ordinal)?;
        py.detach(|| self.write().add(ordinal, &text, vector.as_deref())).or_raise(py)
    }

    #[pyo3(signature = (ordinals, texts, vectors = None))]
    fn add_many(
        &self,
        py: Python<'_>,
        ordinals: &Bound<'_, PyAny>,
        texts: Vec<PyBackedStr>,
        vectors: Option<Vec<Option<PyBackedBytes>>>,
    ) -> PyResult<()> {
        // Integers beyond i64 saturate (still out of range) so that the core reports errors in
        // the contract's order; the message then gets Python's spelling of the number back.
        let mut ords = Vec::new();
        let mut spelled = Vec::new();
        for o in ordinals.try_iter()? {
            match int_arg(&o?)? {
                Int::Small(v) => ords.push(v),
                Int::Big { negative, text } => {
                    ords.push(if negative { i64::MIN } else { i64::MAX });
                    spelled.push((ords.len() - 1, text));
                }
            }
        }
        let vecs: Option<Vec<Option<&[u8]>>> =
            vectors.as_ref().map(|vs| vs.iter().map(|v| v.as_deref()).collect());
        let result = py.detach(|| {
            let texts: Vec<&str> = texts.iter().map(|t| &**t).collect();
            self.write().add_many(&ords, &texts, vecs.as_deref())
        });
        match result {
            Err(Error::OrdinalRange(_)) => {
                let first = ords.iter().position(|&o| u32::try_from(o).is_err()).unwrap_or(0);
                let text = spelled
                    .into_iter()
                    .find(|(i, _)| *i == first)
                    .map_or_else(|| ords[first].to_string(), |(_, t)| t);
                Err(raise(py, Error::OrdinalRange(text)))
            }
            other => other.or_raise(py),
        }
    }

    /// The served pack's choice among recall's candidates (docs/parity.md, "The relevance
    /// floor and the dense rescue", step 5):
    /// indices of the candidates to serve, in serving order, or None when a walked content has
    /// no index term or the threshold's fraction does not fit 64 bits (the caller then runs
    /// `memwire._kernel.pack_rule`). Terms of recently packed memories are kept by the index.
    #[pyo3(signature = (contents, created, ordinals, limit, num, den, prefer_newest))]
    #[allow(clippy::too_many_arguments)]
    fn pack_order(
        &self,
        py: Python<'_>,
        contents: Vec<PyBackedStr>,
        created: Vec<PyBackedStr>,
        ordinals: Vec<u32>,
        limit: usize,
        num: &Bound<'_, PyInt>,
        den: &Bound<'_, PyInt>,
        prefer_newest: bool,
    ) -> PyResult<Option<Vec<usize>>> {
        if contents.len() != created.len() || contents.len() != ordinals.len() {
            return Err(raise(py, Error::PackLengths));
        }
        if num.lt(1)? || den.lt(1)? || num.gt(den)? {
            return Err(raise(py, Error::PackThreshold));
        }
        let (Ok(num), Ok(den)) = (num.extract::<u64>(), den.extract::<u64>()) else {
            return Ok(None);
        };
        let candidates: Vec<pack::Candidate<'_>> = contents
            .iter()
            .zip(&created)
            .zip(&ordinals)
            .map(|((content, created), &ordinal)| pack::Candidate { content, created, ordinal })
            .collect();
        // Terms kept from earlier packs are only compared: cheap, done with the GIL held.
        let heavy = self.pack_terms.unkept_bytes(&candidates) > SHORT_WORK_BYTES;
        detach_if(py, heavy, || {
            pack::pack_order(&candidates, limit, num, den, prefer_newest, &self.pack_terms)
        })
        .or_raise(py)
    }

    fn remove(&self, py: Python<'_>, ordinal: &Bound<'_, PyAny>) -> PyResult<bool> {
        let ordinal = ordinal_arg(py, ordinal)?;
        let removed = py.detach(|| self.write().remove(ordinal)).or_raise(py)?;
        // A removed ordinal was checked (a u32) by the core.
        if let (true, Ok(ordinal)) = (removed, u32::try_from(ordinal)) {
            self.pack_terms.remove(ordinal);
        }
        Ok(removed)
    }

    #[pyo3(signature = (query, k, allow = None))]
    fn search_bm25(
        &self,
        py: Python<'_>,
        query: PyBackedStr,
        k: &Bound<'_, PyAny>,
        allow: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<(u32, f64)>> {
        let k = count_arg(py, k, Error::KTooSmall)?;
        let allow = allow_arg(allow)?;
        py.detach(|| self.read().search_bm25(&query, k, allow.as_deref())).or_raise(py)
    }

    #[pyo3(signature = (query, k, allow = None))]
    fn search_overlap(
        &self,
        py: Python<'_>,
        query: PyBackedStr,
        k: &Bound<'_, PyAny>,
        allow: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<(u32, f64)>> {
        let k = count_arg(py, k, Error::KTooSmall)?;
        let allow = allow_arg(allow)?;
        py.detach(|| self.read().search_overlap(&query, k, allow.as_deref())).or_raise(py)
    }

    #[pyo3(signature = (vector, k, allow = None))]
    fn search_dense(
        &self,
        py: Python<'_>,
        vector: PyBackedBytes,
        k: &Bound<'_, PyAny>,
        allow: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<(u32, f64)>> {
        let k = count_arg(py, k, Error::KTooSmall)?;
        let allow = allow_arg(allow)?;
        py.detach(|| self.read().search_dense(&vector, k, allow.as_deref())).or_raise(py)
    }

    #[pyo3(signature = (query, limit, weights = None, depth = None, allow = None, vector = None))]
    #[allow(clippy::too_many_arguments)]
    fn recall(
        &self,
        py: Python<'_>,
        query: PyBackedStr,
        limit: &Bound<'_, PyAny>,
        weights: Option<&Bound<'_, PyAny>>,
        depth: Option<&Bound<'_, PyAny>>,
        allow: Option<&Bound<'_, PyAny>>,
        vector: Option<PyBackedBytes>,
    ) -> PyResult<Vec<memwire_core::RecallRow>> {
        // A ratio of 0 never gates: the core's `recall` is exactly this.
        Ok(self.recall_gated(py, query, limit, 0.0, weights, depth, allow, vector)?.0)
    }

    #[pyo3(signature = (
        query, limit, lookup_ratio, weights = None, depth = None, allow = None, vector = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn recall_gated(
        &self,
        py: Python<'_>,
        query: PyBackedStr,
        limit: &Bound<'_, PyAny>,
        lookup_ratio: f64,
        weights: Option<&Bound<'_, PyAny>>,
        depth: Option<&Bound<'_, PyAny>>,
        allow: Option<&Bound<'_, PyAny>>,
        vector: Option<PyBackedBytes>,
    ) -> PyResult<(Vec<memwire_core::RecallRow>, bool)> {
        let limit = count_arg(py, limit, Error::KTooSmall)?;
        let weights = weights_arg(weights)?;
        let depth = match depth {
            Some(d) if !d.is_none() => Some(count_arg(py, d, Error::DepthTooSmall)?),
            _ => None,
        };
        let allow = allow_arg(allow)?;
        py.detach(|| {
            let _busy = dense_helper::Busy::enter();
            let ix = self.read();
            let helper = vector.as_deref().and_then(|v| {
                dense_helper::Helper::start(&self.inner, &ix, v, depth, allow.as_ref())
            });
            let dense = |v: &[u8], k: usize, allow: Option<&CoreAllow>| match helper
                .and_then(|h| h.take(k))
            {
                Some(found) => found,
                None => ix.search_dense(v, k as i64, allow),
            };
            ix.recall_gated(
                &query,
                limit,
                lookup_ratio,
                weights.as_deref(),
                depth,
                allow.as_deref(),
                vector.as_deref(),
                dense,
            )
        })
        .or_raise(py)
    }

    /// Whether dense searches are exact only because no HNSW graph is installed yet.
    fn dense_graph_needed(&self) -> bool {
        self.read().dense_graph_needed()
    }

    /// Phase 1 of a detached graph build, under the read lock; None when no graph is needed.
    fn plan_dense_graph(&self, py: Python<'_>) -> Option<DenseGraphBuild> {
        let plan = py.detach(|| self.read().plan_dense_graph())?;
        Some(DenseGraphBuild { cancel: plan.cancel_flag(), plan: Mutex::new(Some(plan)) })
    }

    /// Phase 3, under the write lock: replays the changes made since the plan and installs it.
    /// Any object is accepted: one that is not this kernel's plan is another index's (False).
    fn install_dense_graph(&self, py: Python<'_>, plan: &Bound<'_, PyAny>) -> bool {
        let Ok(plan) = plan.cast::<DenseGraphBuild>() else { return false };
        let plan = plan.get();
        py.detach(|| match plan.take() {
            Some(plan) => self.write().install_dense_graph(plan),
            None => false,
        })
    }

    /// The three phases; the graph itself is built with no lock held and without the GIL, so
    /// searches and writes go on meanwhile (they are exact until the install).
    fn build_dense_graph(&self, py: Python<'_>) -> PyResult<bool> {
        py.detach(|| {
            let planned = self.read().plan_dense_graph();
            let Some(mut plan) = planned else { return Ok(false) };
            Ok(plan.build()? && self.write().install_dense_graph(plan))
        })
        .or_raise(py)
    }

    /// Test hook: lowers the exact dense threshold of this index.
    fn _set_dense_exact_max(&self, n: usize) {
        self.write().set_dense_exact_max(n);
    }

    /// Test hook: sets the dense search tiers' bounds (exact, sign scan, graph).
    fn _set_dense_tiers(
        &self,
        exact_max: usize,
        graph_min: usize,
        sign_candidates: usize,
        sign_rescored: usize,
    ) {
        self.write().set_dense_tiers(exact_max, graph_min, (sign_candidates, sign_rescored));
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.read().stats();
        let d = PyDict::new(py);
        d.set_item("docs", s.docs)?;
        d.set_item("terms", s.terms)?;
        d.set_item("total_len", s.total_len)?;
        d.set_item("vectors", s.vectors)?;
        d.set_item("dim", s.dim)?;
        Ok(d)
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        // Written straight into the bytes object, so a snapshot (hundreds of MB for a big
        // bank with vectors) exists once. The length is taken first; should another thread
        // change the index before the write, that write is skipped and the length taken again.
        for _ in 0..3 {
            let len = py.detach(|| self.read().snapshot_writer().len());
            let mut written = false;
            let bytes = PyBytes::new_with(py, len, |buf| {
                py.detach(|| {
                    let index = self.read();
                    let writer = index.snapshot_writer();
                    if writer.len() != buf.len() {
                        return Ok(());
                    }
                    written = true;
                    writer.write_into(buf)
                })
                .or_raise(py)
            })?;
            if written {
                return Ok(bytes);
            }
        }
        let bytes = py.detach(|| self.read().to_bytes()).or_raise(py)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Any object with the buffer protocol: a read-only contiguous one (`bytes`, a memoryview of
    /// them) is read in place, so a snapshot's payload inside its envelope needs no copy.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: PyBuffer<u8>) -> PyResult<Self> {
        let index = if data.readonly() && data.is_c_contiguous() {
            // SAFETY: the exporter keeps the memory alive and unchanged (read-only) until
            // `data`, which holds the export, is dropped at the end of this function.
            let bytes = unsafe {
                std::slice::from_raw_parts(data.buf_ptr().cast::<u8>(), data.len_bytes())
            };
            py.detach(|| CoreIndex::from_bytes(bytes))
        } else {
            let copy = data.to_vec(py)?;
            py.detach(|| CoreIndex::from_bytes(&copy))
        };
        Ok(Self::wrap(index.or_raise(py)?))
    }
}

/// A set of ordinals for the `allow` argument of searches (docs/parity.md, "Filters"), built
/// once and shared by reference: a recall given one converts nothing. It holds ordinals, so it
/// stays right whatever the index does after it was built.
#[pyclass(module = "memwire._kernel._native", name = "AllowSet", frozen)]
struct AllowSet {
    inner: Arc<CoreAllow>,
}

#[pymethods]
impl AllowSet {
    /// Every item must be an ordinal (`0..=MAX_ORDINAL`), unlike a plain `allow` list.
    #[new]
    fn new(py: Python<'_>, ordinals: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut out = Vec::new();
        for item in ordinals.try_iter()? {
            let o = ordinal_arg(py, &item?)?;
            out.push(memwire_core::error::check_ordinal(o).or_raise(py)?);
        }
        let inner = py.detach(|| CoreAllow::from_ordinals(out));
        Ok(Self { inner: Arc::new(inner) })
    }

    /// A set from the portable roaring serialisation (pyroaring's `BitMap.serialize()`).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: PyBackedBytes) -> PyResult<Self> {
        let inner = py.detach(|| CoreAllow::from_bytes(&data)).or_raise(py)?;
        Ok(Self { inner: Arc::new(inner) })
    }

    fn __len__(&self) -> usize {
        usize::try_from(self.inner.len()).unwrap_or(usize::MAX)
    }

    fn __contains__(&self, ordinal: &Bound<'_, PyAny>) -> bool {
        if !ordinal.is_instance_of::<PyInt>() {
            return false;
        }
        ordinal.extract::<u32>().is_ok_and(|o| self.inner.contains(o))
    }

    fn __repr__(&self) -> String {
        format!("<memwire._kernel._native.AllowSet len={}>", self.inner.len())
    }
}

/// A planned HNSW graph (`BankIndex.plan_dense_graph`): `build()` it with no index lock held,
/// then `BankIndex.install_dense_graph(plan)`. `cancel()` may be called from any thread.
#[pyclass(module = "memwire._kernel._native", name = "DenseGraphBuild", frozen)]
struct DenseGraphBuild {
    plan: Mutex<Option<GraphBuild>>,
    cancel: Arc<AtomicBool>,
}

impl DenseGraphBuild {
    fn take(&self) -> Option<GraphBuild> {
        self.plan.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

#[pymethods]
impl DenseGraphBuild {
    /// Builds the graph (phase 2) without the GIL; False when cancelled or already installed.
    fn build(&self, py: Python<'_>) -> PyResult<bool> {
        py.detach(|| match self.plan.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            Some(plan) => plan.build(),
            None => Ok(false),
        })
        .or_raise(py)
    }

    /// Stops a running build early; the plan can then not be installed.
    fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

/// The bundled static embedder's kernel: WordPiece ids and exact int32 row sums.
#[pyclass(frozen, module = "memwire._kernel._native")]
struct StaticEmbedder {
    inner: CoreEmbedder,
}

#[pymethods]
impl StaticEmbedder {
    #[new]
    fn new(
        py: Python<'_>,
        vocab: Vec<PyBackedStr>,
        table: PyBackedBytes,
        dim: i64,
    ) -> PyResult<Self> {
        let inner = py.detach(|| CoreEmbedder::new(&vocab, &table, dim)).or_raise(py)?;
        Ok(Self { inner })
    }

    #[getter]
    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn token_ids(&self, py: Python<'_>, text: PyBackedStr) -> Vec<u32> {
        py.detach(|| self.inner.token_ids(&text))
    }

    /// Per text, its int32 little-endian row sum as bytes, or None without a known token.
    fn sums<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
    ) -> Vec<Option<Bound<'py, PyBytes>>> {
        let (flat, found) = py.detach(|| self.inner.sums_le(&texts));
        let width = 4 * self.inner.dim();
        flat.chunks_exact(width)
            .zip(found)
            .map(|(bytes, found)| found.then(|| PyBytes::new(py, bytes)))
            .collect()
    }

    /// Per text, its canonical int16 vector (the sum normalised and quantised exactly as
    /// `memwire._kernel.vectors.quantize` does) as bytes, or None (no known token, or a zero
    /// sum); and the positions whose sum is too large to normalise exactly here (None in the
    /// list: the caller quantises their `sums`).
    fn quantized<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
    ) -> (Vec<Option<Bound<'py, PyBytes>>>, Vec<usize>) {
        let heavy = texts.len() > 1 || texts.first().is_some_and(|t| t.len() > SHORT_WORK_BYTES);
        let (flat, kinds) = detach_if(py, heavy, || self.inner.quantized(&texts));
        let width = 2 * self.inner.dim();
        let mut inexact = Vec::new();
        let vectors = flat
            .chunks_exact(width)
            .zip(kinds)
            .enumerate()
            .map(|(i, (bytes, kind))| match kind {
                Quantized::Vector => Some(PyBytes::new(py, bytes)),
                Quantized::NoVector => None,
                Quantized::Inexact => {
                    inexact.push(i);
                    None
                }
            })
            .collect();
        (vectors, inexact)
    }
}

/// Whether a recall with a query vector may search the dense stream on a helper thread beside
/// its lexical pass, and from how many vectors in the bank (on, from `DENSE_GRAPH_MIN`, by
/// default; rankings are the same either way); the previous settings.
#[pyfunction]
#[pyo3(signature = (on, min_vectors = dense_helper::HELPER_MIN_VECTORS))]
fn set_recall_helpers(on: bool, min_vectors: u64) -> (bool, u64) {
    dense_helper::configure(on, min_vectors)
}

/// How many dense helper threads recalls have started in this process.
#[pyfunction]
fn recall_helpers_started() -> u64 {
    dense_helper::started()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CONTRACT_VERSION", CONTRACT_VERSION)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(tokenize, m)?)?;
    m.add_function(wrap_pyfunction!(rrf, m)?)?;
    m.add_function(wrap_pyfunction!(trim_to_budget, m)?)?;
    m.add_function(wrap_pyfunction!(may_redact_many, m)?)?;
    m.add_function(wrap_pyfunction!(build_info, m)?)?;
    m.add_function(wrap_pyfunction!(set_recall_helpers, m)?)?;
    m.add_function(wrap_pyfunction!(recall_helpers_started, m)?)?;
    m.add_class::<BankIndex>()?;
    m.add_class::<DenseGraphBuild>()?;
    m.add_class::<AllowSet>()?;
    m.add_class::<StaticEmbedder>()?;
    Ok(())
}
