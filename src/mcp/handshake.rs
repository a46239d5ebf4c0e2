//! The client's handshake, as a stdio server's background work waits for
//! it: over once the client has had two answers (initialize, then its
//! first request, usually tools/list), or after [`AT_MOST`] whatever the
//! client did.
//!
//! Owns only that moment; must not decide what waits for it (`serve_stdio`
//! holds back the first sync round and the folder watcher). On a machine of
//! two cores, a sync round (opening the index, a heartbeat, a `git`
//! process) and the watcher's start took a core from the answers a client
//! waits for at start; a client that starts several servers at once waits
//! for every one of them.

use std::time::Duration;

use tokio::sync::watch;

/// Answers that end the handshake: initialize's, then the first request's.
const ANSWERS: u32 = 2;

/// How long background work waits for a client that never finishes its
/// handshake (one that sends nothing, or only initialize).
pub const AT_MOST: Duration = Duration::from_secs(2);

/// The answers written to the client so far, counted by the transport.
pub struct Handshake {
    answers: watch::Sender<u32>,
}

impl Default for Handshake {
    fn default() -> Self {
        Self {
            answers: watch::Sender::new(0),
        }
    }
}

impl Handshake {
    /// Counts one answer written to the client.
    pub fn answered(&self) {
        self.answers.send_modify(|n| *n = n.saturating_add(1));
    }

    /// Returns once the handshake is over, or after `at_most`.
    pub async fn over(&self, at_most: Duration) {
        let mut answers = self.answers.subscribe();
        // The sender lives as long as `self`, so the wait cannot fail: only
        // the time can end it early.
        let _ = tokio::time::timeout(at_most, answers.wait_for(|n| *n >= ANSWERS)).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use super::*;

    #[tokio::test]
    async fn one_answer_is_not_the_handshake_and_two_are() {
        let h = Handshake::default();
        h.answered();
        let t = Instant::now();
        h.over(Duration::from_millis(200)).await;
        assert!(
            t.elapsed() >= Duration::from_millis(200),
            "after one answer the wait runs its whole time: {:?}",
            t.elapsed()
        );
        h.answered();
        let t = Instant::now();
        h.over(Duration::from_secs(60)).await;
        h.answered();
        h.over(Duration::from_secs(60)).await;
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "two answers end it, and it stays over: {:?}",
            t.elapsed()
        );
    }

    #[tokio::test]
    async fn a_waiter_from_before_the_answers_is_woken_by_them() {
        let h = Arc::new(Handshake::default());
        let waiter = tokio::spawn({
            let h = Arc::clone(&h);
            async move {
                let t = Instant::now();
                h.over(Duration::from_secs(60)).await;
                t.elapsed()
            }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "nothing answered yet");
        h.answered();
        h.answered();
        let waited = waiter.await.unwrap();
        assert!(
            waited < Duration::from_secs(30),
            "woken by the answers, not by the time: {waited:?}"
        );
    }
}
