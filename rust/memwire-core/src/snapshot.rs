//! Snapshot format version 1 (docs/parity.md, "Snapshot format"): a msgpack map whose posting
//! lists are portable roaring bitmaps. Both kernels read what either writes.

mod msgpack;

use rmpv::Value;
use roaring::RoaringBitmap;

use crate::dense::DenseStore;
use crate::error::{Error, Result};
use crate::generated::{
    CONTRACT_VERSION, SNAPSHOT_FORMAT, SNAPSHOT_VERSION, TOKENIZER_VERSION, UNICODE_VERSION,
};
use crate::index::BankIndex;
use msgpack::Raw;

fn write_roaring(out: &mut Vec<u8>, bitmap: &RoaringBitmap) {
    msgpack::write_bin_header(out, bitmap.serialized_size());
    bitmap.serialize_into(out).expect("writing to a Vec cannot fail");
}

fn write_u32le(out: &mut Vec<u8>, values: &[u32]) {
    msgpack::write_bin_header(out, 4 * values.len());
    out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
}

/// A snapshot ready to be written: everything but the two big fields (the vectors and the
/// graph) is encoded, and those are written straight into the destination, so that saving
/// needs no buffer besides the snapshot itself (which the caller may own: a Python `bytes`).
pub struct SnapshotWriter<'a> {
    /// The encoding up to the `vectors` payload.
    head: Vec<u8>,
    dense: Option<&'a DenseStore>,
    vectors_len: usize,
    /// The `hnsw` key and either nil or the header of the graph's `bin`.
    tail: Vec<u8>,
    hnsw_len: usize,
}

impl SnapshotWriter<'_> {
    /// The snapshot's exact length in bytes.
    pub fn len(&self) -> usize {
        self.head.len() + self.vectors_len + self.tail.len() + self.hnsw_len
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the snapshot into `out`, which must be exactly [`SnapshotWriter::len`] long.
    pub fn write_into(&self, out: &mut [u8]) -> Result<()> {
        assert_eq!(out.len(), self.len(), "snapshot buffer of the wrong length");
        let (head, rest) = out.split_at_mut(self.head.len());
        head.copy_from_slice(&self.head);
        let (vectors, rest) = rest.split_at_mut(self.vectors_len);
        if let Some(d) = self.dense {
            let mut chunks = vectors.chunks_exact_mut(2 * d.dim());
            for ((_, row), chunk) in d.sorted_rows().zip(&mut chunks) {
                for (x, b) in row.iter().zip(chunk.chunks_exact_mut(2)) {
                    b.copy_from_slice(&x.to_le_bytes());
                }
            }
        }
        let (tail, graph) = rest.split_at_mut(self.tail.len());
        tail.copy_from_slice(&self.tail);
        if let (Some(d), false) = (self.dense, graph.is_empty()) {
            d.save_hnsw(graph)?;
        }
        Ok(())
    }
}

