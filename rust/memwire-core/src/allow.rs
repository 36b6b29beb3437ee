//! A search filter built once and passed by reference (docs/parity.md, "Filters").
//!
//! An [`AllowSet`] holds ordinals, not slots: it stays right however the index changes after it
//! was built (adds, removes, slot reuse), and one set serves every index. Membership is tested
//! per candidate by ordinal, through a plain bit set over `0..=max` when that is small next to
//! the set (a few bytes per member at most), else through the roaring bitmap itself.

use roaring::RoaringBitmap;

use crate::error::{Error, Result};

/// The plain bit set may take up to this many 64-bit words per member, plus [`DENSE_SLACK`].
const DENSE_WORDS_PER_MEMBER: u64 = 1;
const DENSE_SLACK: u64 = 1 << 12; // words: a 32 KiB bit set is always fine

/// A set of allowed ordinals; ordinals that are not live in the searched index are ignored.
#[derive(Debug, Clone, Default)]
pub struct AllowSet {
    set: RoaringBitmap,
    /// Bit `o` set for each member `o`, covering `0..=max`, when that is small enough.
    dense: Option<Box<[u64]>>,
}

impl PartialEq for AllowSet {
    fn eq(&self, other: &Self) -> bool {
        self.set == other.set
    }
}

impl AllowSet {
    pub fn new(set: RoaringBitmap) -> Self {
        let dense = set.max().and_then(|max| {
            let words = u64::from(max) / 64 + 1;
            (words <= set.len() * DENSE_WORDS_PER_MEMBER + DENSE_SLACK).then(|| {
                let mut bits = vec![0u64; words as usize].into_boxed_slice();
                for o in &set {
                    bits[o as usize / 64] |= 1 << (o % 64);
                }
                bits
            })
        });
        Self { set, dense }
    }

    /// A set of the given ordinals (duplicates collapse).
    pub fn from_ordinals(ordinals: impl IntoIterator<Item = u32>) -> Self {
        let mut v: Vec<u32> = ordinals.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        // Sorted and distinct: appending cannot fail.
        Self::new(RoaringBitmap::from_sorted_iter(v).unwrap_or_default())
    }

    /// A set read from the portable roaring serialisation (what pyroaring's `serialize()` and
    /// the `roaring` crate write, run containers included).
    pub fn from_bytes(raw: &[u8]) -> Result<Self> {
        let mut reader = raw;
        match RoaringBitmap::deserialize_from(&mut reader) {
            Ok(set) if reader.is_empty() => Ok(Self::new(set)),
            _ => Err(Error::AllowBytes),
        }
    }

    #[inline]
    pub fn contains(&self, ordinal: u32) -> bool {
        match &self.dense {
            Some(bits) => {
                bits.get(ordinal as usize / 64).is_some_and(|w| w & (1 << (ordinal % 64)) != 0)
            }
            None => self.set.contains(ordinal),
        }
    }

    pub fn len(&self) -> u64 {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    pub fn bitmap(&self) -> &RoaringBitmap {
        &self.set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership_is_the_same_dense_or_sparse() {
        let small = AllowSet::from_ordinals([3, 1, 3, 64, 200]);
        assert!(small.dense.is_some());
        let sparse = AllowSet::from_ordinals([3, 1, 64, 200, 4_000_000_000]);
        assert!(sparse.dense.is_none());
        for o in [0, 1, 2, 3, 63, 64, 65, 199, 200, 201, 100_000, u32::MAX] {
            assert_eq!(small.contains(o), [1, 3, 64, 200].contains(&o), "{o}");
            assert_eq!(sparse.contains(o), [1, 3, 64, 200, 4_000_000_000].contains(&o), "{o}");
        }
        assert_eq!(small.len(), 4);
        assert!(AllowSet::from_ordinals([]).is_empty());
        assert!(!AllowSet::from_ordinals([]).contains(0));
    }

    #[test]
    fn bytes_round_trip_and_garbage_is_refused() {
        let mut runs = RoaringBitmap::from_iter(100..5000u32);
        runs.insert(70_000);
        runs.optimize();
        let mut raw = Vec::new();
        runs.serialize_into(&mut raw).unwrap();
        let back = AllowSet::from_bytes(&raw).unwrap();
        assert_eq!(back.bitmap(), &runs);
        assert!(back.contains(4999) && back.contains(70_000) && !back.contains(5000));
        assert_eq!(AllowSet::from_bytes(&raw[..raw.len() - 1]).unwrap_err(), Error::AllowBytes);
        assert_eq!(
            AllowSet::from_bytes(&[&raw[..], &[0]].concat()).unwrap_err(),
            Error::AllowBytes
        );
        assert_eq!(AllowSet::from_bytes(b"nope").unwrap_err(), Error::AllowBytes);
    }
}
