//! The served pack (docs/parity.md, "The relevance floor and the dense rescue", step 5): of
//! recall's candidates, best first, one per family of near-duplicates.
//!
//! Two candidates nearly duplicate each other when the sets of the index terms of their
//! contents' first [`PACK_CHARS`] code points have a Jaccard similarity of at least the
//! threshold, compared in integers as `|A & B| * den >= num * |A | B|`. A candidate without any
//! term is compared by its case-folded text in the pure kernel; this kernel hands such a walk
//! back to its caller (`None`) instead of re-implementing Python's `str.casefold`.

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap as HashMap;

use crate::error::{Error, Result};
use crate::generated::{PACK_CHARS, PACK_TERMS_CACHED, PACK_TERMS_CACHED_WORDS};
use crate::tokenizer;

/// What the pack reads of one candidate.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    pub content: &'a str,
    /// `created_at` as stored: fixed-width UTC text, so text order is time order.
    pub created: &'a str,
    pub ordinal: u32,
}

/// Candidates' term sets kept between calls by ordinal: the sorted distinct terms of the
/// first [`PACK_CHARS`] code points of their contents. A content never changes under its
/// ordinal and ordinals are never reused, so an entry can only be dropped, never wrong: its
/// owner (the binding's `BankIndex`) drops a removed memory's, and the whole set is dropped
/// when it would pass [`PACK_TERMS_CACHED`] memories or [`PACK_TERMS_CACHED_WORDS`] terms
/// (native/constants.toml, `[pack]`). The owner holds it beside the index's lock, not under
/// it, so a pack never waits behind a writer.
#[derive(Debug, Default)]
pub struct PackTerms {
    inner: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    by_ordinal: HashMap<u32, Terms>,
    words: usize,
}

/// A content's sorted distinct terms.
type Terms = Arc<[Box<str>]>;

impl PackTerms {
    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn terms(&self, candidate: &Candidate<'_>) -> Terms {
        if let Some(found) = self.kept().by_ordinal.get(&candidate.ordinal) {
            return Arc::clone(found);
        }
        let made = terms_of(candidate.content); // outside the lock: this is the cost
        let mut kept = self.kept();
        if kept.by_ordinal.len() >= PACK_TERMS_CACHED
            || kept.words + made.len() > PACK_TERMS_CACHED_WORDS
        {
            kept.by_ordinal.clear();
            kept.words = 0;
        }
        if made.len() <= PACK_TERMS_CACHED_WORDS {
            kept.words += made.len();
            if let Some(old) = kept.by_ordinal.insert(candidate.ordinal, Arc::clone(&made)) {
                kept.words -= old.len(); // a concurrent call's: the same terms
            }
        }
        made
    }

    /// Drops the terms kept for `ordinal` (its memory left the index).
    pub fn remove(&self, ordinal: u32) {
        let mut kept = self.kept();
        if let Some(old) = kept.by_ordinal.remove(&ordinal) {
            kept.words -= old.len();
        }
    }

