//! The single admin password: argon2 hash in `key_value`, set on first
//! start from `INITIAL_PASSWORD` or generated and printed once.

use argon2::{
    Argon2, PasswordHash, PasswordHasher, PasswordVerifier,
    password_hash::{SaltString, rand_core::OsRng},
};
use sea_orm::{DatabaseConnection, DbErr};

use crate::db::settings::{self, ADMIN_PASSWORD_HASH};

pub fn hash(password: &str) -> String {
    let salt = SaltString::generate(&mut OsRng);
    // Hashing with default params only fails for absurd inputs (> 4 GiB).
    Argon2::default().hash_password(password.as_bytes(), &salt).map(|h| h.to_string()).unwrap_or_default()
}

pub fn verify(password: &str, phc: &str) -> bool {
    PasswordHash::new(phc).is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
}

/// Ensures an admin password exists. Returns the generated password when
/// one had to be made up (the caller prints it once).
pub async fn ensure_initial(db: &DatabaseConnection, initial: Option<&str>) -> Result<Option<String>, DbErr> {
    if settings::get(db, ADMIN_PASSWORD_HASH).await?.is_some() {
        return Ok(None);
    }
    let (password, generated) = match initial {
        Some(p) => (p.to_owned(), false),
        None => (super::random_token(15), true),
    };
    settings::put(db, ADMIN_PASSWORD_HASH, &hash(&password)).await?;
    Ok(generated.then_some(password))
}

/// Replaces the admin password and signs everyone out; returns the new
/// password (generated if `None`).
pub async fn reset(db: &DatabaseConnection, new: Option<String>) -> Result<String, DbErr> {
    let password = new.unwrap_or_else(|| super::random_token(15));
    settings::put(db, ADMIN_PASSWORD_HASH, &hash(&password)).await?;
    super::sessions::revoke_all(db).await?;
    Ok(password)
}

/// Argon2 checks running at once: one. A check takes tens of milliseconds
/// and ~19 MiB by design; a queue of them must not take every core (or
/// the memory) the proxy needs.
static CHECKS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// Checks a login attempt. Argon2 runs on the blocking pool, one check at
/// a time: on the serving thread it would stall every proxied request that
/// thread carries (and a login flood would stall them all).
pub async fn check(db: &DatabaseConnection, password: &str) -> Result<bool, DbErr> {
    let Some(phc) = settings::get(db, ADMIN_PASSWORD_HASH).await? else {
        return Ok(false);
    };
    let password = password.to_owned();
    let _turn = CHECKS.acquire().await.map_err(|e| DbErr::Custom(format!("password check refused: {e}")))?;
    tokio::task::spawn_blocking(move || verify(&password, &phc))
        .await
        .map_err(|e| DbErr::Custom(format!("password check did not finish: {e}")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn hash_verifies_only_the_right_password() {
        let h = super::hash("correct horse");
        assert!(super::verify("correct horse", &h));
        assert!(!super::verify("wrong", &h));
        assert!(!super::verify("correct horse", "not-a-hash"));
    }
}
