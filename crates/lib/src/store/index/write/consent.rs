//! The pins and pin conflicts as the consent fold leaves them.
//!
//! Owns every write on `pins` and `pin_conflicts`; must not fold anything
//! (`core::consent` does, `store::fold::consent` picks the scope).

use std::collections::BTreeSet;

use rusqlite::params;

use super::super::Index;
use super::{IndexTx, ShownBody};
use crate::core::consent::Consent;
use crate::core::op::BodyRef;
use crate::store::error::{SqlContext as _, StoreResult};

impl IndexTx<'_> {
    /// Rewrites the pins and pin conflicts of `keys`; `body_of` tells what
    /// a version's `body` and `body_ref` show (`store::fold::body::body_of`).
    pub fn write_pins<B: ShownBody>(
        &self,
        c: &Consent,
        keys: &BTreeSet<String>,
        body_of: impl Fn(&Index, &str, Option<&BodyRef>) -> StoreResult<B>,
    ) -> StoreResult<()> {
        let index = self;
        let p = index.path();
        let conn = index.conn();
        for key in keys {
            conn.prepare_cached("DELETE FROM pins WHERE key = ?1")
                .and_then(|mut st| st.execute([key]))
                .db(p)?;
            conn.prepare_cached("DELETE FROM pin_conflicts WHERE key = ?1")
                .and_then(|mut st| st.execute([key]))
                .db(p)?;
        }
        let mut ins = conn
            .prepare_cached(
                "INSERT INTO pins(record, key, pos, title, version, body, body_ref, approved_by, \
                 role, ms, sha256, bytes, chars) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )
            .db(p)?;
        for (key, versions) in &c.pins {
            for (pos, v) in versions.iter().enumerate() {
                let s = &v.set;
                let body = body_of(index, &s.body, s.body_ref.as_ref())?;
                ins.execute(params![
                    v.key.id.hex(),
                    key,
                    pos as i64,
                    s.title,
                    s.version,
                    body.text(index)?,
                    s.body_ref
                        .as_ref()
                        .map(|r| serde_json::to_string(r).expect("body_ref serializes")),
                    s.approved_by.map(|a| a.hex()),
                    v.role.as_str(),
                    v.key.hlc.ms(),
                    body.sha256(),
                    body.bytes(),
                    body.chars(),
                ])
                .db(p)?;
            }
        }
        let mut ins = conn
            .prepare_cached(
                "INSERT INTO pin_conflicts(record, key, role, reason, winner, ms, c) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .db(p)?;
        for pc in &c.conflicts {
            let k = &pc.conflict;
            ins.execute(params![
                k.record.id.hex(),
                pc.pin_key,
                k.role.as_str(),
                k.reason,
                k.winner.map(|w| w.hex()),
                k.record.hlc.ms(),
                k.record.hlc.1,
            ])
            .db(p)?;
        }
        Ok(())
    }
}
