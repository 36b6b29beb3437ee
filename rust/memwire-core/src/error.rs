//! The kernel's errors. `Display` yields exactly the messages of docs/parity.md ("Errors"), which
//! tests on both backends compare verbatim; `kind()` says which Python class to raise.

use std::fmt;

/// Which `memwire.errors` class an [`Error`] maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// `InvalidInputError`: an argument was rejected and nothing changed.
    InvalidInput,
    /// `SnapshotError`: a snapshot could not be loaded.
    Snapshot,
    /// `HnswError`: the HNSW library failed at run time (in practice: out of memory).
    Hnsw,
}

/// Every error the kernel raises. Numbers are carried as text so that the Python layer can
/// report integers that do not fit an `i64` exactly as Python prints them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    OrdinalRange(String),
    DuplicateOrdinal(u32),
    LengthMismatch,
    VectorDim {
        got: usize,
        dim: usize,
    },
    ZeroVector,
    DimRange(String),
    KTooSmall(String),
    DepthTooSmall(String),
    WeightCount {
        expected: usize,
        got: usize,
    },
    BadWeight,
    BadLookupRatio,
    BudgetTooSmall(String),
    /// `pack_order` was given contents, created stamps and ordinals of different lengths.
    PackLengths,
    /// `pack_order`'s threshold `num / den` is not a fraction in (0, 1].
    PackThreshold,
    EmbeddingTable,
    NotSnapshot,
    SnapshotVersion(String),
    SnapshotContract(String),
    SnapshotTokenizer(String),
    /// Malformed snapshot content; the detail is informative only (it may differ between
    /// backends, parity.md allows that after the `: `).
    CorruptSnapshot(String),
    /// `AllowSet.from_bytes` was given bytes that are not one portable roaring bitmap.
    AllowBytes,
    /// The HNSW library failed to do `op` (create, build, search or save a graph). The
    /// library's own text is left out: the message is the same from both kernels.
    Hnsw(HnswOp),
}

/// What the HNSW library failed to do (the word in `hnsw graph {op} failed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HnswOp {
    Create,
    Build,
    Search,
    Save,
}