impl BankIndex {
    /// Prepares a snapshot (keys in the order of the format table); see [`SnapshotWriter`].
    pub fn snapshot_writer(&self) -> SnapshotWriter<'_> {
        let mut terms: Vec<(&str, u32)> = self.vocab.iter().map(|(t, &id)| (&**t, id)).collect();
        terms.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let doc_lens: Vec<u32> =
            self.live.iter().map(|o| self.slots[self.slot_of[&o] as usize].len).collect();
        let mut head = Vec::new();
        let key = msgpack::write_str;
        msgpack::write_map_header(&mut head, 14);
        key(&mut head, "format");
        msgpack::write_str(&mut head, SNAPSHOT_FORMAT);
        key(&mut head, "version");
        msgpack::write_uint(&mut head, u64::from(SNAPSHOT_VERSION));
        key(&mut head, "contract");
        msgpack::write_uint(&mut head, u64::from(CONTRACT_VERSION));
        key(&mut head, "tokenizer");
        msgpack::write_uint(&mut head, u64::from(TOKENIZER_VERSION));
        key(&mut head, "unicode");
        msgpack::write_str(&mut head, UNICODE_VERSION);
        key(&mut head, "docs");
        write_roaring(&mut head, &self.live);
        key(&mut head, "doc_lens");
        write_u32le(&mut head, &doc_lens);
        key(&mut head, "terms");
        msgpack::write_array_header(&mut head, terms.len());
        for &(term, _) in &terms {
            msgpack::write_str(&mut head, term);
        }
        key(&mut head, "postings");
        msgpack::write_array_header(&mut head, terms.len());
        for &(_, id) in &terms {
            let bitmap =
                RoaringBitmap::from_sorted_iter(self.postings[id as usize].ords.iter().copied())
                    .expect("posting ordinals are sorted and unique");
            write_roaring(&mut head, &bitmap);
        }
        key(&mut head, "tfs");
        msgpack::write_array_header(&mut head, terms.len());
        for &(_, id) in &terms {
            write_u32le(&mut head, &self.postings[id as usize].tfs);
        }
        key(&mut head, "dim");
        msgpack::write_uint(&mut head, self.dim as u64);
        let dense = self.dense.as_ref();
        key(&mut head, "vec_docs");
        write_roaring(&mut head, &dense.map(DenseStore::docs).unwrap_or_default());
        let vectors_len = dense.map_or(0, |d| d.len() * d.dim() * 2);
        key(&mut head, "vectors");
        msgpack::write_bin_header(&mut head, vectors_len);
        let mut tail = Vec::new();
        key(&mut tail, "hnsw");
        let hnsw_len = dense.and_then(DenseStore::hnsw_len);
        match hnsw_len {
            Some(n) => msgpack::write_bin_header(&mut tail, n),
            None => msgpack::write_nil(&mut tail),
        }
        SnapshotWriter { head, dense, vectors_len, tail, hnsw_len: hnsw_len.unwrap_or(0) }
    }

    /// Serialises the index (format version 1).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let writer = self.snapshot_writer();
        let mut out = vec![0u8; writer.len()];
        writer.write_into(&mut out)?;
        Ok(out)
    }

    /// Loads a snapshot written by either kernel. The per-document term lists are rebuilt from
    /// the postings, so loading never re-tokenizes. The big fields are read in place: loading
    /// needs the index it builds and no second copy of `data`.
    pub fn from_bytes(data: &[u8]) -> Result<Self> {
        // Python's unpackb refuses trailing bytes, map keys other than str/bytes and invalid
        // UTF-8; refuse the same inputs the same way.
        let doc = msgpack::parse(data).ok_or(Error::NotSnapshot)?;
        let entries = doc.map().ok_or(Error::NotSnapshot)?;
        // Later duplicates win, as in a Python dict.
        let get =
            |key: &str| entries.iter().rev().find(|(k, _)| k.str() == Some(key)).map(|&(_, v)| v);
        let header = |key: &str| get(key).map(Raw::value);
        if header("format").as_ref().and_then(Value::as_str) != Some(SNAPSHOT_FORMAT) {
            return Err(Error::NotSnapshot);
        }
        let version = header("version");
        if !py_eq_int(version.as_ref(), SNAPSHOT_VERSION) {
            return Err(Error::SnapshotVersion(py_str(version.as_ref())));
        }
        let contract = header("contract");
        if !py_eq_int(contract.as_ref(), CONTRACT_VERSION) {
            return Err(Error::SnapshotContract(py_str(contract.as_ref())));
        }
        let tokenizer = header("tokenizer");
        if !py_eq_int(tokenizer.as_ref(), TOKENIZER_VERSION) {
            return Err(Error::SnapshotTokenizer(py_str(tokenizer.as_ref())));
        }
        build(&get)
    }
}

