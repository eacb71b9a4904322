//! Keeping credentials out of error text. An upstream that refuses a key
//! often echoes it back — whole, or "sk-proj-abc…xyz1" with its middle
//! starred out, or inside a longer token with a few characters changed
//! around it. Replacing only the exact key would leave most of it in
//! `lastError`, the request log and test results, and together with the
//! masked key's last four characters that rebuilds it. So any run of
//! [`MIN_RUN`] or more characters that also occurs in the secret is
//! replaced.

use std::{borrow::Cow, collections::HashSet};

/// The shortest shared run that counts as a leak.
pub const MIN_RUN: usize = 8;
/// What a leaked run becomes.
pub const MARK: &str = "[redacted]";

/// `text` with every run of ≥ [`MIN_RUN`] bytes that also occurs in
/// `secret` replaced by [`MARK`]. Secrets shorter than that are matched
/// whole.
pub fn redact<'a>(text: &'a str, secret: &str) -> Cow<'a, str> {
    if secret.is_empty() {
        return Cow::Borrowed(text);
    }
    if secret.len() < MIN_RUN {
        return if text.contains(secret) { Cow::Owned(text.replace(secret, MARK)) } else { Cow::Borrowed(text) };
    }
    let windows: HashSet<&[u8]> = secret.as_bytes().windows(MIN_RUN).collect();
    let bytes = text.as_bytes();
    // Byte ranges of `text` covered by some window of the secret, merged.
    let mut leaks: Vec<(usize, usize)> = Vec::new();
    for (start, window) in bytes.windows(MIN_RUN).enumerate() {
        if !windows.contains(window) {
            continue;
        }
        match leaks.last_mut() {
            Some((_, end)) if start <= *end => *end = start + MIN_RUN,
            _ => leaks.push((start, start + MIN_RUN)),
        }
    }
    if leaks.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in leaks {
        let (start, end) = (floor_boundary(text, start), ceil_boundary(text, end));
        if start < at {
            // Touches the previous leak once snapped to whole characters.
            at = at.max(end);
            continue;
        }
        out.push_str(&text[at..start]);
        out.push_str(MARK);
        at = end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEY: &str = "sk-proj-4fGh7Kq9ZxWv2LmN8pRt";

    #[test]
    fn whole_and_partial_echoes_are_redacted() {
        let whole = format!("Incorrect API key provided: {KEY}.");
        assert_eq!(redact(&whole, KEY), "Incorrect API key provided: [redacted].");
        // The middle starred out, the ends kept.
        let starred = "Incorrect API key provided: sk-proj-4fGh********************mN8pRt.";
        assert_eq!(redact(starred, KEY), "Incorrect API key provided: [redacted]********************mN8pRt.");
        // A few characters changed around a long shared run.
        let changed = "key XXsk-proj-4fGh7Kq9ZxWv2LmYY rejected";
        assert_eq!(redact(changed, KEY), "key XX[redacted]YY rejected");
    }

    #[test]
    fn unrelated_text_and_short_runs_are_kept() {
        assert!(matches!(redact("upstream overloaded, try later", KEY), Cow::Borrowed(_)));
        assert_eq!(redact("seven shared: sk-proj, 4fGh7Kq", KEY), "seven shared: sk-proj, 4fGh7Kq");
        assert_eq!(redact("short abc here", "abc"), "short [redacted] here");
        assert_eq!(redact("anything", ""), "anything");
    }

    #[test]
    fn multibyte_text_around_a_leak_stays_valid() {
        let text = format!("clé «{KEY}» refusée");
        assert_eq!(redact(&text, KEY), "clé «[redacted]» refusée");
    }

    proptest! {
        #[test]
        fn no_run_of_the_secret_survives(secret in "[a-zA-Z0-9_-]{8,64}", noise in "\\PC{0,40}", cut in 0usize..64) {
            let cut = cut.min(secret.len() - MIN_RUN);
            let text = format!("{noise}{}{noise}", &secret[cut..]);
            let out = redact(&text, &secret);
            for w in secret.as_bytes().windows(MIN_RUN) {
                prop_assert!(!out.as_bytes().windows(MIN_RUN).any(|o| o == w), "{out}");
            }
        }
    }
}
