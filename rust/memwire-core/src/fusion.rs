//! Weighted reciprocal rank fusion, the `rrf` primitive (docs/parity.md, "Fusion").

use rustc_hash::FxHashMap as HashMap;
use std::hash::Hash;

use crate::error::{check_weights, Result};
use crate::generated::RRF_K;
use crate::rank::canon;

/// Fuses ranked lists. `fused(d)` accumulates `w / (RRF_K + r)` over the streams in declared
/// order (a stream of weight 0 is skipped; an ordinal listed twice in one stream counts at each
/// rank, as in the Python twin). Sorted by `(-fused, ordinal)`.
///
/// Generic over the ordinal type because the Python-facing `rrf` accepts any integers.
pub fn rrf<T, S>(streams: &[S], weights: &[f64]) -> Result<Vec<(T, f64)>>
where
    T: Copy + Eq + Hash + Ord,
    S: AsRef<[T]>,
{
    check_weights(weights, streams.len())?;
    // Accumulate into a Vec in first-seen order; the map only locates entries, so its
    // iteration order never reaches the output.
    let mut slot: HashMap<T, usize> = HashMap::default();
    let mut fused: Vec<(T, f64)> = Vec::new();
    for (stream, &w) in streams.iter().zip(weights) {
        if w == 0.0 {
            continue;
        }
        for (i, &d) in stream.as_ref().iter().enumerate() {
            let r = (i + 1) as f64;
            let add = w / (RRF_K + r);
            match slot.get(&d) {
                Some(&j) => fused[j].1 += add,
                None => {
                    slot.insert(d, fused.len());
                    fused.push((d, 0.0 + add));
                }
            }
        }
    }
    for entry in &mut fused {
        entry.1 = canon(entry.1);
    }
    fused.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(fused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    #[test]
    fn fuses_in_stream_order() {
        let got = rrf(&[vec![1u32, 2, 3], vec![3, 1]], &[1.0, 0.5]).unwrap();
        let s1 = 1.0 / 61.0 + 0.5 / 62.0;
        let s3 = 1.0 / 63.0 + 0.5 / 61.0;
        let s2 = 1.0 / 62.0;
        assert!(s1 > s3);
        assert_eq!(got, vec![(1, s1), (3, s3), (2, s2)]);
    }

    #[test]
    fn zero_weight_streams_are_skipped() {
        let got = rrf(&[vec![1u32], vec![2]], &[0.0, 1.0]).unwrap();
        assert_eq!(got, vec![(2, 1.0 / 61.0)]);
    }

    #[test]
    fn ties_break_by_ordinal() {
        let got = rrf(&[vec![9u32], vec![4]], &[1.0, 1.0]).unwrap();
        assert_eq!(got.iter().map(|e| e.0).collect::<Vec<_>>(), [4, 9]);
    }

    #[test]
    fn validates_weights() {
        let streams: [Vec<u32>; 2] = [vec![], vec![]];
        assert_eq!(rrf(&streams, &[1.0]).unwrap_err(), Error::WeightCount { expected: 2, got: 1 });
        assert_eq!(rrf(&streams, &[1.0, f64::INFINITY]).unwrap_err(), Error::BadWeight);
    }
}
