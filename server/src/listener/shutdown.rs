//! The end of the shutdown grace: the listener announces it, open streams
//! wait for it and then finish with their protocol's error event.

use tokio::sync::watch;

/// The end of the shutdown grace, as open streams wait for it.
pub struct Shutdown(watch::Sender<bool>);

impl Default for Shutdown {
    fn default() -> Self {
        Self(watch::channel(false).0)
    }
}

impl Shutdown {
    /// Tells every open stream that the grace period is over.
    pub fn grace_over(&self) {
        self.0.send_replace(true);
    }

    /// Whether the grace period is over: what is cut now is cut by the shutdown.
    pub fn is_over(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once the grace period is over.
    pub fn wait(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut over = self.0.subscribe();
        async move {
            let _ = over.wait_for(|o| *o).await;
        }
    }
}
