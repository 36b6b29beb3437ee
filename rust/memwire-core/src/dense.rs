//! Dense vectors of one index: exact integer scoring, HNSW proposals above a size threshold
//! (docs/parity.md, "Dense stream").

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::{Arc, Mutex};

use roaring::RoaringBitmap;
use usearch::{Index as Hnsw, IndexOptions, MetricKind, ScalarKind};

use crate::error::{Error, Result};
use crate::generated::{
    DENSE_EXACT_MAX, DENSE_SCALE, HNSW_CONNECTIVITY, HNSW_EXPANSION_ADD, HNSW_EXPANSION_SEARCH,
    HNSW_OVERSAMPLE,
};
use crate::rank::{canon, Key, TopK};

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

/// Exact integer dot product: each product fits an i32, the sum an i64, so the result does not
/// depend on the order of summation (the compiler may vectorise it freely).
#[inline]
pub fn dot(a: &[i16], b: &[i16]) -> i64 {
    a.iter().zip(b).map(|(&x, &y)| i64::from(i32::from(x) * i32::from(y))).sum()
}

/// The canonical score of an integer dot product.
#[inline]
pub fn score(dot: i64) -> f64 {
    canon(dot as f64 / DIVISOR)
}

fn to_f32(v: &[i16]) -> Vec<f32> {
    // Same op as the Python twin: `vec.astype(np.float32) / np.float32(DENSE_SCALE)`.
    v.iter().map(|&x| f32::from(x) / DENSE_SCALE as f32).collect()
}

/// Vectors by ordinal, stored row-major in one buffer (a removed row is filled by the last one).
pub struct DenseStore {
    dim: usize,
    row_of: HashMap<u32, usize>,
    ords: Vec<u32>,
    data: Vec<i16>,
    /// Built at the first search over more than `exact_max` vectors (as the Python twin does),
    /// then kept in step with every add and remove; saved in snapshots.
    hnsw: Mutex<Option<Arc<Hnsw>>>,
    exact_max: usize,
}

