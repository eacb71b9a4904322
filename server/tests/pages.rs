//! The dashboard's documents and files as a browser receives them: an
//! unknown page is a 404 in the app's layout (machine paths stay JSON),
//! pages are compressed, and the bundle lives under a versioned URL that
//! may be cached for good.
#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]

mod common;

use common::Gateway;
use reqwest::StatusCode;
use serde_json::Value;

#[tokio::test]
async fn an_unknown_page_is_a_404_in_the_layout_and_machine_paths_stay_json() {
    let dir = tempfile::tempdir().unwrap();
    let gw = Gateway::start_in(dir).await;
    let cookie = gw.sign_in().await;
    let page = gw.http.get(format!("{}/no/such/page", gw.url)).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::NOT_FOUND);
    let html = page.text().await.unwrap();
    assert!(html.contains("Page not found · OmniRoute") && html.contains("aria-label=\"Main\""), "{html}");

    let signed_out = gw.http.get(format!("{}/no/such/page", gw.url)).send().await.unwrap();
    assert_eq!(signed_out.headers()["location"], "/login?next=%2Fno%2Fsuch%2Fpage");

    for path in ["/api/nope", "/v1/nope", "/v1beta/nope"] {
        let resp = gw.http.get(format!("{}{path}", gw.url)).header("cookie", &cookie).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::NOT_FOUND, "{path}");
        let body: Value = resp.json().await.unwrap();
        assert!(body["error"]["message"].is_string(), "{path}: {body}");
    }
    gw.stop().await;
}

#[tokio::test]
async fn pages_are_compressed_and_the_bundle_is_versioned_and_immutable() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir_all(site.join("pkg")).unwrap();
    std::fs::write(site.join("pkg/app.css"), "body{}".repeat(200)).unwrap();
    std::fs::write(site.join("favicon.svg"), "<svg xmlns='http://www.w3.org/2000/svg'/>").unwrap();
    let gw = Gateway::start_configured(dir, |c| c.site_root = site.clone()).await;
    let cookie = gw.sign_in().await;

    let page = gw
        .http
        .get(format!("{}/providers", gw.url))
        .header("cookie", &cookie)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(page.headers()["content-encoding"], "gzip");
    let html = String::from_utf8_lossy(&flate_gunzip(&page.bytes().await.unwrap())).into_owned();
    let css =
        html.split("href=\"").map(|s| s.split('"').next().unwrap()).find(|h| h.ends_with("/pkg/app.css")).unwrap();
    assert!(css.starts_with("/assets/"), "{css}");

    let asset = gw.http.get(format!("{}{css}", gw.url)).send().await.unwrap();
    assert_eq!(asset.status(), StatusCode::OK);
    assert_eq!(asset.headers()["cache-control"], "public, max-age=31536000, immutable");
    let stale = gw.http.get(format!("{}/assets/0000000000000000/pkg/app.css", gw.url)).send().await.unwrap();
    assert_eq!(stale.status(), StatusCode::NOT_FOUND, "only the current version is served");

    let icon = gw.http.get(format!("{}/favicon.svg", gw.url)).send().await.unwrap();
    assert_eq!(icon.status(), StatusCode::OK);
    assert_eq!(icon.headers()["content-type"], "image/svg+xml");
    let ico = gw.http.get(format!("{}/favicon.ico", gw.url)).send().await.unwrap();
    assert_eq!(ico.status(), StatusCode::OK, "the icon browsers ask for on their own, never a sign-in redirect");
    assert_eq!(ico.headers()["content-type"], "image/svg+xml");
    gw.stop().await;
}

fn flate_gunzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut out).unwrap();
    out
}

#[tokio::test]
async fn the_root_opens_get_started_until_a_connection_and_a_key_exist() {
    let (fake, gw) = Gateway::with_fake().await;
    let cookie = gw.sign_in().await;
    let root = || async { gw.http.get(format!("{}/", gw.url)).header("cookie", &cookie).send().await.unwrap() };
    assert_eq!(root().await.headers()["location"], "/get-started");
    gw.add_connection("openai", "main", "sk-main-1", &common::v1(&fake), 0).await;
    assert_eq!(root().await.headers()["location"], "/get-started", "a key is still missing");
    gw.create_key(serde_json::json!({"name": "laptop"})).await;
    assert_eq!(root().await.headers()["location"], "/monitoring/health");
    let page = gw.http.get(format!("{}/get-started", gw.url)).header("cookie", &cookie).send().await.unwrap();
    let html = page.text().await.unwrap();
    assert!(html.contains(&format!("ANTHROPIC_BASE_URL={}", gw.url)), "the snippets name this gateway");
    assert!(html.contains("openai/"), "and a model of its connection");
    assert!(html.contains("✓ 1 connection.") && html.contains("1 key exists;"), "counted in words, one of each");
    gw.create_key(serde_json::json!({"name": "desktop"})).await;
    let page = gw.http.get(format!("{}/get-started", gw.url)).header("cookie", &cookie).send().await.unwrap();
    assert!(page.text().await.unwrap().contains("2 keys exist;"));
    gw.stop().await;
}
