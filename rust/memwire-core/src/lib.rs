//! memwire's kernel in pure Rust (no Python): tokenizer, inverted index with exact BM25 and
//! overlap top-k, reciprocal rank fusion, budget trimming, exact dense scoring with optional
//! HNSW candidates, and snapshots. docs/parity.md is the specification; the pure-Python twin
//! (`memwire._kernel.pure`) must return bit-identical results.

#[allow(clippy::all, clippy::pedantic, dead_code)]
pub mod generated;

pub mod allow;
pub mod budget;
pub mod dense;
pub mod dot;
pub mod error;
pub mod fusion;
pub mod index;
pub mod pack;
mod rank;
pub mod redact_gate;
mod search;
mod signs;
pub mod snapshot;
pub mod tokenizer;
pub mod wordpiece;

pub use allow::AllowSet;
pub use dense::GraphBuild;
pub use error::{Error, ErrorKind, HnswOp, Result};
pub use index::{BankIndex, RecallRow, Scored, Stats};
pub use wordpiece::StaticEmbedder;

/// The largest accepted vector dimension and ordinal (docs/parity.md, "Errors"), from
/// native/constants.toml.
pub use generated::{MAX_DIM, MAX_ORDINAL};

// Ordinals are stored as u32 throughout the core (and in the snapshot's roaring bitmaps).
const _: () = assert!(MAX_ORDINAL == u32::MAX);