fn build<'a>(get: &dyn Fn(&str) -> Option<Raw<'a>>) -> Result<BankIndex> {
    let field = |key: &str| Error::corrupt(format!("field '{key}'"));
    let bytes = |key: &str| get(key).and_then(Raw::bin).ok_or_else(|| field(key));
    let array = |key: &str| get(key).and_then(Raw::array).ok_or_else(|| field(key));
    let dim = match get("dim").map(Raw::value) {
        Some(Value::Integer(i)) => i.as_i64().ok_or_else(|| field("dim"))?,
        _ => return Err(field("dim")),
    };
    let dim = crate::error::check_dim(dim).map_err(|_| field("dim"))?;
    let live = bitmap(bytes("docs")?, "docs")?;
    let lens = u32s(bytes("doc_lens")?, "doc_lens")?;
    if lens.len() as u64 != live.len() {
        return Err(Error::corrupt("doc_lens"));
    }
    let docs: Vec<(u32, u32)> = live.iter().zip(lens).collect();
    let (terms, postings, tfs) = (array("terms")?, array("postings")?, array("tfs")?);
    if terms.len() != postings.len() || terms.len() != tfs.len() {
        return Err(Error::corrupt("postings"));
    }
    let mut parts = Vec::with_capacity(terms.len());
    for ((term, ords), tfs) in terms.into_iter().zip(postings).zip(tfs) {
        let (Some(term), Some(ords), Some(tfs)) = (term.str(), ords.bin(), tfs.bin()) else {
            return Err(Error::corrupt("postings"));
        };
        let ords = bitmap(ords, "postings")?;
        let tfs = u32s(tfs, "tfs")?;
        if ords.is_empty() || ords.len() != tfs.len() as u64 {
            return Err(Error::corrupt("postings"));
        }
        parts.push((term.to_owned(), ords.iter().collect(), tfs));
    }
    let mut index = BankIndex::from_parts(dim, &docs, parts)?;
    let vec_docs = bitmap(bytes("vec_docs")?, "vec_docs")?;
    let raw = bytes("vectors")?;
    if !vec_docs.is_empty() {
        let Some(dense) = index.dense.as_mut() else { return Err(Error::corrupt("vectors")) };
        if raw.len() as u64 != 2 * dim as u64 * vec_docs.len() || !vec_docs.is_subset(&index.live) {
            return Err(Error::corrupt("vectors"));
        }
        load_vectors(dense, &vec_docs, raw, dim)?;
    }
    match get("hnsw") {
        None => {}
        Some(graph) if graph.is_nil() => {}
        Some(graph) => {
            let graph = graph.bin().ok_or_else(|| field("hnsw"))?;
            let Some(dense) = index.dense.as_mut() else { return Err(Error::corrupt("hnsw")) };
            dense.load_hnsw(graph)?;
        }
    }
    Ok(index)
}

fn load_vectors(
    dense: &mut DenseStore,
    docs: &RoaringBitmap,
    raw: &[u8],
    dim: usize,
) -> Result<()> {
    let mut row = vec![0i16; dim];
    for (o, chunk) in docs.iter().zip(raw.chunks_exact(2 * dim)) {
        for (x, b) in row.iter_mut().zip(chunk.chunks_exact(2)) {
            *x = i16::from_le_bytes([b[0], b[1]]);
        }
        if row.iter().all(|&x| x == 0) {
            return Err(Error::corrupt("zero vector"));
        }
        dense.add(o, &row);
    }
    Ok(())
}

fn bitmap(raw: &[u8], what: &str) -> Result<RoaringBitmap> {
    RoaringBitmap::deserialize_from(raw).map_err(|_| Error::corrupt(what.to_owned()))
}

