//! The single admin password: argon2 hash in `key_value`, set on first
//! start from `INITIAL_PASSWORD` or generated and printed once.

use argon2::{
    Argon2, PasswordHash, PasswordHasher, PasswordVerifier,
    password_hash::{SaltString, rand_core::OsRng},
};
use sea_orm::{DatabaseConnection, DbErr};

use crate::{
    db::settings::{self, ADMIN_PASSWORD_HASH},
    resilience::clock::{Clock, SystemClock},
};

pub fn hash(password: &str) -> String {
    let salt = SaltString::generate(&mut OsRng);
    // Hashing with default params only fails for absurd inputs (> 4 GiB).
    Argon2::default().hash_password(password.as_bytes(), &salt).map(|h| h.to_string()).unwrap_or_default()
}

pub fn verify(password: &str, phc: &str) -> bool {
    PasswordHash::new(phc).is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
}

/// Ensures an admin password exists. Returns the generated password when
/// one had to be made up (the caller prints it once). Of several instances
/// starting at once on a new shared database, only the one whose password
/// was stored first prints it.
pub async fn ensure_initial(db: &DatabaseConnection, initial: Option<&str>) -> Result<Option<String>, DbErr> {
    if settings::get(db, ADMIN_PASSWORD_HASH).await?.is_some() {
        return Ok(None);
    }
    let (password, generated) = match initial {
        Some(p) => (p.to_owned(), false),
        None => (super::random_token(15), true),
    };
    let stored = settings::swap(db, ADMIN_PASSWORD_HASH, None, &hash(&password), SystemClock.now_ms()).await?;
    Ok((stored && generated).then_some(password))
}

/// Replaces the admin password and signs everyone out; returns the new
/// password (generated if `None`).
pub async fn reset(db: &DatabaseConnection, new: Option<String>) -> Result<String, DbErr> {
    let password = new.unwrap_or_else(|| super::random_token(15));
    settings::put(db, ADMIN_PASSWORD_HASH, &hash(&password), SystemClock.now_ms()).await?;
    super::sessions::revoke_all(db).await?;
    Ok(password)
}

/// Checks a login attempt on the password checker (see [`checker`]).
pub async fn check(db: &DatabaseConnection, password: &str) -> Result<bool, DbErr> {
    let Some(phc) = settings::get(db, ADMIN_PASSWORD_HASH).await? else {
        return Ok(false);
    };
    let checker = checker().as_ref().map_err(|e| DbErr::Custom(format!("no password checker: {e}")))?;
    let (verdict, answer) = tokio::sync::oneshot::channel();
    let job = Check { password: password.to_owned(), phc, verdict };
    checker.send(job).await.map_err(|_| DbErr::Custom("the password checker stopped".into()))?;
    answer.await.map_err(|_| DbErr::Custom("a password check did not finish".into()))
}

/// One queued login attempt.
struct Check {
    password: String,
    phc: String,
    verdict: tokio::sync::oneshot::Sender<bool>,
}

/// Checks waiting for the checker at most; a sender beyond waits.
const QUEUED_CHECKS: usize = 64;

/// The password checker: one thread for the life of the process, running
/// argon2 one check after another ten nice levels below the threads that
/// serve requests. A check takes tens of milliseconds of CPU and ~19 MiB
/// by design; on the serving threads it would stall every request they
/// carry, and even alone on a core of a small machine it takes CPU the
/// proxy needs. Ten levels down, the scheduler gives it about a tenth of
/// a contended core, so a login flood (already cut down by the throttle)
/// cannot move proxy latency, while a sign-in on a busy machine takes a
/// few hundred milliseconds at worst.
fn checker() -> &'static std::io::Result<tokio::sync::mpsc::Sender<Check>> {
    static CHECKER: std::sync::LazyLock<std::io::Result<tokio::sync::mpsc::Sender<Check>>> =
        std::sync::LazyLock::new(|| {
            let (jobs, mut queue) = tokio::sync::mpsc::channel::<Check>(QUEUED_CHECKS);
            std::thread::Builder::new().name("password-check".into()).spawn(move || {
                lower_this_threads_priority();
                while let Some(job) = queue.blocking_recv() {
                    let _ = job.verdict.send(verify(&job.password, &job.phc));
                }
            })?;
            Ok(jobs)
        });
    &CHECKER
}

/// How much lower than the process the checker runs.
const NICER_BY: i32 = 10;

/// The calling thread's nice value, [`NICER_BY`] above the process's own
/// (at most 19); Linux gives each thread its own nice value. Elsewhere the
/// checker keeps the default priority.
fn lower_this_threads_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: getpriority and setpriority only read their integer
    // arguments; `who` 0 is the calling thread, which still has the nice
    // value of the thread that spawned it.
    unsafe {
        let nicer = (libc::getpriority(libc::PRIO_PROCESS, 0) + NICER_BY).min(19);
        if libc::setpriority(libc::PRIO_PROCESS, 0, nicer) != 0 {
            tracing::warn!(error = %std::io::Error::last_os_error(), "the password checker keeps the default CPU priority");
        }
    }
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

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_checker_runs_below_the_serving_threads() {
        let (verdict, answer) = tokio::sync::oneshot::channel();
        let job = super::Check { password: "x".into(), phc: "not-a-hash".into(), verdict };
        super::checker().as_ref().unwrap().send(job).await.unwrap();
        assert!(!answer.await.unwrap(), "the checker answered");
        let nice_of = |tid: &str| {
            let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
            // Fields after the parenthesised name; nice is the 19th field.
            let after_name = &stat[stat.rfind(')').unwrap() + 2..];
            after_name.split(' ').nth(16).unwrap().parse::<i32>().unwrap()
        };
        let tasks: Vec<_> = std::fs::read_dir("/proc/self/task").unwrap().map(|t| t.unwrap().file_name()).collect();
        // Other tests' threads may end between the listing and the read:
        // a thread gone by then is no checker.
        let named = |tid: &std::ffi::OsString| {
            std::fs::read_to_string(format!("/proc/self/task/{}/comm", tid.to_string_lossy()))
                .ok()
                .map(|comm| comm.trim().to_owned())
        };
        let checker =
            tasks.iter().find(|t| named(t).as_deref() == Some("password-check")).expect("a password-check thread");
        let process = nice_of(&std::process::id().to_string());
        assert_eq!(nice_of(&checker.to_string_lossy()), (process + super::NICER_BY).min(19));
    }
}
