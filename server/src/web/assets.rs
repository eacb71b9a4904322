//! The dashboard's static files. The built bundle (`pkg/`: the wasm's
//! main module and route chunks, their JS glue, the CSS) is served under
//! `/assets/<version>/pkg/`, where the version is a hash of those files
//! taken at start: a new build gets new URLs, so the files can be cached
//! as `immutable` for a year, and a browser never pairs old JS with new
//! wasm. Other versions are 404s.
//! A release build stores each bundle file brotli- and gzip-compressed
//! beside it (`cargo xtask build --release`), sent as they are.
//! The favicon and robots.txt sit at the root, cached for a day.

use axum::{
    Router,
    http::{HeaderValue, header},
};
use sha2::{Digest, Sha256};
use std::path::Path;
use tower_http::{compression::CompressionLayer, services::ServeFile, set_header::SetResponseHeaderLayer};

const IMMUTABLE: &str = "public, max-age=31536000, immutable";
const ONE_DAY: &str = "public, max-age=86400";

/// `/assets/<first 16 hex digits of the SHA-256 of pkg/'s files>`; the
/// prefix the pages give their asset URLs. A missing `pkg/` hashes as
/// empty (the tests run without a built site).
pub fn root(site_root: &Path) -> String {
    let mut files: Vec<_> = std::fs::read_dir(site_root.join("pkg"))
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    files.sort();
    let mut hash = Sha256::new();
    for file in files {
        hash.update(file.file_name().unwrap_or_default().as_encoded_bytes());
        hash.update([0]);
        hash.update(std::fs::read(&file).unwrap_or_default());
        hash.update([0]);
    }
    let digest = hash.finalize();
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("/assets/{hex}")
}

/// The routes of the bundle under `root` and of the root-level files.
pub fn router(site_root: &Path, root: &str) -> Router {
    let cache = |value: &'static str| {
        SetResponseHeaderLayer::overriding(header::CACHE_CONTROL, HeaderValue::from_static(value))
    };
    let bundle = Router::new()
        .nest_service(
            &format!("{root}/pkg"),
            // A release build stores each file compressed beside it; others are compressed per request.
            tower_http::services::ServeDir::new(site_root.join("pkg")).precompressed_br().precompressed_gzip(),
        )
        .layer(cache(IMMUTABLE));
    let files = Router::new()
        .route_service("/favicon.svg", ServeFile::new(site_root.join("favicon.svg")))
        // Browsers ask for /favicon.ico on their own: the same icon.
        .route_service("/favicon.ico", ServeFile::new(site_root.join("favicon.svg")))
        .route_service("/robots.txt", ServeFile::new(site_root.join("robots.txt")))
        .layer(cache(ONE_DAY));
    bundle.merge(files).layer(CompressionLayer::new())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed step is a failed test")]

    /// A release bundle's stored `.br` is what a browser that takes brotli
    /// gets, as it is; one that takes nothing gets the file itself.
    #[tokio::test]
    async fn a_stored_compressed_copy_is_sent_as_it_is() {
        use axum::{body::Body, http::Request};
        use tower::ServiceExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("pkg")).unwrap();
        std::fs::write(dir.path().join("pkg/app.js"), "plain").unwrap();
        std::fs::write(dir.path().join("pkg/app.js.br"), "stored brotli").unwrap();
        let root = super::root(dir.path());
        let get = |encoding: &'static str| {
            let req = Request::get(format!("{root}/pkg/app.js")).header("accept-encoding", encoding);
            super::router(dir.path(), &root).oneshot(req.body(Body::empty()).unwrap())
        };
        let br = get("br, gzip").await.unwrap();
        assert_eq!(br.headers()["content-encoding"], "br");
        let body = axum::body::to_bytes(br.into_body(), 1024).await.unwrap();
        assert_eq!(&body[..], b"stored brotli");
        let plain = get("identity").await.unwrap();
        assert!(plain.headers().get("content-encoding").is_none());
        assert_eq!(&axum::body::to_bytes(plain.into_body(), 1024).await.unwrap()[..], b"plain");
    }

    #[test]
    fn the_version_follows_the_bundle() {
        let dir = tempfile::tempdir().unwrap();
        let empty = super::root(dir.path());
        std::fs::create_dir_all(dir.path().join("pkg")).unwrap();
        std::fs::write(dir.path().join("pkg/app.js"), "one").unwrap();
        let one = super::root(dir.path());
        std::fs::write(dir.path().join("pkg/app.js"), "two").unwrap();
        let two = super::root(dir.path());
        std::fs::write(dir.path().join("pkg/route_chunk.wasm"), "chunk").unwrap();
        let with_chunk = super::root(dir.path());
        assert!(one.starts_with("/assets/") && one.len() == "/assets/".len() + 16, "{one}");
        assert!(empty != one && one != two && two != with_chunk);
    }
}