impl HnswOp {
    fn as_str(self) -> &'static str {
        match self {
            HnswOp::Create => "create",
            HnswOp::Build => "build",
            HnswOp::Search => "search",
            HnswOp::Save => "save",
        }
    }
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NotSnapshot
            | Error::SnapshotVersion(_)
            | Error::SnapshotContract(_)
            | Error::SnapshotTokenizer(_)
            | Error::CorruptSnapshot(_) => ErrorKind::Snapshot,
            Error::Hnsw(_) => ErrorKind::Hnsw,
            _ => ErrorKind::InvalidInput,
        }
    }

    pub(crate) fn corrupt(detail: impl Into<String>) -> Self {
        Error::CorruptSnapshot(detail.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::generated::{CONTRACT_VERSION, MAX_DIM, MAX_ORDINAL, TOKENIZER_VERSION};
        match self {
            Error::OrdinalRange(n) => {
                write!(f, "ordinal must be between 0 and {MAX_ORDINAL}, got {n}")
            }
            Error::DuplicateOrdinal(n) => write!(f, "ordinal {n} is already indexed"),
            Error::LengthMismatch => {
                f.write_str("ordinals, texts and vectors must have the same length")
            }
            Error::VectorDim { got, dim } => {
                write!(f, "vector has {got} dimensions, index has {dim}")
            }
            Error::ZeroVector => f.write_str("vector must not be all zeros"),
            Error::DimRange(n) => write!(f, "dim must be between 0 and {MAX_DIM}, got {n}"),
            Error::KTooSmall(n) => write!(f, "k must be at least 1, got {n}"),
            Error::DepthTooSmall(n) => write!(f, "depth must be at least 1, got {n}"),
            Error::WeightCount { expected, got } => {
                write!(f, "expected {expected} weights, got {got}")
            }
            Error::BadWeight => f.write_str("weights must be finite and non-negative"),
            Error::BadLookupRatio => f.write_str("lookup_ratio must be finite and non-negative"),
            Error::BudgetTooSmall(n) => write!(f, "budget_tokens must be at least 1, got {n}"),
            Error::PackLengths => {
                f.write_str("contents, created and ordinals must have the same length")
            }
            Error::PackThreshold => {
                f.write_str("the pack threshold num / den must be a fraction in (0, 1]")
            }
            Error::EmbeddingTable => {
                f.write_str("embedding table does not match the vocabulary and dimension")
            }
            Error::NotSnapshot => f.write_str("not a memwire index snapshot"),
            Error::SnapshotVersion(v) => write!(f, "unsupported snapshot version {v}"),
            Error::SnapshotContract(c) => {
                write!(f, "snapshot contract {c} differs from this kernel's {CONTRACT_VERSION}")
            }
            Error::SnapshotTokenizer(t) => {
                write!(f, "snapshot tokenizer {t} differs from this kernel's {TOKENIZER_VERSION}")
            }
            Error::CorruptSnapshot(detail) if detail.is_empty() => f.write_str("corrupt snapshot"),
            Error::CorruptSnapshot(detail) => write!(f, "corrupt snapshot: {detail}"),
            Error::AllowBytes => f.write_str("allow set: not a roaring bitmap"),
            Error::Hnsw(op) => write!(f, "hnsw graph {} failed", op.as_str()),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Validates a caller-supplied ordinal (`0..=MAX_ORDINAL`).
pub fn check_ordinal(n: i64) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::OrdinalRange(n.to_string()))
}

/// Validates `k` / `limit` (at least 1).
pub fn check_k(k: i64) -> Result<usize> {
    if k < 1 {
        return Err(Error::KTooSmall(k.to_string()));
    }
    Ok(usize::try_from(k).unwrap_or(usize::MAX))
}

/// Validates `depth` (at least 1).
pub fn check_depth(depth: i64) -> Result<usize> {
    if depth < 1 {
        return Err(Error::DepthTooSmall(depth.to_string()));
    }
    Ok(usize::try_from(depth).unwrap_or(usize::MAX))
}

/// Validates an index dimension (`0..=MAX_DIM`).
pub fn check_dim(dim: i64) -> Result<usize> {
    if !(0..=crate::MAX_DIM as i64).contains(&dim) {
        return Err(Error::DimRange(dim.to_string()));
    }
    Ok(dim as usize)
}

/// Validates fusion weights: the expected count, each finite and non-negative.
pub fn check_weights(weights: &[f64], expected: usize) -> Result<()> {
    if weights.len() != expected {
        return Err(Error::WeightCount { expected, got: weights.len() });
    }
    if weights.iter().any(|w| !w.is_finite() || *w < 0.0) {
        return Err(Error::BadWeight);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_parity_table() {
        assert_eq!(
            check_ordinal(-1).unwrap_err().to_string(),
            "ordinal must be between 0 and 4294967295, got -1"
        );
        assert_eq!(check_ordinal(4294967295).unwrap(), u32::MAX);
        assert_eq!(Error::DuplicateOrdinal(7).to_string(), "ordinal 7 is already indexed");
        assert_eq!(
            Error::VectorDim { got: 3, dim: 4 }.to_string(),
            "vector has 3 dimensions, index has 4"
        );
        assert_eq!(
            check_dim(4097).unwrap_err().to_string(),
            "dim must be between 0 and 4096, got 4097"
        );
        assert_eq!(check_k(0).unwrap_err().to_string(), "k must be at least 1, got 0");
        assert_eq!(check_depth(-2).unwrap_err().to_string(), "depth must be at least 1, got -2");
        assert_eq!(check_weights(&[1.0], 3).unwrap_err().to_string(), "expected 3 weights, got 1");
        assert_eq!(check_weights(&[1.0, f64::NAN, 0.0], 3).unwrap_err(), Error::BadWeight);
        assert_eq!(check_weights(&[-0.5, 1.0, 0.0], 3).unwrap_err(), Error::BadWeight);
        assert!(check_weights(&[0.0, 0.0, 2.0], 3).is_ok());
        assert_eq!(Error::AllowBytes.to_string(), "allow set: not a roaring bitmap");
        assert_eq!(Error::NotSnapshot.to_string(), "not a memwire index snapshot");
        assert_eq!(
            Error::SnapshotContract("9".into()).to_string(),
            format!(
                "snapshot contract 9 differs from this kernel's {}",
                crate::generated::CONTRACT_VERSION
            )
        );
        assert_eq!(
            Error::SnapshotTokenizer("2".into()).to_string(),
            "snapshot tokenizer 2 differs from this kernel's 1"
        );
        assert_eq!(Error::corrupt("").to_string(), "corrupt snapshot");
        assert_eq!(Error::corrupt("bad tfs").to_string(), "corrupt snapshot: bad tfs");
        assert_eq!(Error::NotSnapshot.kind(), ErrorKind::Snapshot);
        assert_eq!(Error::ZeroVector.kind(), ErrorKind::InvalidInput);
        assert_eq!(Error::Hnsw(HnswOp::Search).to_string(), "hnsw graph search failed");
        assert_eq!(Error::Hnsw(HnswOp::Create).to_string(), "hnsw graph create failed");
        assert_eq!(Error::Hnsw(HnswOp::Build).to_string(), "hnsw graph build failed");
        assert_eq!(Error::Hnsw(HnswOp::Save).to_string(), "hnsw graph save failed");
        assert_eq!(Error::Hnsw(HnswOp::Build).kind(), ErrorKind::Hnsw);
    }
}
