//! The snapshot format of native/format.md (docs/parity.md, "Snapshot format"): a msgpack map
//! whose posting lists are portable roaring bitmaps. Both kernels read what either writes.

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
        // Each list is put in ordinal order once; its frequencies, written after every list,
        // wait in their own buffer.
        let mut tfs = Vec::new();
        key(&mut tfs, "tfs");
        msgpack::write_array_header(&mut tfs, terms.len());
        for &(_, id) in &terms {
            let (ords, term_tfs) = self.posting_by_ordinal(id);
            let bitmap = RoaringBitmap::from_sorted_iter(ords)
                .expect("posting ordinals are sorted and unique");
            write_roaring(&mut head, &bitmap);
            write_u32le(&mut tfs, &term_tfs);
        }
        head.extend_from_slice(&tfs);
        drop(tfs);
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

    /// Serialises the index (format version [`SNAPSHOT_VERSION`]).
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
    // The checks run in the order docs/parity.md ("Errors") lists them, as in the Python
    // kernel, so that a snapshot damaged in several places gets the same message from both.
    let field = |key: &str| Error::corrupt(format!("field '{key}'"));
    let bytes = |key: &str| get(key).and_then(Raw::bin).ok_or_else(|| field(key));
    let array = |key: &str| get(key).and_then(Raw::array).ok_or_else(|| field(key));
    let dim = match get("dim").map(Raw::value) {
        Some(Value::Integer(i)) => match i.as_u64() {
            Some(d) if d <= crate::MAX_DIM as u64 => d as usize,
            _ => {
                let max = crate::MAX_DIM;
                return Err(corrupt(format!("dim: must be between 0 and {max}, got {i}")));
            }
        },
        _ => return Err(field("dim")),
    };
    let live = bitmap(bytes("docs")?).ok_or_else(|| bad_bitmap("docs"))?;
    let lens = u32s(bytes("doc_lens")?).map_err(|n| not_u32s("doc_lens", n))?;
    if lens.len() as u64 != live.len() {
        return Err(corrupt(format!(
            "doc_lens: {} lengths for {} documents",
            lens.len(),
            live.len()
        )));
    }
    let docs: Vec<(u32, u32)> = live.iter().zip(lens).collect();
    let (terms, postings, tfs) = (array("terms")?, array("postings")?, array("tfs")?);
    if postings.len() != terms.len() {
        return Err(corrupt(format!(
            "postings: {} lists for {} terms",
            postings.len(),
            terms.len()
        )));
    }
    if tfs.len() != terms.len() {
        return Err(corrupt(format!("tfs: {} lists for {} terms", tfs.len(), terms.len())));
    }
    let mut parts = Vec::with_capacity(terms.len());
    let mut previous: Option<&str> = None;
    for (i, ((term, ords), tfs)) in terms.into_iter().zip(postings).zip(tfs).enumerate() {
        let at = |key: &str, what: &str| corrupt(format!("{key}[{i}]: {what}"));
        let term = term.str().ok_or_else(|| at("terms", "not a string"))?;
        if previous.is_some_and(|p| p.as_bytes() >= term.as_bytes()) {
            return Err(at("terms", "not after the previous term in UTF-8 byte order"));
        }
        previous = Some(term);
        let ords = ords.bin().ok_or_else(|| at("postings", "not bin"))?;
        let ords = bitmap(ords).ok_or_else(|| at("postings", "bad roaring bitmap"))?;
        if ords.is_empty() {
            return Err(at("postings", "empty"));
        }
        if let Some(o) = first_outside(&ords, &live) {
            return Err(at("postings", &format!("document {o} is not in docs")));
        }
        let tfs = tfs.bin().ok_or_else(|| at("tfs", "not bin"))?;
        let tfs = u32s(tfs).map_err(|n| not_u32s(&format!("tfs[{i}]"), n))?;
        if tfs.len() as u64 != ords.len() {
            let what = format!("{} frequencies for {} documents", tfs.len(), ords.len());
            return Err(at("tfs", &what));
        }
        if tfs.contains(&0) {
            return Err(at("tfs", "a frequency is 0"));
        }
        parts.push((term.to_owned(), ords.iter().collect(), tfs));
    }
    // The dense half (vectors and graph: about half the work of a big bank) is independent of
    // the lexical half, so a big one loads on a second thread. Its errors are reported after
    // the lexical half's, the order docs/parity.md lists.
    let dense_fields =
        DenseFields { vec_docs: get("vec_docs"), vectors: get("vectors"), hnsw: get("hnsw") };
    let threaded =
        dense_fields.vectors.and_then(Raw::bin).is_some_and(|v| v.len() >= THREADED_VECTOR_BYTES);
    let (index, dense) = if threaded {
        std::thread::scope(|s| {
            let job = s.spawn(|| load_dense(dim, &live, dense_fields));
            let index = BankIndex::from_parts(dim, &docs, parts);
            let dense = job.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (index, dense)
        })
    } else {
        (BankIndex::from_parts(dim, &docs, parts), load_dense(dim, &live, dense_fields))
    };
    let mut index = index?;
    index.dense = dense?;
    Ok(index)
}

