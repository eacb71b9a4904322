//! Who may do what: the admin password and sessions (dashboard), the
//! management bearer key and client API keys (scripts, agents), and the
//! encryption of provider credentials at rest.

pub mod api_keys;
pub mod cross_site;
pub mod identity;
pub mod login_throttle;
pub mod new_keys;
pub mod password;
pub mod redact;
pub mod secrets;
pub mod sessions;
pub mod sign_ins;
pub mod stash;

use rand::RngCore;
use sha2::{Digest, Sha256};

/// `n` random bytes as unpadded base64url.
pub fn random_token(n: usize) -> String {
    use base64::Engine;
    let mut bytes = vec![0u8; n];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// SHA-256 of `s`, lowercase hex: how keys and session tokens are stored.
pub fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

/// Constant-time equality for secrets of possibly different lengths.
pub fn secret_eq(a: &str, b: &str) -> bool {
    let (ha, hb) = (Sha256::digest(a.as_bytes()), Sha256::digest(b.as_bytes()));
    ha.iter().zip(hb.iter()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Who may call: the keys, the secret box, the sign-in throttle and the
/// sign-ins' redirect listener.
pub struct Auth {
    /// Encrypts provider credentials at rest.
    pub secrets: secrets::SecretBox,
    pub keys: api_keys::KeyRegistry,
    /// Wrong admin passwords by address (`login_throttle`).
    pub login_throttle: login_throttle::LoginThrottle,
    /// The sign-ins' own redirect listener (`localhost:1455`), while open.
    pub callback: sign_ins::CallbackWindow,
}
