//! First start: an admin password is generated once (or taken from
//! INITIAL_PASSWORD) and never replaced on later starts.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use server::{auth::password, db};

#[tokio::test]
async fn the_initial_password_is_generated_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = db::connect(&format!("sqlite://{}/t.db", dir.path().display())).await.unwrap();
    let generated = password::ensure_initial(&db, None).await.unwrap().expect("a generated password");
    assert!(generated.len() >= 16);
    assert!(password::check(&db, &generated).await.unwrap());
    assert_eq!(password::ensure_initial(&db, None).await.unwrap(), None, "not generated again");
    assert_eq!(
        password::ensure_initial(&db, Some("other")).await.unwrap(),
        None,
        "INITIAL_PASSWORD does not overwrite"
    );
    assert!(!password::check(&db, "other").await.unwrap());
}

#[tokio::test]
async fn initial_password_env_is_used_on_a_fresh_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = db::connect(&format!("sqlite://{}/t.db", dir.path().display())).await.unwrap();
    assert_eq!(password::ensure_initial(&db, Some("from-env-123")).await.unwrap(), None);
    assert!(password::check(&db, "from-env-123").await.unwrap());
}
