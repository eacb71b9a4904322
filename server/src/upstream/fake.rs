//! An in-process [`Upstream`] for timing tests: each endpoint (by base
//! URL) answers from its own script of [`Reply`]s, on tokio time, with no
//! socket involved — so `start_paused` tests see exact budgets.

use bytes::Bytes;
use futures_util::{future::BoxFuture, stream};
use http::{HeaderMap, StatusCode, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use parking_lot::Mutex;
use std::{
    collections::{HashMap, VecDeque},
    time::Duration,
};

use super::{
    Upstream,
    executor::{Endpoint, TransportError, UpstreamResponse},
};

/// One step of a scripted body.
#[derive(Clone, Debug)]
pub enum Step {
    Send(&'static str),
    Wait(Duration),
    /// The connection breaks.
    Break,
    /// Nothing more, ever (the connection stays open).
    Silence,
}

/// How an endpoint answers one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// Response headers never come.
    Never,
    /// A status with a body that follows `steps`; the body ends after them.
    Answer(u16, Vec<Step>),
}

#[derive(Default)]
pub struct FakeUpstream {
    script: Mutex<HashMap<String, VecDeque<Reply>>>,
    calls: Mutex<Vec<String>>,
}

impl FakeUpstream {
    /// Queues replies for the endpoint at `base_url`; when its queue is
    /// empty it answers [`Reply::Never`].
    pub fn script(&self, base_url: &str, replies: impl IntoIterator<Item = Reply>) {
        self.script.lock().entry(base_url.to_owned()).or_default().extend(replies);
    }

    /// The base URL of every call so far, in order.
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().clone()
    }

    fn next(&self, endpoint: &Endpoint) -> Reply {
        let key = endpoint.base_url.as_str().to_owned();
        self.calls.lock().push(key.clone());
        self.script.lock().get_mut(&key).and_then(VecDeque::pop_front).unwrap_or(Reply::Never)
    }
}

fn answer(status: u16, steps: Vec<Step>) -> UpstreamResponse {
    let chunks = stream::unfold(steps.into_iter(), |mut steps| async move {
        loop {
            match steps.next()? {
                Step::Send(text) => return Some((Ok(Frame::data(Bytes::from_static(text.as_bytes()))), steps)),
                Step::Wait(d) => tokio::time::sleep(d).await,
                Step::Break => return Some((Err("connection reset by peer".to_owned()), steps)),
                Step::Silence => std::future::pending::<()>().await,
            }
        }
    });
    let mut response = http::Response::new(BodyExt::boxed(StreamBody::new(chunks)));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/event-stream"));
    UpstreamResponse::new(response)
}

impl Upstream for FakeUpstream {
    fn post<'a>(
        &'a self,
        endpoint: &'a Endpoint,
        _path: &'a str,
        _body: Bytes,
        _stream: bool,
        _extra: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<UpstreamResponse, TransportError>> {
        let reply = self.next(endpoint);
        Box::pin(async move {
            match reply {
                Reply::Never => std::future::pending().await,
                Reply::Answer(status, steps) => Ok(answer(status, steps)),
            }
        })
    }

    fn get<'a>(
        &'a self,
        endpoint: &'a Endpoint,
        path: &'a str,
    ) -> BoxFuture<'a, Result<UpstreamResponse, TransportError>> {
        self.post(endpoint, path, Bytes::new(), false, &HEADERS)
    }
}

static HEADERS: std::sync::LazyLock<HeaderMap> = std::sync::LazyLock::new(HeaderMap::new);
