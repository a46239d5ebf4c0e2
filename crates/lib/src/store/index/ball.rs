//! The ball (protocol §5.3): whose move a work status is.
//!
//! The one definition of the rule. A status is keyed to the role that made
//! the last move into it (`ws_by`, folded by `core` from the latest work
//! status event): `in_progress` and `blocked` are the mover's own, and a
//! blocked task whose blocker is gone ([`super::debts::BLOCKER_ALIVE`]) is
//! the mover's to resume; `needs_you` and `done_local` are every other
//! party's.

use super::Index;
use super::debts::{ADDRESSED, BLOCKER_ALIVE};
use super::rows::{FromRow, Named};
use crate::store::error::{StoreError, StoreResult};

/// Where the ball of a work status lies for the role asking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ball {
    /// `in_progress`, set by the role.
    InProgress,
    /// `blocked` by the role, on a live blocker or none.
    Blocked,
    /// `blocked` by the role on a blocker that is gone: its move.
    Unblocked,
    /// `needs_you`, set by another party.
    NeedsYou,
    /// `done_local`, declared by another party: waiting for `done`.
    AwaitingDone,
}

/// A message whose ball lies with the role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BallItem {
    /// Full id.
    pub id: String,
    /// Subject.
    pub topic: String,
    /// Where the ball lies.
    pub ball: Ball,
    /// The blocker (full id), for a blocked task.
    pub blocked_by: Option<String>,
}

/// The work statuses of role ?1's messages that may have the ball with it,
/// in order: `id, topic, work_status, ws_by, blocked_by, blocker gone, ms,
/// c`. Read from the covering index `messages_ws_to`.
pub(super) fn ball_sql() -> String {
    let party = format!("(m.from_role = ?1 OR {ADDRESSED})");
    // Work the role moved itself (in_progress, blocked) is found by its mover;
    // the ball passed to it (needs_you, done_local) by anyone else among its
    // messages. Only a blocked row asks whether its blocker is still alive.
    let cols = "m.id, m.topic, m.work_status, m.ws_by, m.blocked_by";
    format!(
        "SELECT {cols}, (m.blocked_by IS NOT NULL AND NOT {BLOCKER_ALIVE}) AS blocker_gone, m.ms, m.c \
         FROM messages m WHERE m.work_status IN ('in_progress', 'blocked') \
         AND m.deleted_ms IS NULL AND m.ws_by = ?1 \
         UNION ALL SELECT {cols}, 0, m.ms, m.c FROM messages m \
         WHERE m.work_status IN ('needs_you', 'done_local') \
         AND m.deleted_ms IS NULL AND m.ws_by IS NOT ?1 AND {party} ORDER BY 7, 8, 1"
    )
}

/// A row of [`ball_sql`].
struct WorkMove {
    id: String,
    topic: String,
    work_status: String,
    ws_by: Option<String>,
    blocked_by: Option<String>,
    blocker_gone: bool,
}

impl FromRow for WorkMove {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get("id")?,
            topic: r.get("topic")?,
            work_status: r.get("work_status")?,
            ws_by: r.get("ws_by")?,
            blocked_by: r.get("blocked_by")?,
            blocker_gone: r.get("blocker_gone")?,
        })
    }
}

impl Index {
    /// Hands each live message whose work status has the ball with `role`
    /// to `each`, in order, one row at a time.
    pub fn each_ball_with(&self, role: &str, mut each: impl FnMut(BallItem)) -> StoreResult<()> {
        self.each_row(&ball_sql(), [role], |w: WorkMove| {
            let mine = w.ws_by.as_deref() == Some(role);
            let ball = match w.work_status.as_str() {
                "in_progress" if mine => Ball::InProgress,
                "blocked" if mine && w.blocker_gone => Ball::Unblocked,
                "blocked" if mine => Ball::Blocked,
                "needs_you" if !mine => Ball::NeedsYou,
                "done_local" if !mine => Ball::AwaitingDone,
                _ => return Ok::<_, StoreError>(true),
            };
            let blocked_by = if w.work_status == "blocked" {
                w.blocked_by
            } else {
                None
            };
            each(BallItem {
                id: w.id,
                topic: w.topic,
                ball,
                blocked_by,
            });
            Ok(true)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ids::{RecordId, Role};
    use crate::core::op::{Note, Op, Send, WorkStatusMove};
    use crate::core::record::Record;
    use crate::core::vocab::WorkStatus;
    use crate::store::fold::message::refold_with;
    use crate::store::fold::records::fixture::put;

    /// A message from `a` to `b` at time `ms`, a debt or not, folded.
    fn send(ix: &Index, ms: i64, debt: bool) -> Record {
        let rec = put(
            ix,
            "a",
            1,
            ms,
            &Op::Send(Send {
                to: vec![Role::new("b").unwrap()],
                topic: format!("t{ms}"),
                body: "x".into(),
                action_required: debt,
                ..Send::default()
            }),
        );
        assert!(ix.write(|tx| refold_with(tx, &rec.id, None, None)).unwrap());
        rec
    }

    /// Where the ball of a task `b` blocked on `blocker` lies for `b`.
    fn ball_of_task_blocked_on(ix: &Index, blocker: RecordId) -> Ball {
        let task = send(ix, 10_000, true);
        put(
            ix,
            "b",
            1,
            11_000,
            &Op::WorkStatus(WorkStatusMove {
                id: task.id,
                value: WorkStatus::Blocked,
                blocked_by: Some(blocker),
                note: None,
                base: None,
            }),
        );
        assert!(
            ix.write(|tx| refold_with(tx, &task.id, None, None))
                .unwrap()
        );
        let mut items = Vec::new();
        ix.each_ball_with("b", |b| items.push(b)).unwrap();
        let item = items.iter().find(|i| i.id == task.id.hex()).unwrap();
        assert_eq!(item.blocked_by, Some(blocker.hex()));
        item.ball
    }

    #[test]
    fn a_task_stays_blocked_while_its_blocker_is_alive() {
        // An open debt is alive.
        let ix = Index::in_memory("c").unwrap();
        let blocker = send(&ix, 1_000, true);
        assert_eq!(ball_of_task_blocked_on(&ix, blocker.id), Ball::Blocked);
        // So is a message that is no debt (status NULL; protocol §3.14): only
        // another client can block on one, and nothing ever resolves it.
        let ix = Index::in_memory("c").unwrap();
        let blocker = send(&ix, 1_000, false);
        assert_eq!(ball_of_task_blocked_on(&ix, blocker.id), Ball::Blocked);
    }

    #[test]
    fn a_task_is_unblocked_once_its_blocker_is_resolved_or_absent() {
        let ix = Index::in_memory("c").unwrap();
        let blocker = send(&ix, 1_000, true);
        put(
            &ix,
            "b",
            2,
            2_000,
            &Op::Resolve(Note {
                id: blocker.id,
                note: None,
            }),
        );
        assert!(
            ix.write(|tx| refold_with(tx, &blocker.id, None, None))
                .unwrap()
        );
        assert_eq!(ball_of_task_blocked_on(&ix, blocker.id), Ball::Unblocked);
        // A blocker that is not here does not hold the task ("exists").
        let ix = Index::in_memory("c").unwrap();
        let nowhere = RecordId::parse(&"ab".repeat(32)).unwrap();
        assert_eq!(ball_of_task_blocked_on(&ix, nowhere), Ball::Unblocked);
    }
}
