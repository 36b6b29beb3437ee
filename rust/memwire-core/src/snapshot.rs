//! Snapshot format version 1 (docs/parity.md, "Snapshot format"): a msgpack map whose posting
//! lists are portable roaring bitmaps. Both kernels read what either writes.

use rmpv::Value;
use roaring::RoaringBitmap;

use crate::dense::DenseStore;
use crate::error::{Error, Result};
use crate::generated::{
    CONTRACT_VERSION, SNAPSHOT_FORMAT, SNAPSHOT_VERSION, TOKENIZER_VERSION, UNICODE_VERSION,
};
use crate::index::BankIndex;

fn roaring_bytes(bitmap: &RoaringBitmap) -> Value {
    let mut out = Vec::with_capacity(bitmap.serialized_size());
    bitmap.serialize_into(&mut out).expect("writing to a Vec cannot fail");
    Value::Binary(out)
}

fn u32le(values: impl Iterator<Item = u32>) -> Value {
    Value::Binary(values.flat_map(u32::to_le_bytes).collect())
}

impl BankIndex {
    /// Serialises the index (keys in the order of the format table).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut terms: Vec<(&str, u32)> = self.vocab.iter().map(|(t, &id)| (&**t, id)).collect();
        terms.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let doc_lens = u32le(self.live.iter().map(|o| self.slots[self.slot_of[&o] as usize].len));
        let mut postings = Vec::with_capacity(terms.len());
        let mut tfs = Vec::with_capacity(terms.len());
        for &(_, id) in &terms {
            let p = &self.postings[id as usize];
            let bitmap = RoaringBitmap::from_sorted_iter(p.ords.iter().copied())
                .expect("posting ordinals are sorted and unique");
            postings.push(roaring_bytes(&bitmap));
            tfs.push(u32le(p.tfs.iter().copied()));
        }
        let (vec_docs, vectors, hnsw) = match &self.dense {
            Some(d) => {
                let mut raw = Vec::with_capacity(d.len() * d.dim() * 2);
                for (_, row) in d.sorted_rows() {
                    raw.extend(row.iter().flat_map(|x| x.to_le_bytes()));
                }
                (d.docs(), raw, d.hnsw_bytes()?)
            }
            None => (RoaringBitmap::new(), Vec::new(), None),
        };
        let s = |x: &str| Value::from(x);
        let map = vec![
            (s("format"), s(SNAPSHOT_FORMAT)),
            (s("version"), Value::from(SNAPSHOT_VERSION)),
            (s("contract"), Value::from(CONTRACT_VERSION)),
            (s("tokenizer"), Value::from(TOKENIZER_VERSION)),
            (s("unicode"), s(UNICODE_VERSION)),
            (s("docs"), roaring_bytes(&self.live)),
            (s("doc_lens"), doc_lens),
            (s("terms"), Value::Array(terms.iter().map(|t| s(t.0)).collect())),
            (s("postings"), Value::Array(postings)),
            (s("tfs"), Value::Array(tfs)),
            (s("dim"), Value::from(self.dim as u64)),
            (s("vec_docs"), roaring_bytes(&vec_docs)),
            (s("vectors"), Value::Binary(vectors)),
            (s("hnsw"), hnsw.map_or(Value::Nil, Value::Binary)),
        ];
        let mut out = Vec::new();
        rmpv::encode::write_value(&mut out, &Value::Map(map))
            .expect("writing to a Vec cannot fail");
        Ok(out)
    }

    /// Loads a snapshot written by either kernel. The per-document term lists are rebuilt from
    /// the postings, so loading never re-tokenizes.
    pub fn from_bytes(data: &[u8]) -> Result<Self> {
        let mut rd = data;
        let doc = rmpv::decode::read_value(&mut rd).map_err(|_| Error::NotSnapshot)?;
        // Python's unpackb refuses trailing bytes, map keys other than str/bytes and invalid
        // UTF-8; refuse the same inputs the same way.
        if !rd.is_empty() || !strings_valid(&doc) {
            return Err(Error::NotSnapshot);
        }
        let Value::Map(entries) = &doc else { return Err(Error::NotSnapshot) };
        if entries.iter().any(|(k, _)| !matches!(k, Value::String(_) | Value::Binary(_))) {
            return Err(Error::NotSnapshot);
        }
        // Later duplicates win, as in a Python dict.
        let get =
            |key: &str| entries.iter().rev().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v);
        if get("format").and_then(Value::as_str) != Some(SNAPSHOT_FORMAT) {
            return Err(Error::NotSnapshot);
        }
        let version = get("version");
        if !py_eq_int(version, SNAPSHOT_VERSION) {
            return Err(Error::SnapshotVersion(py_str(version)));
        }
        let contract = get("contract");
        if !py_eq_int(contract, CONTRACT_VERSION) {
            return Err(Error::SnapshotContract(py_str(contract)));
        }
        let tokenizer = get("tokenizer");
        if !py_eq_int(tokenizer, TOKENIZER_VERSION) {
            return Err(Error::SnapshotTokenizer(py_str(tokenizer)));
        }
        build(&get)
    }
}

fn build<'a>(get: &dyn Fn(&str) -> Option<&'a Value>) -> Result<BankIndex> {
    let field = |key: &str| Error::corrupt(format!("field '{key}'"));
    let bytes = |key: &str| match get(key) {
        Some(Value::Binary(b)) => Ok(b.as_slice()),
        _ => Err(field(key)),
    };
    let array = |key: &str| match get(key) {
        Some(Value::Array(a)) => Ok(a.as_slice()),
        _ => Err(field(key)),
    };
    let dim = match get("dim") {
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
    for ((term, ords), tfs) in terms.iter().zip(postings).zip(tfs) {
        let (Value::String(term), Value::Binary(ords), Value::Binary(tfs)) = (term, ords, tfs)
        else {
            return Err(Error::corrupt("postings"));
        };
        let term = term.as_str().ok_or_else(|| Error::corrupt("postings"))?;
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
        None | Some(Value::Nil) => {}
        Some(Value::Binary(graph)) => {
            let Some(dense) = index.dense.as_mut() else { return Err(Error::corrupt("hnsw")) };
            dense.load_hnsw(graph)?;
        }
        Some(_) => return Err(field("hnsw")),
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

fn strings_valid(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_str(),
        Value::Array(a) => a.iter().all(strings_valid),
        Value::Map(m) => m.iter().all(|(k, v)| strings_valid(k) && strings_valid(v)),
        _ => true,
    }
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
