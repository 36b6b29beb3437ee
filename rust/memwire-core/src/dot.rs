//! Exact dot products of int16 vectors (docs/parity.md, "Dense stream").
//!
//! The result is the exact integer sum, so every evaluation order gives the same value: the
//! SIMD paths below and the scalar one are interchangeable, and the Python twin (numpy int64)
//! agrees bit for bit. The SIMD paths multiply with `pmaddwd`, which adds two adjacent i16
//! products in an i32. That sum is exact as long as one side never holds `i16::MIN`:
//! `2 * 32767 * 32768 = 2_147_418_112 < i32::MAX`. Vectors memwire quantises stay within
//! `+-DENSE_SCALE` (32767), so only a raw query holding -32768 takes the scalar path.

/// A query vector prepared for many dot products against stored rows.
pub struct Query<'a> {
    v: &'a [i16],
    /// `pmaddwd` pair sums cannot overflow (the query has no `i16::MIN`). Only the x86_64
    /// SIMD path reads it; other targets always take the scalar path.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pairs_fit: bool,
}

impl<'a> Query<'a> {
    pub fn new(v: &'a [i16]) -> Self {
        Self { v, pairs_fit: !v.contains(&i16::MIN) }
    }

    /// The exact dot product of the query and `row` (same length).
    #[inline]
    pub fn dot(&self, row: &[i16]) -> i64 {
        debug_assert_eq!(self.v.len(), row.len());
        #[cfg(target_arch = "x86_64")]
        if self.pairs_fit {
            return x86::dot(self.v, row);
        }
        scalar(self.v, row)
    }
}

/// The reference: one widened product per element, summed in i64.
#[inline]
pub fn scalar(a: &[i16], b: &[i16]) -> i64 {
    a.iter().zip(b).map(|(&x, &y)| i64::from(i32::from(x) * i32::from(y))).sum()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_add_epi64, _mm256_castsi256_si128, _mm256_cvtepi32_epi64,
        _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_madd_epi16, _mm256_setzero_si256,
        _mm256_storeu_si256, _mm_add_epi64, _mm_loadu_si128, _mm_madd_epi16, _mm_setzero_si128,
        _mm_srai_epi32, _mm_storeu_si128, _mm_unpackhi_epi32, _mm_unpacklo_epi32,
    };

    /// Callers guarantee `a` holds no `i16::MIN` and `a.len() == b.len()`.
    #[inline]
    pub fn dot(a: &[i16], b: &[i16]) -> i64 {
        let n = a.len().min(b.len());
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is available (checked just above).
            unsafe { dot_avx2(&a[..n], &b[..n]) }
        } else {
            // SAFETY: SSE2 is part of the x86_64 baseline.
            unsafe { dot_sse2(&a[..n], &b[..n]) }
        }
    }

    /// SSE2 is part of the x86_64 baseline, so this runs on every x86_64 CPU.
    #[target_feature(enable = "sse2")]
    fn dot_sse2(a: &[i16], b: &[i16]) -> i64 {
        let body = a.len() / 8 * 8;
        let mut acc = _mm_setzero_si128();
        for i in (0..body).step_by(8) {
            // SAFETY: i + 8 <= body <= len of both slices; unaligned loads are allowed.
            let (x, y) = unsafe {
                (
                    _mm_loadu_si128(a.as_ptr().add(i).cast::<__m128i>()),
                    _mm_loadu_si128(b.as_ptr().add(i).cast::<__m128i>()),
                )
            };
            let pairs = _mm_madd_epi16(x, y);
            // Sign-extend the four i32 pair sums to i64 (SSE2 has no pmovsxdq).
            let sign = _mm_srai_epi32::<31>(pairs);
            acc = _mm_add_epi64(acc, _mm_unpacklo_epi32(pairs, sign));
            acc = _mm_add_epi64(acc, _mm_unpackhi_epi32(pairs, sign));
        }
        let mut lanes = [0i64; 2];
        // SAFETY: `lanes` is 16 writable bytes.
        unsafe { _mm_storeu_si128(lanes.as_mut_ptr().cast::<__m128i>(), acc) };
        lanes[0] + lanes[1] + super::scalar(&a[body..], &b[body..])
    }

    #[target_feature(enable = "avx2")]
    fn dot_avx2(a: &[i16], b: &[i16]) -> i64 {
        let body = a.len() / 16 * 16;
        let mut acc = _mm256_setzero_si256();
        for i in (0..body).step_by(16) {
            // SAFETY: i + 16 <= body <= len of both slices; unaligned loads are allowed.
            let (x, y) = unsafe {
                (
                    _mm256_loadu_si256(a.as_ptr().add(i).cast::<__m256i>()),
                    _mm256_loadu_si256(b.as_ptr().add(i).cast::<__m256i>()),
                )
            };
            let pairs = _mm256_madd_epi16(x, y);
            acc = _mm256_add_epi64(acc, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(pairs)));
            acc =
                _mm256_add_epi64(acc, _mm256_cvtepi32_epi64(_mm256_extracti128_si256::<1>(pairs)));
        }
        let mut lanes = [0i64; 4];
        // SAFETY: `lanes` is 32 writable bytes.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast::<__m256i>(), acc) };
        lanes.iter().sum::<i64>() + dot_sse2(&a[body..], &b[body..])
    }

    #[cfg(test)]
    pub(super) fn both(a: &[i16], b: &[i16]) -> (i64, Option<i64>) {
        let avx2 = std::is_x86_feature_detected!("avx2").then(|| {
            // SAFETY: AVX2 is available.
            unsafe { dot_avx2(a, b) }
        });
        // SAFETY: SSE2 is part of the x86_64 baseline.
        (unsafe { dot_sse2(a, b) }, avx2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic generator of i16 values, extremes included.
    fn values(seed: u64, n: usize) -> Vec<i16> {
        let mut s = seed;
        (0..n)
            .map(|i| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                match i % 11 {
                    0 => i16::MIN,
                    1 => i16::MAX,
                    2 => -i16::MAX,
                    _ => (s >> 48) as i16,
                }
            })
            .collect()
    }

    #[test]
    fn every_path_equals_the_scalar_reference() {
        for len in [0usize, 1, 7, 8, 9, 15, 16, 17, 31, 33, 256, 384, 4096] {
            for seed in 0..8u64 {
                let row = values(seed, len);
                // A query never holding i16::MIN (what the SIMD paths require) ...
                let q: Vec<i16> =
                    values(seed + 100, len).iter().map(|&x| x.max(-i16::MAX)).collect();
                let want = scalar(&q, &row);
                assert_eq!(Query::new(&q).dot(&row), want, "len {len} seed {seed}");
                #[cfg(target_arch = "x86_64")]
                {
                    let (sse2, avx2) = x86::both(&q, &row);
                    assert_eq!(sse2, want);
                    assert_eq!(avx2.unwrap_or(want), want);
                }
                // ... and one holding it, which must take the exact scalar path.
                let raw = values(seed + 200, len);
                assert_eq!(Query::new(&raw).dot(&row), scalar(&raw, &row));
            }
        }
    }

    #[test]
    fn extremes_do_not_overflow() {
        let n = 4096;
        let q = vec![-i16::MAX; n];
        let row = vec![i16::MIN; n];
        let want = n as i64 * 32767 * 32768;
        assert_eq!(scalar(&q, &row), want);
        assert_eq!(Query::new(&q).dot(&row), want);
        let q = vec![i16::MIN; n];
        assert_eq!(Query::new(&q).dot(&row), n as i64 * 32768 * 32768);
    }
}
