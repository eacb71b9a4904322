//! `fake-upstream [--port N] [--no-log] [--tls]`: runs the fake provider
//! until Ctrl-C, printing its URL on the first line of stdout. `--tls`
//! serves HTTPS offering HTTP/2 (on an ephemeral port, recording), its
//! certificate signed by the test authority of `tls/ca.pem`.

use fake_upstream::{Alpn, FakeUpstream};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut port = 0u16;
    let mut record = true;
    let mut tls = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => {
                port =
                    args.next().and_then(|p| p.parse().ok()).ok_or_else(|| anyhow::anyhow!("--port needs a number"))?
            }
            "--no-log" => record = false,
            "--tls" => tls = true,
            other => anyhow::bail!("unknown argument {other}; usage: fake-upstream [--port N] [--no-log] [--tls]"),
        }
    }
    let fake = match tls {
        true => FakeUpstream::start_tls(Alpn::Http2).await?,
        false => FakeUpstream::start_on(([127, 0, 0, 1], port).into(), record).await?,
    };
    println!("{}", fake.url());
    tokio::signal::ctrl_c().await?;
    Ok(())
}
