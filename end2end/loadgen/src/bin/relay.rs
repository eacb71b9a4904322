//! `relay --upstream http://127.0.0.1:PORT`: the least an HTTP proxy can
//! do — forward each request to one upstream over pooled connections and
//! stream the answer back; no auth, routing, logging or failover. Prints
//! its URL once listening.
//!
//! The bench measures it next to the gateway, so that the gateway's
//! added latency can be read against this machine's floor for any proxy
//! in the same run (the 2-core VM drifts between fast and slow states).

use anyhow::{Context, bail};
use http::{Request, header::HOST};
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::{TokioExecutor, TokioIo},
};
use tokio::net::TcpListener;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let upstream = match (args.next().as_deref(), args.next()) {
        (Some("--upstream"), Some(url)) => url.trim_end_matches('/').to_owned(),
        _ => bail!("usage: relay --upstream http://host:port"),
    };
    // One thread, as one gateway worker serves one connection.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(serve(upstream))
}

async fn serve(upstream: String) -> anyhow::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    println!("http://{}", listener.local_addr()?);
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client: Client<_, Incoming> = Client::builder(TokioExecutor::new()).build(connector);
    loop {
        let (sock, _) = listener.accept().await.context("accepting")?;
        sock.set_nodelay(true)?;
        let (client, upstream) = (client.clone(), upstream.clone());
        tokio::spawn(async move {
            let forward = service_fn(move |mut req: Request<Incoming>| {
                let client = client.clone();
                let target = format!("{upstream}{}", req.uri().path_and_query().map_or("/", |p| p.as_str()));
                async move {
                    *req.uri_mut() = target.parse()?;
                    req.headers_mut().remove(HOST);
                    anyhow::Ok(client.request(req).await?)
                }
            });
            let _ = http1::Builder::new().serve_connection(TokioIo::new(sock), forward).await;
        });
    }
}
