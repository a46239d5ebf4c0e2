//! A server's session, which a stdio server opens on a thread of its own
//! while it answers the client's handshake.
//!
//! Opening a session (the index, the journals checked against the feeds'
//! tails, the role against the roster) takes about a millisecond, and
//! neither initialize nor tools/list needs it: only tool calls do. A stdio
//! server therefore starts the open first and answers the handshake
//! meanwhile, so that a client's time from spawn to its tool list no longer
//! includes it.
//!
//! Owns the handover from the opening thread to the calls, which wait for
//! it. Must not decide what a failed open means for the process: the server
//! ends with its error (`Server::serve_stdio`), as it did when the open came
//! before the handshake.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;

/// A value (the server's session) that is open, being opened, or failed to
/// open.
pub(super) struct Opening<T> {
    /// Set once, by the opening thread or at construction: the value, or
    /// what stopped it (the text calls that arrive meanwhile are refused
    /// with).
    outcome: OnceLock<Result<Mutex<T>, String>>,
    /// The open's own error, for the process to end with (taken once).
    error: Mutex<Option<anyhow::Error>>,
    /// The opening thread, joined by the first caller that waits.
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Set once `outcome` is, for [`Self::failed`] and [`Self::opened`].
    ended: tokio::sync::watch::Sender<bool>,
}

impl<T: Send + 'static> Opening<T> {
    /// A value already open.
    pub(super) fn open(value: T) -> Arc<Self> {
        let me = Self::empty();
        me.end(Ok(value));
        Arc::new(me)
    }

    /// Opens the value with `open` on a thread of its own. A panic in
    /// `open` is a failed open.
    pub(super) fn spawn(
        open: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
    ) -> std::io::Result<Arc<Self>> {
        let me = Arc::new(Self::empty());
        let theirs = Arc::clone(&me);
        let thread = std::thread::Builder::new()
            .name("session-open".into())
            .spawn(move || {
                let opened = std::panic::catch_unwind(AssertUnwindSafe(open))
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("opening the session panicked")));
                theirs.end(opened);
            })?;
        *me.thread.lock().unwrap_or_else(PoisonError::into_inner) = Some(thread);
        Ok(me)
    }

    fn empty() -> Self {
        Self {
            outcome: OnceLock::new(),
            error: Mutex::new(None),
            thread: Mutex::new(None),
            ended: tokio::sync::watch::Sender::new(false),
        }
    }

    fn end(&self, opened: anyhow::Result<T>) {
        let outcome = match opened {
            Ok(value) => Ok(Mutex::new(value)),
            Err(e) => {
                let why = format!("{e:#}");
                *self.error.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                Err(why)
            }
        };
        let _ = self.outcome.set(outcome);
        self.ended.send_replace(true);
    }

    /// The value if it is open, without waiting for it.
    pub(super) fn now(&self) -> Option<&Mutex<T>> {
        self.outcome.get().and_then(|o| o.as_ref().ok())
    }

    /// The value once the open has ended; what stopped it if it failed.
    pub(super) fn wait(&self) -> Result<&Mutex<T>, &str> {
        if self.outcome.get().is_none() {
            // Held while joining: a second caller waits here for the first.
            let mut thread = self.thread.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(t) = thread.take() {
                let _ = t.join();
            }
        }
        match self
            .outcome
            .get()
            .expect("the opening thread sets the outcome before it ends")
        {
            Ok(value) => Ok(value),
            Err(why) => Err(why),
        }
    }

    /// Resolves once the open has failed; never if it succeeded.
    pub(super) async fn failed(&self) {
        if self.opened().await {
            std::future::pending::<()>().await;
        }
    }

    /// Resolves once the open has ended: whether it succeeded.
    pub(super) async fn opened(&self) -> bool {
        let mut ended = self.ended.subscribe();
        // The sender lives as long as `self`: the wait ends only with the open.
        let _ = ended.wait_for(|done| *done).await;
        self.now().is_some()
    }

    /// Waits for the open to end and returns its error if it failed: the
    /// error itself the first time, its text after that.
    pub(super) fn error(&self) -> Option<anyhow::Error> {
        let why = self.wait().err()?;
        let taken = self
            .error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        Some(taken.unwrap_or_else(|| anyhow::anyhow!("{why}")))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("no such role")]
    struct NoSuchRole;

    #[test]
    fn calls_wait_for_the_open_and_then_share_its_value() {
        let (go, gate) = mpsc::channel::<()>();
        let opening = Opening::spawn(move || {
            gate.recv().unwrap();
            Ok(7u32)
        })
        .unwrap();
        assert!(opening.now().is_none(), "still opening");
        let waiter = {
            let opening = Arc::clone(&opening);
            std::thread::spawn(move || *opening.wait().unwrap().lock().unwrap())
        };
        std::thread::sleep(Duration::from_millis(20));
        assert!(!waiter.is_finished(), "a call waits for the open");
        go.send(()).unwrap();
        assert_eq!(waiter.join().unwrap(), 7);
        assert_eq!(*opening.wait().unwrap().lock().unwrap(), 7);
        assert_eq!(*opening.now().unwrap().lock().unwrap(), 7);
    }

    #[tokio::test]
    async fn a_failed_open_refuses_calls_and_hands_its_own_error_to_the_server_once() {
        let opening = Opening::<u32>::spawn(|| Err(NoSuchRole.into())).unwrap();
        opening.failed().await;
        assert_eq!(opening.wait().unwrap_err(), "no such role");
        assert!(opening.now().is_none());
        let first = opening.error().unwrap();
        assert!(first.downcast_ref::<NoSuchRole>().is_some(), "{first:?}");
        let again = opening.error().unwrap();
        assert_eq!(again.to_string(), "no such role");
    }

    #[test]
    fn a_panicking_open_is_a_failed_one() {
        let opening = Opening::<u32>::spawn(|| panic!("boom")).unwrap();
        assert_eq!(opening.wait().unwrap_err(), "opening the session panicked");
        assert!(opening.error().is_some());
    }

    #[tokio::test]
    async fn background_work_waits_for_the_open_and_learns_how_it_ended() {
        let (go, gate) = mpsc::channel::<()>();
        let opening = Opening::spawn(move || {
            gate.recv().unwrap();
            Ok(3u32)
        })
        .unwrap();
        let waiter = tokio::spawn({
            let opening = Arc::clone(&opening);
            async move { opening.opened().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "still opening");
        go.send(()).unwrap();
        assert!(waiter.await.unwrap(), "opened");
        assert!(Opening::open(1u32).opened().await, "open from the start");
        let failed = Opening::<u32>::spawn(|| Err(NoSuchRole.into())).unwrap();
        assert!(!failed.opened().await, "a failed open is no open");
    }

    #[tokio::test]
    async fn a_successful_open_never_ends_the_server() {
        for opening in [Opening::open(1u32), Opening::spawn(|| Ok(2u32)).unwrap()] {
            let failed = tokio::time::timeout(Duration::from_millis(50), opening.failed()).await;
            assert!(failed.is_err(), "an open session is no failure");
            assert!(opening.error().is_none());
        }
    }
}
