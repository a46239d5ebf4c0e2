//! open_obligations and ready_work: what a role owes, and what it can start.

use super::refusal::{AppResult, check_limit};
use super::rows::{
    DatedListing, FieldsArg, Listing, MESSAGE_FIELDS, MESSAGE_HEADERS, MessageRow, MessageView,
    Projected, Projection, listing, project,
};
use super::session::Session;
use crate::core::ids::Role;
use crate::core::timestamp::format_rfc3339;
use crate::store::channel::now_ms;
use crate::store::index::DebtPage;

fn debts(s: &mut Session, role: &str, page: DebtPage, limit: usize) -> AppResult<Vec<MessageRow>> {
    s.catch_up()?;
    Ok(s.index().debts_page(role, page, limit)?)
}

/// What open_obligations was asked for: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct ObligationsRequest {
    /// Whose debts (default: yours).
    #[serde(default)]
    pub to_role: Option<String>,
    /// How many of the newest, and which fields.
    #[serde(flatten)]
    pub page: super::request::Page<{ super::request::LIMIT_HUNDRED }>,
}

/// Open debts addressed to `to_role` (default: the caller), newest first.
pub fn open_obligations(
    s: &mut Session,
    to_role: Option<&str>,
    limit: i64,
    fields: Option<&FieldsArg>,
) -> AppResult<DatedListing<Projected<MessageView>>> {
    let limit = check_limit(limit)?;
    let proj = Projection::parse(fields, MESSAGE_FIELDS, MESSAGE_HEADERS)?;
    let role = match to_role {
        Some(r) => r.trim().to_owned(),
        None => s.role()?.to_string(),
    };
    let mut rows = debts(s, &role, DebtPage::Open, limit)?;
    let overflow = rows.len() > limit;
    rows.truncate(limit);
    let now = now_ms();
    let viewer = Role::new(&role).ok();
    let out = rows
        .into_iter()
        .map(|r| project(proj.as_ref(), MessageView::aged(r, viewer.as_ref(), now)))
        .collect();
    Ok(DatedListing {
        listing: listing(
            out,
            limit,
            overflow,
            "more debts are open; raise 'limit' (at most 1000)",
        ),
        generated_at: format_rfc3339(now),
    })
}

/// The caller's open debts it can start now, oldest first: a task blocked on
/// a live blocker (or blocked without one) is left out; one whose blocker was
/// resolved or deleted is in, because resuming it is the caller's move.
pub fn ready_work(
    s: &mut Session,
    limit: i64,
    fields: Option<&FieldsArg>,
) -> AppResult<Listing<Projected<MessageView>>> {
    let me = s.role()?;
    let limit = check_limit(limit)?;
    let proj = Projection::parse(fields, MESSAGE_FIELDS, MESSAGE_HEADERS)?;
    let mut rows = debts(s, me.as_str(), DebtPage::Ready, limit)?;
    let overflow = rows.len() > limit;
    rows.truncate(limit);
    let now = now_ms();
    let out = rows
        .into_iter()
        .map(|r| project(proj.as_ref(), MessageView::aged(r, Some(&me), now)))
        .collect();
    Ok(listing(
        out,
        limit,
        overflow,
        "more work is ready; raise 'limit' (at most 1000)",
    ))
}
