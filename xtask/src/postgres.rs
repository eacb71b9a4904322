//! A throwaway Postgres cluster for the Postgres tests: `initdb` into a
//! temp dir, `pg_ctl start` on a free loopback port, stopped and deleted
//! when dropped. Uses the server binaries of Debian's `postgresql` package.

use anyhow::{Context, bail};
use std::{
    path::{Path, PathBuf},
    process::Command,
};

use crate::util;

pub struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    pub url: String,
}

/// `/usr/lib/postgresql/<newest>/bin`.
fn bin_dir() -> anyhow::Result<PathBuf> {
    if !Path::new("/usr/lib/postgresql").is_dir() {
        util::ensure_debian_package("/usr/lib/postgresql", "postgresql")?;
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .context("Postgres server binaries not found (apt-get install -y postgresql)")?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop().context("no initdb under /usr/lib/postgresql")
}

/// Postgres refuses to run as root: run its tools as `postgres` then.
fn pg_command(bin: &Path, tool: &str) -> Command {
    if util::is_root() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(bin.join(tool));
        cmd
    } else {
        Command::new(bin.join(tool))
    }
}

impl Cluster {
    pub fn start() -> anyhow::Result<Self> {
        let bin = bin_dir()?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let dir = std::env::temp_dir().join(format!("omniroute-pg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        if util::output(Command::new("id").arg("-u")).is_ok_and(|u| u.trim() == "0") {
            util::run(Command::new("chown").args(["postgres:postgres"]).arg(&dir))?;
        }
        util::output(pg_command(&bin, "initdb").arg("-D").arg(dir.join("data")).args([
            "-A",
            "trust",
            "-U",
            "omniroute",
            "--no-sync",
        ]))?;
        let opts = format!("-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", dir.display());
        let cluster = Self { bin, dir, url: format!("postgres://omniroute@127.0.0.1:{port}/postgres") };
        let status = pg_command(&cluster.bin, "pg_ctl")
            .arg("-D")
            .arg(cluster.dir.join("data"))
            .args(["-o", &opts, "-l"])
            .arg(cluster.dir.join("log"))
            .args(["-w", "start"])
            .status()?;
        if !status.success() {
            bail!("pg_ctl start failed; see {}", cluster.dir.join("log").display());
        }
        Ok(cluster)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = pg_command(&self.bin, "pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "stop"])
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
