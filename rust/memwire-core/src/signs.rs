//! Sign bits of int16 vectors and their Hamming distances: the dense stream's candidate scan
//! between the exact and the graph tiers (docs/parity.md, "Dense stream").
//!
//! A distance is an integer count of differing bits, so every evaluation (the `popcnt`
//! instruction or the portable bit trick) gives the same value and the layout of the bits is
//! this kernel's own: the Python twin packs them differently and agrees on every distance.

/// Appends the sign bits of `v` (bit `i % 64` of word `i / 64` set when `v[i] > 0`) as `words`
/// u64s.
pub fn push(out: &mut Vec<u64>, v: &[i16], words: usize) {
    let start = out.len();
    out.resize(start + words, 0);
    for (i, &x) in v.iter().enumerate() {
        if x > 0 {
            out[start + i / 64] |= 1 << (i % 64);
        }
    }
}

/// The Hamming distance of each row of `signs` (`q.len()` words a row) to `q`, and how many
/// rows lie at each distance (`64 * q.len() + 1` counts). At most `MAX_DIM` bits differ, so a
/// distance fits a u16.
pub fn distances(signs: &[u64], q: &[u64]) -> (Vec<u16>, Vec<u32>) {
    #[cfg(target_arch = "x86_64")]
    if q.len() == 4 && has_avx2() {
        // SAFETY: the CPU has AVX2 (checked just above); rows are 4 words wide.
        let dist = unsafe { distances_avx2_w4(signs, q) };
        let at = histogram(&dist, 64 * 4 + 1);
        return (dist, at);
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has `popcnt` (checked just above).
        return unsafe { distances_popcnt(signs, q) };
    }
    distances_portable(signs, q)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn distances_popcnt(signs: &[u64], q: &[u64]) -> (Vec<u16>, Vec<u32>) {
    // The same code compiled with the instruction: the x86_64 baseline has none, and the
    // portable bit trick costs about four times as much per word.
    distances_portable(signs, q)
}

#[inline(always)]
fn distances_portable(signs: &[u64], q: &[u64]) -> (Vec<u16>, Vec<u32>) {
    // A constant row width for the usual dimensions (256: 4 words, 384: 6), which the compiler
    // then unrolls (the function is inlined into each arm); any other width takes the loop.
    match q.len() {
        0 => (Vec::new(), vec![0; 1]),
        4 => distances_of_width(signs, q, 4),
        6 => distances_of_width(signs, q, 6),
        words => distances_of_width(signs, q, words),
    }
}

// Plain index loops, not iterator chains: a `collect` is compiled apart from its caller,
// without the caller's `popcnt`, and counted bits the slow way (two thirds of a scan's time).
#[inline(always)]
fn distances_of_width(signs: &[u64], q: &[u64], words: usize) -> (Vec<u16>, Vec<u32>) {
    let rows = signs.len() / words;
    let mut dist = vec![0u16; rows];
    for r in 0..rows {
        let row = &signs[r * words..(r + 1) * words];
        let mut d = 0;
        for w in 0..words {
            d += (row[w] ^ q[w]).count_ones();
        }
        dist[r] = d as u16;
    }
    let at = histogram(&dist, 64 * words + 1);
    (dist, at)
}

/// The distances of 4-word rows (256 dimensions, the bundled embedder's) with AVX2: a row is one
/// 32-byte register, its bits counted a nibble at a time by a table lookup (`vpshufb`) and
/// summed per 8 bytes (`vpsadbw`); four rows' partial sums are then added into one register.
/// A scan of 100,000 rows spent a third of its time in the scalar loop's `popcnt`s; this does
/// the same count in about a quarter of the instructions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn distances_avx2_w4(signs: &[u64], q: &[u64]) -> Vec<u16> {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi64, _mm256_add_epi8, _mm256_and_si256, _mm256_loadu_si256,
        _mm256_permute2x128_si256, _mm256_sad_epu8, _mm256_set1_epi8, _mm256_setr_epi8,
        _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_srli_epi16, _mm256_storeu_si256,
        _mm256_unpackhi_epi64, _mm256_unpacklo_epi64, _mm256_xor_si256,
    };
    assert_eq!(q.len(), 4, "rows of 4 words");
    let rows = signs.len() / 4;
    let mut dist = vec![0u16; rows];
    // SAFETY (all loads): `q` holds 4 u64s (32 bytes), and every row read below lies within
    // `signs` (`r + 4 <= rows` rows of 4 words each); unaligned loads and stores are used.
    let qv = unsafe { _mm256_loadu_si256(q.as_ptr().cast::<__m256i>()) };
    let nibbles = _mm256_setr_epi8(
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3,
        3, 4,
    );
    let low = _mm256_set1_epi8(0x0f);
    let zero = _mm256_setzero_si256();
    // The set bits of row `i` (words at `base + 4 * i`) differing from `q`, as four sums of 8
    // bytes each.
    macro_rules! counts {
        ($base:expr, $i:expr) => {{
            let row = unsafe { _mm256_loadu_si256($base.add(4 * $i).cast::<__m256i>()) };
            let x = _mm256_xor_si256(row, qv);
            let lo = _mm256_shuffle_epi8(nibbles, _mm256_and_si256(x, low));
            let hi = _mm256_shuffle_epi8(nibbles, _mm256_and_si256(_mm256_srli_epi16(x, 4), low));
            _mm256_sad_epu8(_mm256_add_epi8(lo, hi), zero)
        }};
    }
    let mut r = 0;
    let mut sums = [0u64; 4];
    while r + 4 <= rows {
        let base = signs[4 * r..].as_ptr();
        let (a, b, c, d) = (counts!(base, 0), counts!(base, 1), counts!(base, 2), counts!(base, 3));
        // [a0+a1, b0+b1 | a2+a3, b2+b3], the same of c and d, then the halves added: [a, b, c, d].
        let ab = _mm256_add_epi64(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
        let cd = _mm256_add_epi64(_mm256_unpacklo_epi64(c, d), _mm256_unpackhi_epi64(c, d));
        let all = _mm256_add_epi64(
            _mm256_permute2x128_si256::<0x20>(ab, cd),
            _mm256_permute2x128_si256::<0x31>(ab, cd),
        );
        unsafe { _mm256_storeu_si256(sums.as_mut_ptr().cast::<__m256i>(), all) };
        for (d, &s) in dist[r..r + 4].iter_mut().zip(&sums) {
            *d = s as u16; // at most 256
        }
        r += 4;
    }
    for (d, row) in dist[r..].iter_mut().zip(signs[4 * r..].chunks_exact(4)) {
        *d = row.iter().zip(q).map(|(w, v)| (w ^ v).count_ones()).sum::<u32>() as u16;
    }
    dist
}

