//! `omniroute [serve|migrate|reset-password]` — see `omniroute --help`.

use anyhow::Context;
use clap::Parser;
use server::config::{Cli, Command, Config};
use std::collections::HashMap;

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let env: HashMap<String, String> = std::env::vars().collect();
    let config = Config::resolve(&cli.opts, &env)?;
    init_tracing(&config);
    let once = || tokio::runtime::Builder::new_current_thread().enable_all().build();
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => server::workers::serve(config),
        Command::Migrate => once()?.block_on(async {
            server::db::connect(&config.database_url).await.context("applying migrations")?;
            println!("migrations applied");
            Ok(())
        }),
        Command::ResetPassword { password } => once()?.block_on(async {
            let db = server::db::connect(&config.database_url).await.context("opening the database")?;
            let new = server::auth::password::reset(&db, password).await?;
            println!("new admin password: {new}");
            Ok(())
        }),
    }
}

fn init_tracing(config: &Config) {
    let filter = tracing_subscriber::EnvFilter::try_new(&config.log_filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    if config.log_json {
        builder.json().init();
    } else {
        builder.init();
    }
}
