//! Encryption of provider credentials at rest with AES-256-GCM.
//!
//! The key comes from `OMNIROUTE_SECRET_KEY` (64 hex chars or base64 of 32
//! bytes used as-is; any other string is stretched with SHA-256), else from
//! `<data-dir>/secret.key`, created on first start with mode 0600. Losing
//! the key makes stored credentials unreadable, by design.

use aes_gcm::{Aes256Gcm, KeyInit, Nonce, aead::Aead};
use base64::{Engine, engine::general_purpose::STANDARD};
use rand::RngCore;
use sha2::{Digest, Sha256};
use std::path::Path;

const PREFIX: &str = "v1:";
const KEY_FILE: &str = "secret.key";

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("cannot read or create the secret key file {path}: {source}")]
    KeyFile { path: String, source: std::io::Error },
    #[error("the secret key file {0} does not hold 32 base64 bytes")]
    BadKeyFile(String),
    #[error(
        "a stored credential cannot be decrypted (was OMNIROUTE_SECRET_KEY or secret.key changed, or does \
         another instance on this database use a different one?)"
    )]
    Decrypt,
}

/// Encrypts and decrypts credentials. Cheap to clone behind an `Arc`.
pub struct SecretBox {
    cipher: Aes256Gcm,
}

impl SecretBox {
    pub fn from_key(key: [u8; 32]) -> Self {
        Self { cipher: Aes256Gcm::new(&key.into()) }
    }

    /// The key from the env value when given, else from the key file.
    pub fn load(env_key: Option<&str>, data_dir: &Path) -> Result<Self, SecretError> {
        match env_key {
            Some(k) => Ok(Self::from_key(key_from_str(k))),
            None => Ok(Self::from_key(key_from_file(&data_dir.join(KEY_FILE))?)),
        }
    }

    pub fn encrypt(&self, plain: &str) -> String {
        let mut nonce = [0u8; 12];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        // AES-GCM encryption only fails for inputs beyond 64 GiB.
        let ct = self.cipher.encrypt(Nonce::from_slice(&nonce), plain.as_bytes()).unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend_from_slice(&ct);
        format!("{PREFIX}{}", STANDARD.encode(out))
    }

    pub fn decrypt(&self, stored: &str) -> Result<String, SecretError> {
        let raw = stored.strip_prefix(PREFIX).and_then(|b| STANDARD.decode(b).ok()).ok_or(SecretError::Decrypt)?;
        if raw.len() < 12 {
            return Err(SecretError::Decrypt);
        }
        let (nonce, ct) = raw.split_at(12);
        let plain = self.cipher.decrypt(Nonce::from_slice(nonce), ct).map_err(|_| SecretError::Decrypt)?;
        String::from_utf8(plain).map_err(|_| SecretError::Decrypt)
    }
}

fn key_from_str(k: &str) -> [u8; 32] {
    let k = k.trim();
    if let Ok(bytes) = hex::decode(k)
        && let Ok(key) = <[u8; 32]>::try_from(bytes.as_slice())
    {
        return key;
    }
    if let Ok(bytes) = STANDARD.decode(k)
        && let Ok(key) = <[u8; 32]>::try_from(bytes.as_slice())
    {
        return key;
    }
    Sha256::digest(k.as_bytes()).into()
}

fn key_from_file(path: &Path) -> Result<[u8; 32], SecretError> {
    let io = |source| SecretError::KeyFile { path: path.display().to_string(), source };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            keep_private(path).map_err(io)?;
            decode_key_file(path, &text)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut key = [0u8; 32];
            rand::rngs::OsRng.fill_bytes(&mut key);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(io)?;
            }
            write_private(path, &STANDARD.encode(key)).map_err(io)?;
            Ok(key)
        }
        Err(e) => Err(io(e)),
    }
}

fn decode_key_file(path: &Path, text: &str) -> Result<[u8; 32], SecretError> {
    STANDARD
        .decode(text.trim())
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
        .ok_or_else(|| SecretError::BadKeyFile(path.display().to_string()))
}

/// A key file that others may read (an install from before the file was
/// created private, or one copied in by hand) is made the owner's alone.
fn keep_private(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)?.permissions().mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
            tracing::warn!(path = %path.display(), "the secret key file was readable by others; it is now mode 0600");
        }
    }
    Ok(())
}

/// Writes a file readable by the owner only.
fn write_private(path: &Path, content: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    opts.open(path)?.write_all(content.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_tamper_detection() {
        let b = SecretBox::from_key([7; 32]);
        let enc = b.encrypt("sk-secret");
        assert!(!enc.contains("sk-secret"));
        assert_eq!(b.decrypt(&enc).unwrap(), "sk-secret");
        let other = SecretBox::from_key([8; 32]);
        assert!(other.decrypt(&enc).is_err());
    }

    #[test]
    fn key_file_is_created_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let a = SecretBox::load(None, dir.path()).unwrap();
        let enc = a.encrypt("x");
        let b = SecretBox::load(None, dir.path()).unwrap();
        assert_eq!(b.decrypt(&enc).unwrap(), "x");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_key_file_others_could_read_is_made_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let a = SecretBox::load(None, dir.path()).unwrap();
        let path = dir.path().join(KEY_FILE);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let b = SecretBox::load(None, dir.path()).unwrap();
        assert_eq!(b.decrypt(&a.encrypt("x")).unwrap(), "x", "the same key");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn env_key_forms_agree() {
        let hex_key = "11".repeat(32);
        let b64_key = STANDARD.encode([0x11u8; 32]);
        assert_eq!(key_from_str(&hex_key), key_from_str(&b64_key));
        assert_ne!(key_from_str("passphrase"), key_from_str("passphrase2"));
    }
}