/// How many of `dist` hold each value below `buckets` (all of them do).
#[inline(always)]
fn histogram(dist: &[u16], buckets: usize) -> Vec<u32> {
    // Four interleaved counts: neighbouring rows often share a distance, and one count would
    // make each increment wait for the previous one.
    let mut at = vec![[0u32; 4]; buckets];
    let mut quads = dist.chunks_exact(4);
    for quad in &mut quads {
        for (j, &d) in quad.iter().enumerate() {
            at[usize::from(d)][j] += 1;
        }
    }
    for &d in quads.remainder() {
        at[usize::from(d)][0] += 1;
    }
    at.iter().map(|c| c.iter().sum()).collect()
}

/// Calls `found(i, d)` for each `dist[i] = d <= cut`, ascending `i`.
#[inline]
pub fn each_at_most(dist: &[u16], cut: u16, mut found: impl FnMut(usize, u16)) {
    // Few rows pass (a scan keeps ~5%): a mask of 32 comparisons (which the compiler turns
    // into vector compares) skips most blocks without a branch per row.
    let mut blocks = dist.chunks_exact(32);
    let mut base = 0;
    for block in &mut blocks {
        let mut mask = 0u32;
        for (j, &d) in block.iter().enumerate() {
            mask |= u32::from(d <= cut) << j;
        }
        while mask != 0 {
            let j = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            found(base + j, block[j]);
        }
        base += 32;
    }
    for (j, &d) in blocks.remainder().iter().enumerate() {
        if d <= cut {
            found(base + j, d);
        }
    }
}

/// Scores rows of sign bits against an int16 query: the sum of the query's components at the
/// row's set bits, an exact integer (at most `MAX_DIM * 32768` in magnitude, within i32). With
/// AVX2, sixteen components at a time (the row's bits widened into a lane mask); otherwise from
/// a table of 256 partial sums per byte of the row. Both give the same integer.
pub struct Asym {
    /// The query, zero-padded to the row's `64 * words` bits.
    padded: Vec<i16>,
    /// Entry `256 * j + b`: the sum of `query[8 * j + i]` over the set bits `i` of `b`; empty
    /// when the AVX2 path is taken.
    table: Vec<i32>,
}