fn u32s(raw: &[u8], what: &str) -> Result<Vec<u32>> {
    if raw.len() % 4 != 0 {
        return Err(Error::corrupt(what.to_owned()));
    }
    Ok(raw.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// Python's `value == n` for the header fields (`True == 1` and `1.0 == 1` there too).
fn py_eq_int(v: Option<&Value>, n: u32) -> bool {
    match v {
        Some(Value::Integer(i)) => i.as_u64() == Some(u64::from(n)),
        Some(Value::Boolean(b)) => u32::from(*b) == n,
        Some(Value::F64(f)) => *f == f64::from(n),
        Some(Value::F32(f)) => f64::from(*f) == f64::from(n),
        _ => false,
    }
}

/// Python's `str(value)` for the header fields named in error messages.
fn py_str(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Nil) => "None".to_owned(),
        Some(Value::Boolean(true)) => "True".to_owned(),
        Some(Value::Boolean(false)) => "False".to_owned(),
        Some(Value::String(s)) => s.as_str().unwrap_or_default().to_owned(),
        Some(Value::F64(f)) => format!("{f:?}"),
        Some(Value::F32(f)) => format!("{:?}", f64::from(*f)),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BankIndex {
        let mut ix = BankIndex::new(3).unwrap();
        let v = |a: i16, b: i16, c: i16| {
            [a, b, c].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()
        };
        ix.add(5, "rust borrow checker", Some(&v(1, 2, 3))).unwrap();
        ix.add(2, "python borrow error error", None).unwrap();
        ix.add(9, "", Some(&v(-4, 0, 7))).unwrap();
        ix.add(4000000000, "東京都 rust", Some(&v(0, 0, 1))).unwrap();
        ix.remove(2).unwrap();
        ix.add(2, "again borrow", None).unwrap();
        ix
    }

    #[test]
    fn round_trip_preserves_everything() {
        let ix = sample();
        let bytes = ix.to_bytes().unwrap();
        let back = BankIndex::from_bytes(&bytes).unwrap();
        assert_eq!(back.stats(), ix.stats());
        assert_eq!(back.to_bytes().unwrap(), bytes);
        for q in ["rust", "borrow again", "東京"] {
            assert_eq!(
                back.search_bm25(q, 10, None).unwrap(),
                ix.search_bm25(q, 10, None).unwrap()
            );
            assert_eq!(
                back.search_overlap(q, 10, None).unwrap(),
                ix.search_overlap(q, 10, None).unwrap()
            );
        }
        let q: Vec<u8> = [1i16, 1, 1].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(
            back.search_dense(&q, 10, None).unwrap(),
            ix.search_dense(&q, 10, None).unwrap()
        );
        // Removal works after a load (term lists rebuilt from postings).
        let mut back = back;
        assert!(back.remove(5).unwrap());
        assert_eq!(back.stats().terms, ix.stats().terms - 1);
    }

    #[test]
    fn refuses_foreign_and_future_snapshots() {
        let enc = |v: Value| {
            let mut out = Vec::new();
            rmpv::encode::write_value(&mut out, &v).unwrap();
            out
        };
        let header = |version: Value, contract: u32, tokenizer: u32| {
            enc(Value::Map(vec![
                (Value::from("format"), Value::from("memwire.index")),
                (Value::from("version"), version),
                (Value::from("contract"), Value::from(contract)),
                (Value::from("tokenizer"), Value::from(tokenizer)),
            ]))
        };
        let err = |b: &[u8]| BankIndex::from_bytes(b).unwrap_err().to_string();
        assert_eq!(err(b"garbage"), "not a memwire index snapshot");
        assert_eq!(err(&enc(Value::from(1))), "not a memwire index snapshot");
        assert_eq!(err(&header(Value::from(2), 1, 1)), "unsupported snapshot version 2");
        assert_eq!(err(&header(Value::Nil, 1, 1)), "unsupported snapshot version None");
        assert_eq!(
            err(&header(Value::from(1), 7, 1)),
            "snapshot contract 7 differs from this kernel's 1"
        );
        assert_eq!(
            err(&header(Value::from(1), 1, 3)),
            "snapshot tokenizer 3 differs from this kernel's 1"
        );
        assert!(err(&header(Value::from(1), 1, 1)).starts_with("corrupt snapshot"));
        let mut good = sample().to_bytes().unwrap();
        good.push(0);
        assert_eq!(err(&good), "not a memwire index snapshot");
        assert_eq!(
            BankIndex::from_bytes(&good[..good.len() - 5]).unwrap_err().kind(),
            crate::ErrorKind::Snapshot
        );
    }

    #[test]
    fn hnsw_graph_survives_a_round_trip() {
        let mut ix = BankIndex::new(2).unwrap();
        ix.set_dense_exact_max(3);
        for o in 0..40u32 {
            let v: Vec<u8> =
                [o as i16 + 1, 40 - o as i16].iter().flat_map(|x| x.to_le_bytes()).collect();
            ix.add(i64::from(o), "doc", Some(&v)).unwrap();
        }
        assert!(ix.build_dense_graph().unwrap());
        let q: Vec<u8> = [5i16, 1].iter().flat_map(|x| x.to_le_bytes()).collect();
        let before = ix.search_dense(&q, 3, None).unwrap();
        let bytes = ix.to_bytes().unwrap();
        let mut back = BankIndex::from_bytes(&bytes).unwrap();
        back.set_dense_exact_max(3);
        assert!(!back.dense_graph_needed());
        assert_eq!(back.search_dense(&q, 3, None).unwrap(), before);
    }
}
