//! Keeping credentials out of error text. An upstream that refuses a key
//! often echoes it back — whole, or "sk-proj-abc…xyz1" with its middle
//! starred out, or inside a longer token with a few characters changed
//! around it. Replacing only the exact key would leave most of it in
//! `lastError`, the request log and test results, and together with the
//! masked key's last four characters that rebuilds it. So any run of
//! [`MIN_RUN`] or more characters that also occurs in the secret is
//! replaced — in any letter case (an upstream may upper-case what it
//! echoes), and in base64 (a key echoed inside a Basic credential or an
//! encoded token), at any alignment.

use base64::{
    Engine,
    engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD},
};
use std::{borrow::Cow, collections::HashSet};

/// The shortest shared run that counts as a leak.
pub const MIN_RUN: usize = 8;
/// What a leaked run becomes.
pub const MARK: &str = "[redacted]";

/// `text` with every run of ≥ [`MIN_RUN`] bytes that also occurs in
/// `secret` (in any letter case, or in its base64 forms) replaced by
/// [`MARK`]. Secrets shorter than that are matched whole.
pub fn redact<'a>(text: &'a str, secret: &str) -> Cow<'a, str> {
    if secret.is_empty() {
        return Cow::Borrowed(text);
    }
    if secret.len() < MIN_RUN {
        return if text.contains(secret) { Cow::Owned(text.replace(secret, MARK)) } else { Cow::Borrowed(text) };
    }
    let folded = secret.to_ascii_lowercase();
    let mut leaks = shared_runs(&text.to_ascii_lowercase(), [folded.as_str()]);
    leaks.extend(shared_runs(text, base64_forms(secret).iter().map(String::as_str)));
    if leaks.is_empty() {
        return Cow::Borrowed(text);
    }
    leaks.sort_unstable();
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

/// Byte ranges of `text` covered by some [`MIN_RUN`]-window of one of
/// `secrets`, merged where they touch.
fn shared_runs<'s>(text: &str, secrets: impl IntoIterator<Item = &'s str>) -> Vec<(usize, usize)> {
    let windows: HashSet<&[u8]> = secrets.into_iter().flat_map(|s| s.as_bytes().windows(MIN_RUN)).collect();
    let mut leaks: Vec<(usize, usize)> = Vec::new();
    for (start, window) in text.as_bytes().windows(MIN_RUN).enumerate() {
        if !windows.contains(window) {
            continue;
        }
        match leaks.last_mut() {
            Some((_, end)) if start <= *end => *end = start + MIN_RUN,
            _ => leaks.push((start, start + MIN_RUN)),
        }
    }
    leaks
}

/// The characters of `secret`'s base64 encodings (standard and URL-safe)
/// that do not depend on what stands around it, for each of the three
/// alignments it may have inside a longer encoded string.
fn base64_forms(secret: &str) -> Vec<String> {
    let mut forms = Vec::with_capacity(6);
    for lead in 0..3_usize {
        let mut bytes = vec![0_u8; lead];
        bytes.extend_from_slice(secret.as_bytes());
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&bytes);
            // The first characters carry the bytes before the secret, the
            // last ones those after it.
            let start = (lead * 4).div_ceil(3);
            let end = encoded.len().saturating_sub(3);
            if start < end {
                forms.push(encoded[start..end].to_owned());
            }
        }
    }
    forms
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
    fn upper_cased_and_base64_echoes_are_redacted() {
        let shouted = format!("INVALID KEY: {}", KEY.to_ascii_uppercase());
        assert_eq!(redact(&shouted, KEY), "INVALID KEY: [redacted]");
        for user in ["", "u", "us", "user"] {
            let basic = STANDARD_NO_PAD.encode(format!("{user}:{KEY}"));
            let echoed = format!("bad credential Basic {basic}=");
            let out = redact(&echoed, KEY);
            assert!(!out.contains(&basic[basic.len() / 2..basic.len() - 4]), "{user:?}: {out}");
            assert!(out.contains(MARK), "{user:?}: {out}");
        }
        let token = URL_SAFE_NO_PAD.encode(KEY);
        assert!(redact(&format!("token={token}"), KEY).contains(MARK));
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