/// Vectors at least this big are loaded on their own thread.
const THREADED_VECTOR_BYTES: usize = 4 << 20;

/// The snapshot's fields of the dense half, as found (checked by [`load_dense`]).
#[derive(Clone, Copy)]
struct DenseFields<'a> {
    vec_docs: Option<Raw<'a>>,
    vectors: Option<Raw<'a>>,
    hnsw: Option<Raw<'a>>,
}

/// The dense store of an index of dimension `dim` whose documents are `live`.
fn load_dense<'a>(
    dim: usize,
    live: &RoaringBitmap,
    fields: DenseFields<'a>,
) -> Result<Option<DenseStore>> {
    let field = |key: &str| Error::corrupt(format!("field '{key}'"));
    let bytes = |raw: Option<Raw<'a>>, key: &str| -> Result<&'a [u8]> {
        raw.and_then(Raw::bin).ok_or_else(|| field(key))
    };
    let vec_docs =
        bitmap(bytes(fields.vec_docs, "vec_docs")?).ok_or_else(|| bad_bitmap("vec_docs"))?;
    if dim == 0 && !vec_docs.is_empty() {
        return Err(corrupt("vec_docs: not empty in an index of dim 0"));
    }
    if let Some(o) = first_outside(&vec_docs, live) {
        return Err(corrupt(format!("vec_docs: document {o} is not in docs")));
    }
    let raw = bytes(fields.vectors, "vectors")?;
    if raw.len() as u64 != 2 * dim as u64 * vec_docs.len() {
        return Err(corrupt(format!(
            "vectors: {} bytes for {} vectors of dim {dim}",
            raw.len(),
            vec_docs.len()
        )));
    }
    let mut dense = (dim > 0).then(|| DenseStore::new(dim));
    if let Some(dense) = dense.as_mut() {
        load_vectors(dense, &vec_docs, raw, dim)?;
    }
    match fields.hnsw {
        None => {}
        Some(graph) if graph.is_nil() => {}
        Some(graph) => {
            let graph = graph.bin().ok_or_else(|| field("hnsw"))?;
            let Some(dense) = dense.as_mut() else {
                return Err(corrupt("hnsw: a graph in an index of dim 0"));
            };
            dense.load_hnsw(graph)?;
        }
    }
    Ok(dense)
}

fn corrupt(detail: impl Into<String>) -> Error {
    Error::corrupt(detail)
}

fn not_u32s(key: &str, len: usize) -> Error {
    corrupt(format!("{key}: length {len} is not a multiple of 4"))
}

fn bad_bitmap(key: &str) -> Error {
    corrupt(format!("{key}: bad roaring bitmap"))
}

/// The smallest member of `set` that is not in `live`.
fn first_outside(set: &RoaringBitmap, live: &RoaringBitmap) -> Option<u32> {
    if set.is_subset(live) {
        return None;
    }
    set.iter().find(|o| !live.contains(*o))
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
            return Err(corrupt(format!("vectors: vector of document {o} is all zeros")));
        }
        dense.add(o, &row);
    }
    Ok(())
}

/// The cookie of the portable roaring format without run containers.
const NO_RUNS_COOKIE: u32 = 12346;
/// Containers holding at most this many values are arrays, larger ones bitsets.
const ARRAY_MAX: usize = 4096;
const BITSET_BYTES: usize = 8192;

