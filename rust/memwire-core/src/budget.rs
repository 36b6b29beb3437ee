//! Budget trimming (docs/parity.md, "Budget trimming"); lengths are in code points.

use crate::error::{Error, Result};
use crate::generated::{CHARS_PER_TOKEN, TRUNCATION_MARKER};

/// Keeps texts, in rank order, within `budget_tokens * CHARS_PER_TOKEN` code points. The first
/// text is truncated rather than dropped; a later text is kept whole or skipped.
pub fn trim_to_budget<S: AsRef<str>>(
    texts: &[S],
    budget_tokens: i64,
) -> Result<Vec<(usize, String)>> {
    if budget_tokens < 1 {
        return Err(Error::BudgetTooSmall(budget_tokens.to_string()));
    }
    let mut room = (budget_tokens as u64).saturating_mul(CHARS_PER_TOKEN as u64);
    let marker_len = TRUNCATION_MARKER.chars().count() as u64;
    let mut kept = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let text = text.as_ref();
        let len = text.chars().count() as u64;
        if len <= room {
            kept.push((i, text.to_owned()));
            room -= len;
        } else if i == 0 {
            let cut = if room > marker_len {
                let mut cut = prefix(text, room - marker_len).to_owned();
                cut.push_str(TRUNCATION_MARKER);
                cut
            } else {
                prefix(text, room).to_owned()
            };
            room -= cut.chars().count() as u64;
            kept.push((0, cut));
        }
    }
    Ok(kept)
}

/// The first `n` code points of `text`.
fn prefix(text: &str, n: u64) -> &str {
    match text.char_indices().nth(n as usize) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_whole_texts_and_skips_big_ones() {
        let got = trim_to_budget(&["abcd", "0123456789", "xy"], 2).unwrap();
        assert_eq!(got, vec![(0, "abcd".to_owned()), (2, "xy".to_owned())]);
    }

    #[test]
    fn truncates_first_text_with_marker() {
        let text = "é".repeat(40);
        let got = trim_to_budget(&[text.as_str(), "z"], 5).unwrap();
        assert_eq!(got, vec![(0, format!("{}{TRUNCATION_MARKER}", "é".repeat(8)))]);
    }

    #[test]
    fn truncates_first_text_without_marker_when_room_is_small() {
        let got = trim_to_budget(&["abcdefghijklmnopqrstuvwxyz", "q"], 3).unwrap();
        assert_eq!(got, vec![(0, "abcdefghijkl".to_owned())]);
    }

    #[test]
    fn rejects_small_budget() {
        let texts: [&str; 0] = [];
        assert_eq!(
            trim_to_budget(&texts, 0).unwrap_err().to_string(),
            "budget_tokens must be at least 1, got 0"
        );
    }
}