    /// The bytes of the contents of `candidates` whose terms are not kept: what a pack of
    /// them may have to tokenize.
    pub fn unkept_bytes(&self, candidates: &[Candidate<'_>]) -> usize {
        let kept = self.kept();
        candidates
            .iter()
            .filter(|c| !kept.by_ordinal.contains_key(&c.ordinal))
            .map(|c| c.content.len())
            .sum()
    }

    /// How many memories' terms are kept, and how many terms in all.
    pub fn sizes(&self) -> (usize, usize) {
        let kept = self.kept();
        (kept.by_ordinal.len(), kept.words)
    }
}

/// Indices of `candidates` (ranked best first) to serve, at most `limit`, in serving order:
/// each candidate joins the first family (in the order families were opened) whose head it
/// nearly duplicates, else opens its own; a family is served by its head or, with
/// `prefer_newest`, by its newest member (`created`, then `ordinal`) in the head's place.
/// Without `prefer_newest` the walk stops once `limit` families are open. `None`: a walked
/// candidate has no index term (see the module's note). `kept`: terms kept between calls.
pub fn pack_order(
    candidates: &[Candidate<'_>],
    limit: usize,
    num: u64,
    den: u64,
    prefer_newest: bool,
    kept: &PackTerms,
) -> Result<Option<Vec<usize>>> {
    if num == 0 || den == 0 || num > den {
        return Err(Error::PackThreshold);
    }
    let mut terms: Vec<Terms> = Vec::with_capacity(candidates.len());
    let mut heads: Vec<usize> = Vec::new();
    let mut families: Vec<Vec<usize>> = Vec::new();
    for (i, candidate) in candidates.iter().enumerate() {
        if heads.len() == limit && !prefer_newest {
            break; // later candidates could only join a family or open one past the limit
        }
        let mine = kept.terms(candidate);
        if mine.is_empty() {
            return Ok(None);
        }
        terms.push(mine);
        match heads.iter().position(|&h| near(&terms[h], &terms[i], num, den)) {
            Some(family) => families[family].push(i),
            None => {
                heads.push(i);
                families.push(vec![i]);
            }
        }
    }
    if !prefer_newest {
        return Ok(Some(heads));
    }
    let newness = |i: usize| (candidates[i].created, candidates[i].ordinal);
    let served =
        families.iter().take(limit).map(|family| {
            // The first of the newest, as Python's `max` picks.
            family.iter().copied().fold(family[0], |best, i| {
                if newness(i) > newness(best) {
                    i
                } else {
                    best
                }
            })
        });
    Ok(Some(served.collect()))
}

/// The sorted distinct terms of `content`'s first [`PACK_CHARS`] code points.
fn terms_of(content: &str) -> Terms {
    let end = content.char_indices().nth(PACK_CHARS).map_or(content.len(), |(at, _)| at);
    let mut terms: Vec<Box<str>> = Vec::new();
    tokenizer::for_each_token(&content[..end], |token| terms.push(token.into()));
    terms.sort_unstable();
    terms.dedup();
    terms.into()
}

/// Jaccard(a, b) >= num / den for sorted, distinct, non-empty `a` and `b`.
fn near<T: Ord>(a: &[T], b: &[T], num: u64, den: u64) -> bool {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let (num, den) = (u128::from(num), u128::from(den));
    let (s, l) = (small.len() as u128, large.len() as u128);
    // |A & B| <= |small| and |A | B| >= |large|: most pairs of different sizes stop here.
    if s * den < num * l {
        return false;
    }
    let mut inter = 0u128;
    let mut j = 0;
    for x in small {
        while j < large.len() && large[j] < *x {
            j += 1;
        }
        if j == large.len() {
            break;
        }
        if large[j] == *x {
            inter += 1;
            j += 1;
        }
    }
    inter * den >= num * (s + l - inter)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cands<'a>(texts: &[&'a str], created: &[&'a str]) -> Vec<Candidate<'a>> {
        texts
            .iter()
            .zip(created)
            .enumerate()
            .map(|(i, (&content, &created))| Candidate { content, created, ordinal: i as u32 })
            .collect()
    }

    #[test]
    fn the_threshold_is_an_exact_fraction() {
        let a = [1, 2, 3, 4];
        let b = [1, 2, 3, 4, 5];
        assert!(near(&a, &b, 4, 5)); // exactly 4/5 reaches 0.8
        assert!(!near(&a, &b, 81, 100));
        assert!(near(&[1, 2, 3, 4, 5], &[1, 2, 3, 4, 6], 2, 3)); // 4/6
        assert!(!near(&[1, 2, 3, 4, 5], &[1, 2, 3, 4, 6], 7, 10));
        assert!(near(&[7], &[7], u64::MAX, u64::MAX));
    }

    #[test]
    fn duplicates_fold_into_their_best_ranked() {
        let day = ["2026-01-01T00:00:00.000000Z"; 5];
        let texts =
            ["api port 8080", "api port 8080", "deploy friday", "api port 8080 staging", "db"];
        let got = pack_order(&cands(&texts, &day), 3, 3, 4, false, &PackTerms::default()).unwrap();
        assert_eq!(got, Some(vec![0, 2, 4]));
        let got = pack_order(&cands(&texts, &day), 3, 4, 5, false, &PackTerms::default()).unwrap();
        assert_eq!(got, Some(vec![0, 2, 3]));
    }

    #[test]
    fn prefer_newest_serves_the_newest_member() {
        let texts = ["api port 8080", "deploy friday", "api port 8080", "api port 8080"];
        let created = [
            "2026-01-01T00:00:00.000000Z",
            "2026-01-09T00:00:00.000000Z",
            "2026-01-05T00:00:00.000000Z",
            "2026-01-03T00:00:00.000000Z",
        ];
        let got =
            pack_order(&cands(&texts, &created), 10, 9, 10, true, &PackTerms::default()).unwrap();
        assert_eq!(got, Some(vec![2, 1]));
        let same = ["2026-01-01T00:00:00.000000Z"; 3];
        let got = pack_order(
            &cands(&texts[..1].repeat(3), &same),
            10,
            9,
            10,
            true,
            &PackTerms::default(),
        )
        .unwrap();
        assert_eq!(got, Some(vec![2])); // same time: the later ordinal
    }

    #[test]
    fn a_content_without_terms_is_handed_back() {
        let day = ["2026-01-01T00:00:00.000000Z"; 2];
        let kept = PackTerms::default();
        assert_eq!(
            pack_order(&cands(&["a note", "\u{1f600}"], &day), 5, 1, 1, false, &kept),
            Ok(None)
        );
        // Not walked (the limit was reached first): decided here.
        assert_eq!(
            pack_order(&cands(&["a note", "\u{1f600}"], &day), 1, 1, 1, false, &kept),
            Ok(Some(vec![0]))
        );
    }

    #[test]
    fn kept_terms_serve_what_fresh_ones_do_and_stay_bounded() {
        let texts: Vec<String> =
            (0..3000).map(|i| format!("note {} about topic{i}", i % 7)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let day = vec!["2026-01-01T00:00:00.000000Z"; refs.len()];
        let all = cands(&refs, &day);
        let kept = PackTerms::default();
        for window in all.chunks(30) {
            let warm = pack_order(window, 10, 4, 5, true, &kept).unwrap();
            let again = pack_order(window, 10, 4, 5, true, &kept).unwrap();
            let fresh = pack_order(window, 10, 4, 5, true, &PackTerms::default()).unwrap();
            assert_eq!((&warm, &again), (&fresh, &fresh));
            let (memories, words) = kept.sizes();
            assert!(memories <= PACK_TERMS_CACHED && words <= PACK_TERMS_CACHED_WORDS);
        }
        let (memories, words) = kept.sizes();
        assert!(memories > 0 && words > 0);
        let last = all.last().unwrap().ordinal;
        kept.remove(last);
        kept.remove(u32::MAX); // not kept: nothing happens
        assert_eq!(kept.sizes().0, memories - 1);
        assert!(kept.sizes().1 < words);
    }

    #[test]
    fn a_bad_threshold_is_refused() {
        for (num, den) in [(0, 1), (1, 0), (3, 2)] {
            let kept = PackTerms::default();
            assert_eq!(pack_order(&[], 1, num, den, false, &kept), Err(Error::PackThreshold));
        }
    }
}