/// Whether `raw` is exactly what both writers (roaring-rs, CRoaring) write for some set: the
/// portable format without run containers, keys ascending, the offset header right, an array of
/// ascending values for a container of at most `ARRAY_MAX` values, else a bitset of that many bits,
/// and nothing after the last container. The Python kernel accepts the same bytes (it
/// deserialises, then compares the serialisation with the input).
fn canonical_roaring(raw: &[u8]) -> bool {
    let u16_at =
        |p: usize| raw.get(p..p + 2).map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])));
    let u32_at =
        |p: usize| raw.get(p..p + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    if u32_at(0) != Some(NO_RUNS_COOKIE as usize) {
        return false;
    }
    let n = match u32_at(4) {
        Some(n) if n <= 1 << 16 => n,
        _ => return false,
    };
    let mut pos = 8 + 8 * n;
    if raw.len() < pos {
        return false;
    }
    let mut previous_key = None;
    for i in 0..n {
        let (Some(key), Some(card), Some(offset)) =
            (u16_at(8 + 4 * i), u16_at(10 + 4 * i), u32_at(8 + 4 * n + 4 * i))
        else {
            return false;
        };
        let card = card + 1;
        if previous_key.is_some_and(|k| k >= key) || offset != pos {
            return false;
        }
        previous_key = Some(key);
        let size = if card <= ARRAY_MAX { 2 * card } else { BITSET_BYTES };
        let Some(body) = raw.get(pos..pos + size) else { return false };
        let ok = if card <= ARRAY_MAX {
            let mut values = body.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]]));
            let mut last = values.next();
            values.all(|v| {
                let ascending = last < Some(v);
                last = Some(v);
                ascending
            })
        } else {
            body.iter().map(|b| b.count_ones() as usize).sum::<usize>() == card
        };
        if !ok {
            return false;
        }
        pos += size;
    }
    pos == raw.len()
}

/// A roaring bitmap in the exact form the writers produce ([`canonical_roaring`]).
fn bitmap(raw: &[u8]) -> Option<RoaringBitmap> {
    if !canonical_roaring(raw) {
        return None;
    }
    RoaringBitmap::deserialize_from(raw).ok()
}

/// Little-endian u32s; the byte length when it is not a multiple of 4.
fn u32s(raw: &[u8]) -> std::result::Result<Vec<u32>, usize> {
    if raw.len() % 4 != 0 {
        return Err(raw.len());
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

/// How an error message shows a header field: Python's `str(value)` for nil, booleans, numbers
/// and strings, the msgpack type for the rest (docs/parity.md, "Errors").
fn py_str(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Nil) => "None".to_owned(),
        Some(Value::Boolean(true)) => "True".to_owned(),
        Some(Value::Boolean(false)) => "False".to_owned(),
        Some(Value::Integer(i)) => i.to_string(),
        Some(Value::String(s)) => s.as_str().unwrap_or_default().to_owned(),
        Some(Value::F64(f)) => py_float(*f),
        Some(Value::F32(f)) => py_float(f64::from(*f)),
        Some(Value::Binary(_)) => "<bin>".to_owned(),
        Some(Value::Array(_)) => "<array>".to_owned(),
        Some(Value::Map(_)) => "<map>".to_owned(),
        Some(Value::Ext(..)) => "<ext>".to_owned(),
    }
}

