//! The data dir is private to the gateway's user: it holds the secret key,
//! the SQLite database (credentials encrypted, but also key hashes and the
//! request log) and its WAL / SHM files. The dir is created (or tightened)
//! to 0700 and the database files to 0600 before SQLite opens them —
//! SQLite gives the WAL and SHM files the mode of the database file, so a
//! database created 0600 keeps its companions private too.

use std::{
    io,
    path::{Path, PathBuf},
};

/// Creates `dir` if needed and makes it 0700.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    set_mode(dir, 0o700)
}

/// Creates the SQLite database file of `url` 0600 if it is missing (and
/// its missing parent dirs 0700), and makes it and its WAL / SHM files
/// 0600 if they exist. Not a file URL (`sqlite::memory:`, Postgres):
/// nothing to do.
pub fn private_sqlite_files(url: &str) -> io::Result<()> {
    let Some(path) = sqlite_path(url) else { return Ok(()) };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
        let mut dirs = std::fs::DirBuilder::new();
        dirs.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut dirs, 0o700);
        dirs.create(parent)?;
    }
    if !path.exists() {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        match opts.open(&path) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    for suffix in ["", "-wal", "-shm"] {
        let file = PathBuf::from(format!("{}{suffix}", path.display()));
        if file.exists() {
            set_mode(&file, 0o600)?;
        }
    }
    Ok(())
}

/// The file a `sqlite://path?opts` URL names.
fn sqlite_path(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or(rest);
    (!path.is_empty() && !path.starts_with(":memory:")).then(|| PathBuf::from(path))
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn urls_name_their_file() {
        assert_eq!(sqlite_path("sqlite:///tmp/x/omniroute.db?mode=rwc"), Some("/tmp/x/omniroute.db".into()));
        assert_eq!(sqlite_path("sqlite://./data/omniroute.db"), Some("./data/omniroute.db".into()));
        assert_eq!(sqlite_path("sqlite::memory:"), None);
        assert_eq!(sqlite_path("postgres://db/x"), None);
    }

    #[test]
    fn an_existing_world_readable_install_is_tightened() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
        let db = data.join("omniroute.db");
        for f in [db.clone(), data.join("omniroute.db-wal")] {
            std::fs::write(&f, b"").unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        private_dir(&data).unwrap();
        private_sqlite_files(&format!("sqlite://{}", db.display())).unwrap();
        assert_eq!(mode(&data), 0o700);
        assert_eq!((mode(&db), mode(&data.join("omniroute.db-wal"))), (0o600, 0o600));
    }
}