impl Asym {
    pub fn new(query: &[i16], words: usize) -> Self {
        let mut padded = vec![0i16; 64 * words];
        let n = query.len().min(padded.len());
        padded[..n].copy_from_slice(&query[..n]);
        let table = if has_avx2() { Vec::new() } else { byte_table(&padded) };
        Self { padded, table }
    }

    /// The score of one row of `words` u64s.
    #[inline]
    pub fn score(&self, row: &[u64]) -> i32 {
        assert_eq!(64 * row.len(), self.padded.len(), "a row of the index's width");
        #[cfg(target_arch = "x86_64")]
        if self.table.is_empty() {
            // SAFETY: an empty table means AVX2 was detected (`new`); the row's width was
            // checked just above.
            return unsafe { score_avx2(&self.padded, row) };
        }
        score_table(&self.table, row)
    }
}

fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

fn byte_table(padded: &[i16]) -> Vec<i32> {
    let mut table = vec![0i32; 4 * padded.len() * 8];
    for (j, part) in table.chunks_exact_mut(256).enumerate() {
        for b in 1..256usize {
            // `b` without its lowest set bit, plus that bit's component.
            let low = b.trailing_zeros() as usize;
            part[b] = part[b & (b - 1)] + i32::from(padded[8 * j + low]);
        }
    }
    table
}

fn score_table(table: &[i32], row: &[u64]) -> i32 {
    let mut sum = 0;
    for (w, &word) in row.iter().enumerate() {
        for (k, byte) in word.to_le_bytes().into_iter().enumerate() {
            sum += table[256 * (8 * w + k) + usize::from(byte)];
        }
    }
    sum
}

/// `1 << j` in lane `j`: the bit each of sixteen components reads from its 16 bits.
#[cfg(target_arch = "x86_64")]
const LANES: [i16; 16] = {
    let mut lanes = [0i16; 16];
    let mut j = 0;
    while j < 16 {
        lanes[j] = (1u16 << j) as i16;
        j += 1;
    }
    lanes
};

/// Callers guarantee AVX2 and `padded.len() == 64 * row.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn score_avx2(padded: &[i16], row: &[u64]) -> i32 {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi32, _mm256_and_si256, _mm256_castsi256_si128, _mm256_cmpeq_epi16,
        _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_madd_epi16, _mm256_set1_epi16,
        _mm256_setzero_si256, _mm_add_epi32, _mm_cvtsi128_si32, _mm_shuffle_epi32,
    };
    // Lane `j` of a 16-component chunk holds bit `j` of the row's matching 16 bits.
    // SAFETY: `LANES` is 16 i16s, 32 readable bytes.
    let lanes = unsafe { _mm256_loadu_si256(LANES.as_ptr().cast::<__m256i>()) };
    let ones = _mm256_set1_epi16(1);
    let mut acc = _mm256_setzero_si256();
    for (chunk, q) in padded.chunks_exact(16).enumerate() {
        let bits = (row[chunk / 4] >> (16 * (chunk % 4))) as u16 as i16;
        // SAFETY: `q` is 16 i16s, 32 readable bytes.
        let q = unsafe { _mm256_loadu_si256(q.as_ptr().cast::<__m256i>()) };
        let set = _mm256_cmpeq_epi16(_mm256_and_si256(_mm256_set1_epi16(bits), lanes), lanes);
        // Pairs of kept components summed exactly in i32 (each at most 32768 in magnitude).
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_and_si256(set, q), ones));
    }
    let s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256::<1>(acc));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
    _mm_cvtsi128_si32(s)
}

