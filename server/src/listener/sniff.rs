//! Which HTTP version a client speaks, told from its first bytes.
//!
//! hyper-util's `auto` builder tells it too, but hands the bytes it read
//! back to hyper in a read of their own: hyper's first read then gets 24
//! bytes, its second finds less than its 8 KB read size left in the buffer
//! and doubles the buffer, so every connection kept a 16 KB read buffer
//! for its whole life. Here the sniffed bytes and whatever else the socket
//! already holds reach hyper in one read, so a request that fits in 8 KB
//! leaves the buffer at 8 KB.

use std::{
    io,
    pin::Pin,
    task::{Context, Poll},
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// What an HTTP/2 client sends first (RFC 9113 §3.4).
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Http1,
    Http2,
}

/// A socket whose first bytes were read to tell its version; they are
/// read again first.
pub struct Sniffed<T> {
    io: T,
    prefix: [u8; H2_PREFACE.len()],
    /// `prefix[at..len]` is still to be read.
    at: usize,
    len: usize,
    /// An error of the read that followed the prefix, for the next read.
    error: Option<io::Error>,
}

/// Reads until the bytes are not (or are all of) HTTP/2's preface, or
/// the client stops sending (an empty connection is HTTP/1's to close).
pub async fn sniff<T: AsyncRead + Unpin>(mut io: T) -> io::Result<(Version, Sniffed<T>)> {
    let mut prefix = [0u8; H2_PREFACE.len()];
    let mut len = 0;
    let version = loop {
        let n = io.read(&mut prefix[len..]).await?;
        let before = len;
        len += n;
        if n == 0 || prefix[before..len] != H2_PREFACE[before..len] {
            break Version::Http1;
        }
        if len == H2_PREFACE.len() {
            break Version::Http2;
        }
    };
    Ok((version, Sniffed { io, prefix, at: 0, len, error: None }))
}

impl<T: AsyncRead + Unpin> AsyncRead for Sniffed<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(e) = this.error.take() {
            return Poll::Ready(Err(e));
        }
        if this.at == this.len {
            return Pin::new(&mut this.io).poll_read(cx, buf);
        }
        let n = (this.len - this.at).min(buf.remaining());
        buf.put_slice(&this.prefix[this.at..this.at + n]);
        this.at += n;
        if buf.remaining() > 0 {
            // The rest of what the socket holds, in the same read; nothing
            // more yet is fine, the prefix is this read's answer.
            if let Poll::Ready(Err(e)) = Pin::new(&mut this.io).poll_read(cx, buf) {
                this.error = Some(e);
            }
        }
        Poll::Ready(Ok(()))
    }
}

crate::forward_writes::forward_writes!(AsyncWrite, [T: AsyncWrite + Unpin] Sniffed<T>, io);

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket that has `chunks` ready, one per read, then ends.
    struct Chunks(std::collections::VecDeque<&'static [u8]>);

    impl AsyncRead for Chunks {
        fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            if let Some(chunk) = self.0.pop_front() {
                let n = chunk.len().min(buf.remaining());
                buf.put_slice(&chunk[..n]);
                if n < chunk.len() {
                    self.0.push_front(&chunk[n..]);
                }
            }
            Poll::Ready(Ok(()))
        }
    }

    async fn sniffed(chunks: &[&'static [u8]]) -> (Version, Vec<usize>, Vec<u8>) {
        let (version, mut io) = sniff(Chunks(chunks.iter().copied().collect())).await.unwrap();
        // The size of each read hyper would see, and all it would read.
        let (mut sizes, mut all) = (Vec::new(), Vec::new());
        let mut buf = [0u8; 8192];
        loop {
            let n = io.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            sizes.push(n);
            all.extend_from_slice(&buf[..n]);
        }
        (version, sizes, all)
    }

    #[tokio::test]
    async fn an_http1_request_reaches_hyper_whole_in_one_read() {
        let request: &[u8] = b"POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\ncontent-length: 2\r\n\r\n{}";
        let (version, sizes, all) = sniffed(&[&request[..24], &request[24..]]).await;
        assert_eq!(version, Version::Http1);
        assert_eq!(sizes, [request.len()]);
        assert_eq!(all, request);
    }

    #[tokio::test]
    async fn the_http2_preface_is_http2_even_in_pieces() {
        let (version, _, all) = sniffed(&[b"PRI * HT", b"TP/2.0\r\n\r\nSM\r\n\r\n", b"frames"]).await;
        assert_eq!(version, Version::Http2);
        assert_eq!(all, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\nframes");
    }

    #[tokio::test]
    async fn a_method_that_starts_like_the_preface_is_http1() {
        let (version, _, all) = sniffed(&[b"P", b"UT /x HTTP/1.1\r\n\r\n"]).await;
        assert_eq!(version, Version::Http1);
        assert_eq!(all, b"PUT /x HTTP/1.1\r\n\r\n");
    }

    #[tokio::test]
    async fn a_silent_connection_is_http1_with_nothing_to_read() {
        let (version, sizes, _) = sniffed(&[]).await;
        assert_eq!(version, Version::Http1);
        assert!(sizes.is_empty());
    }
}
