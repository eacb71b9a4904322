//! The socket wrappers change how a socket reads (timeouts, a replayed
//! prefix) or what it is (plain or TLS); their writes pass through
//! unchanged. This writes that pass-through once.

/// Implements `$trait` — tokio's `AsyncWrite` or hyper's `rt::Write`,
/// which share their methods — for `$ty` by forwarding every call to its
/// `Unpin` field `$field`. Generic parameters go in brackets first.
macro_rules! forward_writes {
    ($trait:path, [$($generics:tt)*] $ty:ty, $field:ident) => {
        impl<$($generics)*> $trait for $ty {
            fn poll_write(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                std::pin::Pin::new(&mut self.$field).poll_write(cx, buf)
            }

            fn poll_flush(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut self.$field).poll_flush(cx)
            }

            fn poll_shutdown(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut self.$field).poll_shutdown(cx)
            }

            fn is_write_vectored(&self) -> bool {
                self.$field.is_write_vectored()
            }

            fn poll_write_vectored(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                std::pin::Pin::new(&mut self.$field).poll_write_vectored(cx, bufs)
            }
        }
    };
}

pub(crate) use forward_writes;