/// Asks the CPU to start loading `row` (an int16 vector or a row of sign bits) into its
/// caches: the candidates are scored from rows scattered over the whole matrix, and one row's
/// misses overlap the previous row's work instead of following it.
#[inline]
pub fn prefetch<T>(row: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let bytes = std::mem::size_of_val(row);
        let base = row.as_ptr().cast::<i8>();
        for offset in (0..bytes).step_by(64) {
            // SAFETY: SSE is part of the x86_64 baseline, and the address lies within `row`
            // (a prefetch never faults anyway).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(base.add(offset)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = row;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every path to the distances of 4-word rows (AVX2 where the CPU has it) gives the
    /// portable loop's counts, for row counts around the four-row step and all-ones words.
    #[test]
    fn distances_of_four_word_rows_agree() {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for rows in [0usize, 1, 3, 4, 5, 8, 31, 37] {
            let mut signs: Vec<u64> = (0..4 * rows).map(|_| next()).collect();
            if rows > 2 {
                signs[4..8].copy_from_slice(&[u64::MAX; 4]);
            }
            for q in [[next(), next(), next(), next()], [0; 4], [u64::MAX; 4]] {
                let want = distances_portable(&signs, &q);
                assert_eq!(distances(&signs, &q), want, "rows {rows}");
                let by_hand: Vec<u16> = signs
                    .chunks_exact(4)
                    .map(|r| r.iter().zip(&q).map(|(a, b)| (a ^ b).count_ones() as u16).sum())
                    .collect();
                assert_eq!(want.0, by_hand);
            }
        }
    }

    #[test]
    fn bits_and_distances() {
        let mut out = Vec::new();
        push(&mut out, &[3, 0, -1, 5], 1);
        assert_eq!(out, [0b1001]);
        // 70 components: a second, partial word.
        let a: Vec<i16> = (0..70).map(|i| if i % 3 == 0 { 1 } else { -1 }).collect();
        let b: Vec<i16> = (0..70).map(|i| if i % 2 == 0 { 1 } else { 0 }).collect();
        let (mut sa, mut sb) = (Vec::new(), Vec::new());
        push(&mut sa, &a, 2);
        push(&mut sb, &b, 2);
        let want = a.iter().zip(&b).filter(|(x, y)| (**x > 0) != (**y > 0)).count() as u16;
        let rows = [sa.clone(), sb.clone(), sa.clone()].concat();
        let (dist, at) = distances(&rows, &sb);
        assert_eq!(dist, [want, 0, want]);
        assert_eq!((at.len(), at[0], at[usize::from(want)]), (129, 1, 2));
        assert_eq!(distances_portable(&rows, &sb), (dist, at));
        assert!(distances(&[], &sb).0.is_empty());
        // Blocks of 32 and a remainder, the first and last rows, a cut of 0 and of u16::MAX.
        let dist: Vec<u16> = (0..100u16).map(|i| (i * 37) % 11).collect();
        for cut in [0, 3, 10, u16::MAX] {
            let mut got = Vec::new();
            each_at_most(&dist, cut, |i, d| got.push((i, d)));
            let want: Vec<(usize, u16)> =
                dist.iter().copied().enumerate().filter(|&(_, d)| d <= cut).collect();
            assert_eq!(got, want);
        }
        prefetch(&a);
        // The table's score is the plain sum of the query at the row's positive components.
        let asym = Asym::new(&b, 2);
        let plain: i32 =
            a.iter().zip(&b).filter(|(x, _)| **x > 0).map(|(_, y)| i32::from(*y)).sum();
        assert_eq!(asym.score(&sa), plain);
        let q: Vec<i16> = (0..70).map(|i| (i * 977 % 65535 - 32767) as i16).collect();
        // Both paths, extremes included, on a wide row.
        let max_dim = crate::generated::MAX_DIM;
        let wide: Vec<i16> = (0..max_dim).map(|i| [i16::MIN, i16::MAX, -7, 0, 3][i % 5]).collect();
        let mut bits = Vec::new();
        push(&mut bits, &wide.iter().map(|&x| x ^ 1).collect::<Vec<_>>(), max_dim / 64);
        let asym = Asym::new(&wide, max_dim / 64);
        let want: i32 = wide.iter().filter(|&&x| (x ^ 1) > 0).map(|&x| i32::from(x)).sum();
        assert_eq!(asym.score(&bits), want);
        assert_eq!(score_table(&byte_table(&asym.padded), &bits), want);
        let asym = Asym::new(&q, 2);
        for v in [&a, &b] {
            let mut bits = Vec::new();
            push(&mut bits, v, 2);
            let plain: i32 =
                v.iter().zip(&q).filter(|(x, _)| **x > 0).map(|(_, y)| i32::from(*y)).sum();
            assert_eq!(asym.score(&bits), plain);
        }
    }
}
