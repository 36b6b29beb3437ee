//! The total order of docs/parity.md: higher score first, ties to the smaller ordinal.

use std::cmp::Ordering;

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
/// Ascending order = best-ranked first.
impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank_cmp(other)
    }
}

/// Keeps the `k` best keys seen; exact (no pruning that could change ties).
///
/// Keys that may enter are appended to a buffer, and the buffer is cut to its `k` best (a
/// selection, not a sort) when it holds twice as many: the `k`-th best then bars every key
/// that ranks after it. A heap would re-balance on every key that enters; in a lexical pass
/// several hundred do, and those re-balancings were a fifth of the pass's time.
pub(crate) struct TopK {
    k: usize,
    buf: Vec<Key>,
    /// After a cut: the `k`-th best key so far. A key ranking after it cannot be among the
    /// `k` best, which are all distinct keys (ordinals are distinct within a list).
    floor: Option<Key>,
}

impl TopK {
    pub fn new(k: usize) -> Self {
        // `k` may be huge (callers pass Python ints); only allocate what can be used.
        Self { k, buf: Vec::with_capacity(k.saturating_mul(2).min(2048)), floor: None }
    }

    #[inline]
    pub fn push(&mut self, key: Key) {
        if self.k == 0 || self.floor.is_some_and(|f| key.rank_cmp(&f) != Ordering::Less) {
            return;
        }
        self.buf.push(key);
        if self.buf.len() >= self.k.saturating_mul(2) {
            self.cut();
        }
    }

    /// Keeps the `k` best of the buffer and records the worst of them as the floor.
    fn cut(&mut self) {
        let k = self.k;
        self.buf.select_nth_unstable_by(k - 1, Key::rank_cmp);
        self.buf.truncate(k);
        self.floor = Some(self.buf[k - 1]);
    }

    /// False when a key with these scores cannot enter (it would rank after the floor
    /// whatever its ordinal): lets callers skip building it.
    #[inline]
    pub fn may_enter(&self, primary: f64, secondary: f64) -> bool {
        self.k > 0
            && self.floor.is_none_or(|f| {
                primary > f.primary || (primary == f.primary && secondary >= f.secondary)
            })
    }

    /// The kept keys, best first.
    pub fn into_sorted(mut self) -> Vec<Key> {
        self.buf.sort_unstable_by(Key::rank_cmp);
        self.buf.truncate(self.k);
        self.buf
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

    #[test]
    fn buffered_selection_equals_a_full_sort() {
        // Few distinct scores (ties decided by the secondary key, then the ordinal), ordinals
        // arriving in no order, every k around the buffer's cuts; `may_enter` never rejects a
        // key that would have entered.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (state >> 33) as u32
        };
        let keys: Vec<Key> = (0..3000u32)
            .map(|i| Key {
                primary: f64::from(next() % 7),
                secondary: f64::from(next() % 3),
                ordinal: i.wrapping_mul(2_654_435_761) % 100_003,
            })
            .collect();
        for k in [0, 1, 2, 3, 10, 99, 100, 1499, 1500, 2999, 3000, 5000, usize::MAX] {
            let mut top = TopK::new(k);
            let mut seen: Vec<Key> = Vec::new(); // every key pushed so far, best first
            for &key in &keys {
                let enters = k.checked_sub(1).is_some_and(|i| seen.get(i).is_none_or(|w| key < *w));
                assert!(!enters || top.may_enter(key.primary, key.secondary), "k={k}");
                top.push(key);
                seen.insert(seen.partition_point(|s| *s < key), key);
            }
            let mut want = keys.clone();
            want.sort_unstable();
            want.truncate(k);
            let got = top.into_sorted();
            assert_eq!(got.len(), want.len(), "k={k}");
            assert!(got.iter().zip(&want).all(|(a, b)| a.rank_cmp(b) == Ordering::Equal), "k={k}");
        }
    }
}
