//! The total order of docs/parity.md: higher score first, ties to the smaller ordinal.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// `-0.0` becomes `+0.0` (adding `+0.0` changes nothing else), as the Python twin does.
#[inline]
pub(crate) fn canon(score: f64) -> f64 {
    score + 0.0
}

/// Ranking key: primary (higher first), secondary (higher first), ordinal (smaller first).
/// Scores are never NaN (rejected at input), so `total_cmp` on canonical scores is the IEEE
/// order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Key {
    pub primary: f64,
    pub secondary: f64,
    pub ordinal: u32,
}

impl Key {
    /// `Less` means "ranks before".
    #[inline]
    pub fn rank_cmp(&self, other: &Self) -> Ordering {
        other
            .primary
            .total_cmp(&self.primary)
            .then_with(|| other.secondary.total_cmp(&self.secondary))
            .then_with(|| self.ordinal.cmp(&other.ordinal))
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.rank_cmp(other) == Ordering::Equal
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
/// Max-heap order = the worst-ranked key at the top, so a bounded heap keeps the best `k`.
impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank_cmp(other)
    }
}

/// Keeps the `k` best keys seen; exact (no pruning that could change ties).
pub(crate) struct TopK {
    k: usize,
    heap: BinaryHeap<Key>,
}

impl TopK {
    pub fn new(k: usize) -> Self {
        // `k` may be huge (callers pass Python ints); only allocate what can be used.
        Self { k, heap: BinaryHeap::with_capacity(k.min(1024)) }
    }

    #[inline]
    pub fn push(&mut self, key: Key) {
        if self.heap.len() < self.k {
            self.heap.push(key);
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if key.rank_cmp(&worst) == Ordering::Less {
                *worst = key;
            }
        }
    }

    /// False when a key with this primary score cannot enter (it would rank after the worst
    /// kept key whatever its secondary key and ordinal): lets callers skip building it.
    #[inline]
    pub fn may_enter(&self, primary: f64) -> bool {
        self.heap.len() < self.k || self.heap.peek().is_none_or(|w| primary >= w.primary)
    }

    /// The kept keys, best first.
    pub fn into_sorted(self) -> Vec<Key> {
        self.heap.into_sorted_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(p: f64, o: u32) -> Key {
        Key { primary: canon(p), secondary: 0.0, ordinal: o }
    }

    #[test]
    fn top_k_orders_by_score_then_ordinal() {
        let mut top = TopK::new(3);
        for (s, o) in [(1.0, 5), (2.0, 9), (1.0, 2), (-0.0, 1), (2.0, 3), (0.5, 0)] {
            top.push(key(s, o));
        }
        let got: Vec<_> = top.into_sorted().iter().map(|k| (k.ordinal, k.primary)).collect();
        assert_eq!(got, [(3, 2.0), (9, 2.0), (2, 1.0)]);
    }

    #[test]
    fn negative_zero_ties_with_zero() {
        let mut top = TopK::new(2);
        top.push(key(0.0, 7));
        top.push(key(-0.0, 3));
        let got: Vec<_> = top.into_sorted().iter().map(|k| k.ordinal).collect();
        assert_eq!(got, [3, 7]);
        assert!(canon(-0.0).is_sign_positive());
    }
}