impl DenseStore {
    pub fn new(dim: usize) -> Self {
        Self {
            dim,
            row_of: HashMap::default(),
            ords: Vec::new(),
            data: Vec::new(),
            hnsw: Mutex::new(None),
            exact_max: DENSE_EXACT_MAX,
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

    /// Lowers the exact-search threshold (tests exercise the HNSW path on small data).
    #[doc(hidden)]
    pub fn set_exact_max(&mut self, n: usize) {
        self.exact_max = n;
    }

    pub fn get(&self, ordinal: u32) -> Option<&[i16]> {
        self.row_of.get(&ordinal).map(|&r| self.row(r))
    }

    fn row(&self, r: usize) -> &[i16] {
        &self.data[r * self.dim..(r + 1) * self.dim]
    }

    fn graph(&mut self) -> Option<Arc<Hnsw>> {
        self.hnsw.get_mut().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Adds a vector already checked by [`decode`]; the ordinal must not have one.
    pub fn add(&mut self, ordinal: u32, vector: &[i16]) {
        debug_assert_eq!(vector.len(), self.dim);
        let prev = self.row_of.insert(ordinal, self.ords.len());
        debug_assert!(prev.is_none());
        self.ords.push(ordinal);
        self.data.extend_from_slice(vector);
        if let Some(graph) = self.graph() {
            graph_add(&graph, ordinal, vector);
        }
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
            self.row_of.insert(moved, r);
        }
        self.ords.pop();
        self.data.truncate(last * self.dim);
        if let Some(graph) = self.graph() {
            // A failed removal only leaves a stale proposal, which re-scoring skips.
            let _ = graph.remove(u64::from(ordinal));
        }
        true
    }

    /// The ordinals with a vector.
    pub fn docs(&self) -> RoaringBitmap {
        self.ords.iter().copied().collect()
    }

    /// The `k` best `(ordinal, score)` for `query` among the ordinals `allow` admits.
    pub fn search(
        &self,
        query: &[i16],
        k: usize,
        allow: Option<&HashSet<u32>>,
    ) -> Result<Vec<(u32, f64)>> {
        let mut top = TopK::new(k);
        let mut consider = |o: u32, v: &[i16]| {
            top.push(Key { primary: score(dot(query, v)), secondary: 0.0, ordinal: o });
        };
        if self.len() <= self.exact_max {
            for (r, &o) in self.ords.iter().enumerate() {
                if allow.is_none_or(|a| a.contains(&o)) {
                    consider(o, self.row(r));
                }
            }
        } else {
            let graph = self.graph_for_search()?;
            let wanted = self.len().min(k.saturating_mul(HNSW_OVERSAMPLE));
            let found = graph
                .search(&to_f32(query), wanted)
                .map_err(|e| Error::corrupt(format!("hnsw search: {e}")))?;
            let mut seen = HashSet::default();
            for key in found.keys {
                let Ok(o) = u32::try_from(key) else { continue };
                if !seen.insert(o) || !allow.is_none_or(|a| a.contains(&o)) {
                    continue;
                }
                if let Some(v) = self.get(o) {
                    consider(o, v);
                }
            }
        }
        Ok(top.into_sorted().into_iter().map(|k| (k.ordinal, k.primary)).collect())
    }

    fn graph_for_search(&self) -> Result<Arc<Hnsw>> {
        let mut slot = self.hnsw.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(g) = slot.as_ref() {
            return Ok(g.clone());
        }
        // Ascending ordinal order, one thread: the same graph the Python twin builds.
        let graph = new_graph(self.dim)?;
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_unstable_by_key(|&r| self.ords[r]);
        graph
            .reserve(self.len().max(1))
            .map_err(|e| Error::corrupt(format!("hnsw reserve: {e}")))?;
        for r in order {
            graph_add(&graph, self.ords[r], self.row(r));
        }
        let graph = Arc::new(graph);
        *slot = Some(graph.clone());
        Ok(graph)
    }

    /// The serialised graph, when one was built.
    pub fn hnsw_bytes(&self) -> Result<Option<Vec<u8>>> {
        let slot = self.hnsw.lock().unwrap_or_else(|e| e.into_inner());
        let Some(graph) = slot.as_ref() else { return Ok(None) };
        let mut buf = vec![0u8; graph.serialized_length()];
        graph.save_to_buffer(&mut buf).map_err(|e| Error::corrupt(format!("hnsw save: {e}")))?;
        Ok(Some(buf))
    }

    /// Installs a graph read from a snapshot; it must describe exactly these vectors.
    pub fn load_hnsw(&mut self, bytes: &[u8]) -> Result<()> {
        let bad = |what: &str| Error::corrupt(format!("hnsw: {what}"));
        let meta = Hnsw::metadata_from_buffer(bytes).map_err(|_| bad("header"))?;
        if meta.dimensions != self.dim as u64
            || meta.count_present != self.len() as u64
            || meta.multi
        {
            return Err(bad("does not match the vectors"));
        }
        let graph = new_graph(self.dim)?;
        graph.load_from_buffer(bytes).map_err(|_| bad("body"))?;
        if graph.size() != self.len() || self.ords.iter().any(|&o| !graph.contains(u64::from(o))) {
            return Err(bad("does not match the vectors"));
        }
        *self.hnsw.get_mut().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(graph));
        Ok(())
    }

    /// Rows in ascending ordinal order, for snapshots.
    pub fn sorted_rows(&self) -> impl Iterator<Item = (u32, &[i16])> {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_unstable_by_key(|&r| self.ords[r]);
        order.into_iter().map(move |r| (self.ords[r], self.row(r)))
    }
}

fn new_graph(dim: usize) -> Result<Hnsw> {
    let options = IndexOptions {
        dimensions: dim,
        metric: MetricKind::IP,
        quantization: ScalarKind::F32,
        connectivity: HNSW_CONNECTIVITY,
        expansion_add: HNSW_EXPANSION_ADD,
        expansion_search: HNSW_EXPANSION_SEARCH,
        multi: false,
    };
    Hnsw::new(&options).map_err(|e| Error::corrupt(format!("hnsw: {e}")))
}

fn graph_add(graph: &Hnsw, ordinal: u32, vector: &[i16]) {
    // The C++ index needs capacity reserved ahead of insertion; grow geometrically.
    if graph.size() + 1 > graph.capacity() {
        let _ = graph.reserve((graph.capacity() * 2).max(64));
    }
    // A failed insertion only loses an HNSW proposal; exact scores never depend on the graph.
    let _ = graph.add(u64::from(ordinal), &to_f32(vector));
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
        assert_eq!(score(dot(&[32767, 0], &[32767, 0])), 1.0);
        assert_eq!(score(dot(&[-3, 0], &[0, 5])).to_bits(), 0.0f64.to_bits());
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
        let allow: HashSet<u32> = [9].into_iter().collect();
        assert_eq!(s.search(&[1, 0], 10, Some(&allow)).unwrap(), vec![(9, 0.0)]);
    }

    #[test]
    fn hnsw_proposals_are_rescored_exactly() {
        let mut s = DenseStore::new(4);
        s.set_exact_max(4);
        let mut exact = DenseStore::new(4);
        for o in 0..64u32 {
            let v = [(o as i16) - 30, 7, (o as i16 % 5) + 1, -2];
            s.add(o, &v);
            exact.add(o, &v);
        }
        let q = [3, 1, 2, 0];
        let got = s.search(&q, 5, None).unwrap();
        assert_eq!(got, exact.search(&q, 5, None).unwrap());
        s.add(100, &[1000, 1, 1, 1]);
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
}