/// Python's `repr(f)`: the shortest digits that round-trip, positional for exponents -4..16,
/// else `d.ddde+XX`.
fn py_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits = mantissa.replace('.', "");
    let sign = if f.is_sign_negative() { "-" } else { "" };
    let n = digits.len() as i32;
    if (-4..16).contains(&exp) {
        if exp < 0 {
            format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize))
        } else if n <= exp + 1 {
            format!("{sign}{digits}{}.0", "0".repeat((exp + 1 - n) as usize))
        } else {
            let (int, frac) = digits.split_at((exp + 1) as usize);
            format!("{sign}{int}.{frac}")
        }
    } else {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{first}{dot}{rest}e{esign}{:02}", exp.abs())
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
    fn removals_after_a_load_match_removals_before_it() {
        // The term lists a load leaves out are built by the first removal.
        let (mut built, mut loaded) =
            (sample(), BankIndex::from_bytes(&sample().to_bytes().unwrap()).unwrap());
        for o in [5, 2, 4000000000, 9] {
            assert!(loaded.remove(o).unwrap());
            assert!(built.remove(o).unwrap());
            assert_eq!(loaded.stats(), built.stats());
            assert_eq!(loaded.to_bytes().unwrap(), built.to_bytes().unwrap());
            loaded.add(o + 100, "borrow rust again", None).unwrap();
            built.add(o + 100, "borrow rust again", None).unwrap();
        }
        assert_eq!(loaded.to_bytes().unwrap(), built.to_bytes().unwrap());
    }

    #[test]
    fn many_removals_after_a_load_build_the_term_lists() {
        // Past SCANNED_REMOVALS removals that search the postings, the lists are built.
        let n = crate::index::SCANNED_REMOVALS as i64 * 3;
        let mut built = BankIndex::new(0).unwrap();
        for o in 0..n {
            built.add(o, &format!("w{} w{} shared x{o}", o % 5, o % 11), None).unwrap();
        }
        let mut loaded = BankIndex::from_bytes(&built.to_bytes().unwrap()).unwrap();
        for o in (0..n).step_by(2).chain((1..n).step_by(2)).take(n as usize - 3) {
            assert!(loaded.remove(o).unwrap());
            assert!(built.remove(o).unwrap());
            assert_eq!(loaded.stats(), built.stats(), "after removing {o}");
        }
        assert_eq!(loaded.to_bytes().unwrap(), built.to_bytes().unwrap());
    }

    #[test]
    fn a_big_dense_half_loads_beside_the_lexical_half() {
        // Enough vectors for the second thread (THREADED_VECTOR_BYTES).
        let dim = 64;
        let n = THREADED_VECTOR_BYTES / (2 * dim) + 10;
        let mut ix = BankIndex::new(dim as i64).unwrap();
        for i in 0..n {
            let v: Vec<u8> = (0..dim)
                .flat_map(|j| (((i * 7 + j * 13) % 251) as i16 - 120).to_le_bytes())
                .collect();
            ix.add(i as i64, &format!("doc{i} word{}", i % 97), Some(&v)).unwrap();
        }
        let bytes = ix.to_bytes().unwrap();
        assert!(2 * dim * n >= THREADED_VECTOR_BYTES);
        let back = BankIndex::from_bytes(&bytes).unwrap();
        assert_eq!(back.stats(), ix.stats());
        assert_eq!(back.to_bytes().unwrap(), bytes);
        // A snapshot damaged in both halves names the lexical damage first, as the Python
        // kernel (which loads the halves in turn) does.
        let mut doc = rmpv::decode::read_value(&mut &bytes[..]).unwrap();
        let Value::Map(entries) = &mut doc else { unreachable!() };
        for (k, v) in entries.iter_mut() {
            match k.as_str() {
                Some("doc_lens") => {
                    let Value::Binary(b) = v else { unreachable!() };
                    b[0] ^= 1;
                }
                Some("vectors") => *v = Value::Binary(vec![0; 2 * dim * n]),
                _ => {}
            }
        }
        let mut damaged = Vec::new();
        rmpv::encode::write_value(&mut damaged, &doc).unwrap();
        let err = BankIndex::from_bytes(&damaged).unwrap_err().to_string();
        assert!(err.contains("doc_lens: document 0 has length"), "{err}");
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
        let (v, c, t) = (SNAPSHOT_VERSION, CONTRACT_VERSION, TOKENIZER_VERSION);
        assert_eq!(err(b"garbage"), "not a memwire index snapshot");
        assert_eq!(err(&enc(Value::from(1))), "not a memwire index snapshot");
        assert_eq!(
            err(&header(Value::from(v + 1), c, t)),
            format!("unsupported snapshot version {}", v + 1)
        );
        // An older version (version 1 held an f32 HNSW graph) is refused too: the store rebuilds.
        assert_eq!(err(&header(Value::from(1), c, t)), "unsupported snapshot version 1");
        assert_eq!(err(&header(Value::Nil, c, t)), "unsupported snapshot version None");
        assert_eq!(
            err(&header(Value::from(v), c + 1, t)),
            format!("snapshot contract {} differs from this kernel's {c}", c + 1)
        );
        assert_eq!(
            err(&header(Value::from(v), c, 3)),
            format!("snapshot tokenizer 3 differs from this kernel's {t}")
        );
        assert!(err(&header(Value::from(v), c, t)).starts_with("corrupt snapshot"));
        let mut good = sample().to_bytes().unwrap();
        good.push(0);
        assert_eq!(err(&good), "not a memwire index snapshot");
        assert_eq!(
            BankIndex::from_bytes(&good[..good.len() - 5]).unwrap_err().kind(),
            crate::ErrorKind::Snapshot
        );
    }

    #[test]
    fn only_the_written_roaring_form_is_read() {
        let written = |values: &[u32]| {
            let mut out = Vec::new();
            RoaringBitmap::from_iter(values.iter().copied()).serialize_into(&mut out).unwrap();
            out
        };
        let big: Vec<u32> = (0..5000).chain([70000, 4_000_000_000]).collect();
        for values in [&[][..], &[0, 3, 7], &big] {
            let raw = written(values);
            assert!(canonical_roaring(&raw), "{values:?}");
            assert_eq!(bitmap(&raw).unwrap().len(), values.len() as u64);
            assert!(!canonical_roaring(&raw[..raw.len() - 1]));
            assert!(!canonical_roaring(&[&raw[..], &[0]].concat()));
        }
        let raw = written(&[1, 2]);
        let mut swapped = raw.clone();
        swapped[16..20].copy_from_slice(&[2, 0, 1, 0]);
        assert!(!canonical_roaring(&swapped), "values out of order");
        let mut offset = raw.clone();
        offset[12] += 2;
        assert!(!canonical_roaring(&offset), "wrong offset");
        let mut count = written(&big);
        count[10..12].copy_from_slice(&4998u16.to_le_bytes());
        assert!(!canonical_roaring(&count), "bitset with another cardinality");
        let mut runs = RoaringBitmap::from_iter(100..200u32);
        runs.optimize();
        let mut out = Vec::new();
        runs.serialize_into(&mut out).unwrap();
        assert!(!canonical_roaring(&out), "run containers");
        let two = written(&[1, 70000]);
        let mut keys = two.clone();
        keys[8..10].copy_from_slice(&[1, 0]);
        assert!(!canonical_roaring(&keys), "keys not ascending");
    }

    #[test]
    fn header_values_are_shown_as_python_does() {
        let shown = |v: Value| py_str(Some(&v));
        assert_eq!(shown(Value::from(1.5)), "1.5");
        assert_eq!(shown(Value::from(1e16)), "1e+16");
        assert_eq!(shown(Value::from(1e15)), "1000000000000000.0");
        assert_eq!(shown(Value::from(-1e-5)), "-1e-05");
        assert_eq!(shown(Value::from(0.0001)), "0.0001");
        assert_eq!(shown(Value::from(-0.0)), "-0.0");
        assert_eq!(shown(Value::from(1.2345678901234568e-300)), "1.2345678901234568e-300");
        assert_eq!(shown(Value::from(f64::NAN)), "nan");
        assert_eq!(shown(Value::F32(0.1)), "0.10000000149011612");
        assert_eq!(shown(Value::from(-3)), "-3");
        assert_eq!(shown(Value::from(u64::MAX)), "18446744073709551615");
        assert_eq!(shown(Value::from("x y")), "x y");
        assert_eq!(shown(Value::Binary(vec![1])), "<bin>");
        assert_eq!(shown(Value::Array(vec![])), "<array>");
        assert_eq!(shown(Value::Map(vec![])), "<map>");
        assert_eq!(shown(Value::Ext(5, vec![])), "<ext>");
    }

    #[test]
    fn damaged_fields_are_named() {
        let mut doc = rmpv::decode::read_value(&mut &sample().to_bytes().unwrap()[..]).unwrap();
        let set = |doc: &mut Value, key: &str, v: Value| {
            let Value::Map(entries) = doc else { unreachable!() };
            entries.iter_mut().find(|(k, _)| k.as_str() == Some(key)).unwrap().1 = v;
        };
        let err = |doc: &Value| {
            let mut out = Vec::new();
            rmpv::encode::write_value(&mut out, doc).unwrap();
            BankIndex::from_bytes(&out).unwrap_err().to_string()
        };
        let original = doc.clone();
        set(&mut doc, "dim", Value::from(-1));
        assert_eq!(err(&doc), "corrupt snapshot: dim: must be between 0 and 4096, got -1");
        doc = original.clone();
        set(&mut doc, "docs", Value::Binary(vec![0; 9]));
        assert_eq!(err(&doc), "corrupt snapshot: docs: bad roaring bitmap");
        doc = original.clone();
        set(&mut doc, "doc_lens", Value::Binary(vec![0; 5]));
        assert_eq!(err(&doc), "corrupt snapshot: doc_lens: length 5 is not a multiple of 4");
        doc = original.clone();
        set(&mut doc, "terms", Value::Array(vec![Value::from(1)]));
        assert_eq!(err(&doc), "corrupt snapshot: postings: 5 lists for 1 terms");
        doc = original.clone();
        set(&mut doc, "hnsw", Value::from(false));
        assert_eq!(err(&doc), "corrupt snapshot: field 'hnsw'");
        doc = original;
        set(&mut doc, "vectors", Value::Binary(vec![0; 18]));
        assert_eq!(err(&doc), "corrupt snapshot: vectors: vector of document 5 is all zeros");
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
