//! An upload: a document written in pieces by one role, then sealed.
//!
//! The first `upload_chunk` record creates the upload (its id is that
//! record's id, its author the uploader); later chunks name it and append
//! their text; a `seal` fixes the bytes and publishes their digest. The state
//! of an upload is a pure function of its own records, folded in the total
//! order by [`Upload::fold`], so any arrival order gives the same state.
//!
//! One function, [`check`], decides every record that acts on an existing
//! upload, for both sides of a write: the app calls it before writing (a
//! refusal is the tool's answer and nothing is written) and the fold calls it
//! at the record's place in the order (a refusal there is kept as a conflict
//! and changes nothing). This module must not touch files, SQLite or the clock.

use sha2::{Digest as _, Sha256};

use super::hlc::{Hlc, OrderKey};
use super::ids::{RecordId, Role};
use super::message::{Applied, Conflict};
use super::op::{Op, Seal, UploadChunk};
use super::rules::{Refusal, Verdict};

/// The most one upload holds, in bytes of UTF-8 (8 MiB).
pub const UPLOAD_MAX_BYTES: u64 = 8 * 1024 * 1024;
/// The most one chunk record carries, in bytes of UTF-8 (256 KiB).
pub const CHUNK_MAX_BYTES: usize = 256 * 1024;
/// The longest label, in characters.
pub const LABEL_MAX: usize = 80;

/// The seal of an upload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sealed {
    /// The seal record.
    pub key: OrderKey,
}

/// The derived state of one upload.
#[derive(Clone, Debug)]
pub struct Upload {
    /// Id of the first chunk record.
    pub id: RecordId,
    /// The role that wrote the first chunk: the only one that appends and seals.
    pub uploader: Role,
    /// The label given with the first chunk.
    pub label: Option<String>,
    /// Creation stamp.
    pub created: Hlc,
    /// The chunk records whose text makes the document, in order.
    pub chunks: Vec<RecordId>,
    /// Length of the document so far, in bytes.
    pub length_bytes: u64,
    /// Length of the document so far, in characters.
    pub length_chars: u64,
    /// Hex sha256 of the document so far.
    pub sha256: String,
    /// The seal, once sealed.
    pub sealed: Option<Sealed>,
    /// Records that could not apply.
    pub conflicts: Vec<Conflict>,
    hasher: Sha256,
}

impl PartialEq for Upload {
    // The running hasher is summed up by `sha256`.
    fn eq(&self, o: &Self) -> bool {
        (
            &self.id,
            &self.uploader,
            &self.label,
            self.created,
            &self.chunks,
            self.length_bytes,
            self.length_chars,
            &self.sha256,
            &self.sealed,
            &self.conflicts,
        ) == (
            &o.id,
            &o.uploader,
            &o.label,
            o.created,
            &o.chunks,
            o.length_bytes,
            o.length_chars,
            &o.sha256,
            &o.sealed,
            &o.conflicts,
        )
    }
}

impl Eq for Upload {}

impl Upload {
    /// The state right after the first chunk `key` by `uploader`. Creation
    /// always applies: what it may hold was checked when it was written.
    pub fn create(key: OrderKey, uploader: &Role, first: &UploadChunk) -> Self {
        let mut u = Self {
            id: key.id,
            uploader: uploader.clone(),
            label: first.label.clone(),
            created: key.hlc,
            chunks: Vec::new(),
            length_bytes: 0,
            length_chars: 0,
            sha256: String::new(),
            sealed: None,
            conflicts: Vec::new(),
            hasher: Sha256::new(),
        };
        u.append(key.id, &first.text);
        u
    }

    /// Folds an upload from its first chunk and the records that name it.
    /// The records are sorted here, so any arrival order gives the same state.
    pub fn fold<'a>(
        first_key: OrderKey,
        uploader: &Role,
        first: &UploadChunk,
        ops: impl IntoIterator<Item = Applied<'a>>,
    ) -> Self {
        let mut ops: Vec<Applied<'a>> = ops.into_iter().collect();
        ops.sort_by_key(|a| a.key);
        ops.dedup_by_key(|a| a.key);
        let mut u = Self::create(first_key, uploader, first);
        for op in ops.into_iter().filter(|a| a.key != first_key) {
            u.apply(op);
        }
        u
    }

    /// Applies one record that names this upload, at its place in the order:
    /// what [`check`] refuses is kept as a conflict and changes nothing.
    pub fn apply(&mut self, rec: Applied<'_>) {
        match check(self, rec.role, rec.op) {
            Ok(Verdict::Apply) => match rec.op {
                Op::UploadChunk(c) => self.append(rec.key.id, &c.text),
                Op::Seal(_) => self.sealed = Some(Sealed { key: rec.key }),
                _ => {}
            },
            Ok(Verdict::Noop) => {}
            Err(refusal) => self.conflicts.push(Conflict {
                record: rec.key,
                role: rec.role.clone(),
                op: rec.op.name(),
                reason: refusal.to_string(),
                winner: self.sealed.as_ref().map(|s| s.key.id),
            }),
        }
    }

    /// The seal that fixes the document as it stands.
    pub fn seal_op(&self) -> Seal {
        Seal {
            upload: self.id,
            sha256: self.sha256.clone(),
            length_bytes: self.length_bytes,
            length_chars: self.length_chars,
            chunks: self.chunks.len() as u64,
        }
    }

    fn append(&mut self, record: RecordId, text: &str) {
        self.chunks.push(record);
        self.length_bytes += text.len() as u64;
        self.length_chars += text.chars().count() as u64;
        self.hasher.update(text.as_bytes());
        self.sha256 = hex::encode(self.hasher.clone().finalize());
    }
}

/// The refusal of an append that would take an upload over the cap.
pub fn over_cap(id: &RecordId, now: u64, would_be: u64) -> String {
    format!(
        "upload {} holds {now} bytes; this append would make it {would_be} bytes, over the limit \
         of {UPLOAD_MAX_BYTES} bytes (8 MiB). Nothing was appended — start another upload for \
         the rest",
        id.short()
    )
}

/// Decides `op` (an appended chunk or a seal) by `role` on upload `u`.
pub fn check(u: &Upload, role: &Role, op: &Op) -> Result<Verdict, Refusal> {
    let id = u.id.short();
    if role != &u.uploader {
        return Err(Refusal::Permission(format!(
            "upload {id} belongs to '{}', not '{role}' — only its uploader appends to it or seals \
             it; start your own upload with upload_content (no upload_id)",
            u.uploader
        )));
    }
    match op {
        Op::UploadChunk(c) => {
            if u.sealed.is_some() {
                return Err(Refusal::Value(format!(
                    "upload {id} is sealed — its bytes never change again; start a new upload \
                     with upload_content (no upload_id)"
                )));
            }
            if c.text.is_empty() {
                return Err(Refusal::Value(
                    "'text' is required and must not be empty; pass the next part of the document"
                        .to_owned(),
                ));
            }
            if c.text.len() > CHUNK_MAX_BYTES {
                return Err(Refusal::Value(format!(
                    "a chunk of upload {id} holds at most {CHUNK_MAX_BYTES} bytes (got {}); split \
                     the text over several upload_content calls",
                    c.text.len()
                )));
            }
            let total = u.length_bytes + c.text.len() as u64;
            if total > UPLOAD_MAX_BYTES {
                return Err(Refusal::Value(over_cap(&u.id, u.length_bytes, total)));
            }
            Ok(Verdict::Apply)
        }
        Op::Seal(s) => {
            let mine = u.seal_op();
            if u.sealed.is_some() {
                // Two devices of the uploader sealing the same bytes meant the same thing.
                return if *s == mine {
                    Ok(Verdict::Noop)
                } else {
                    Err(Refusal::Value(format!(
                        "upload {id} is already sealed with other values; get_content shows the \
                         seal that stands"
                    )))
                };
            }
            if *s != mine {
                return Err(Refusal::Value(format!(
                    "the seal of upload {id} does not match its chunks: it names {} chunks, {} \
                     bytes, {} characters, sha256 {}; the chunks before it hold {}, {}, {}, {}",
                    s.chunks,
                    s.length_bytes,
                    s.length_chars,
                    s.sha256,
                    mine.chunks,
                    mine.length_bytes,
                    mine.length_chars,
                    mine.sha256
                )));
            }
            Ok(Verdict::Apply)
        }
        _ => Err(Refusal::Value(
            "this op does not act on an upload".to_owned(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::sha256_hex;

    fn role(s: &str) -> Role {
        Role::new(s).unwrap()
    }

    fn key(ms: i64, tag: &[u8]) -> OrderKey {
        OrderKey {
            hlc: Hlc(ms, 0),
            id: RecordId::of_body(tag),
        }
    }

    fn first(text: &str) -> UploadChunk {
        UploadChunk {
            upload: None,
            text: text.into(),
            label: Some("doc".into()),
        }
    }

    fn more(id: RecordId, text: &str) -> Op {
        Op::UploadChunk(UploadChunk {
            upload: Some(id),
            text: text.into(),
            label: None,
        })
    }

    #[test]
    fn chunks_append_in_order_and_a_matching_seal_seals() {
        let a = role("a");
        let k0 = key(1, b"c0");
        let c1 = more(k0.id, "é, ");
        let mut u = Upload::create(k0, &a, &first("hello "));
        u.apply(Applied {
            key: key(2, b"c1"),
            role: &a,
            op: &c1,
        });
        assert_eq!(u.sha256, sha256_hex("hello é, ".as_bytes()));
        assert_eq!((u.length_bytes, u.length_chars), (10, 9));
        let seal = Op::Seal(u.seal_op());
        u.apply(Applied {
            key: key(3, b"s"),
            role: &a,
            op: &seal,
        });
        assert_eq!(u.sealed, Some(Sealed { key: key(3, b"s") }));
        assert!(u.conflicts.is_empty());
        // Sealing the same bytes again is a repeat, not a conflict.
        u.apply(Applied {
            key: key(4, b"s2"),
            role: &a,
            op: &seal,
        });
        assert!(u.conflicts.is_empty());
        assert_eq!(u.sealed, Some(Sealed { key: key(3, b"s") }));
    }

    #[test]
    fn another_role_a_chunk_after_the_seal_and_a_wrong_seal_conflict() {
        let (a, b) = (role("a"), role("b"));
        let k0 = key(1, b"c0");
        let u0 = Upload::create(k0, &a, &first("x"));
        let mut wrong = u0.seal_op();
        wrong.length_bytes = 2;
        let wrong = Op::Seal(wrong);
        let right = Op::Seal(u0.seal_op());
        let stranger = more(k0.id, "y");
        let late = more(k0.id, "z");
        let u = Upload::fold(
            k0,
            &a,
            &first("x"),
            [
                Applied {
                    key: key(2, b"b"),
                    role: &b,
                    op: &stranger,
                },
                Applied {
                    key: key(3, b"w"),
                    role: &a,
                    op: &wrong,
                },
                Applied {
                    key: key(4, b"r"),
                    role: &a,
                    op: &right,
                },
                Applied {
                    key: key(5, b"z"),
                    role: &a,
                    op: &late,
                },
            ],
        );
        assert_eq!(u.sha256, sha256_hex(b"x"));
        assert_eq!(u.sealed, Some(Sealed { key: key(4, b"r") }));
        let why: Vec<(&str, &str)> = u
            .conflicts
            .iter()
            .map(|c| (c.role.as_str(), c.op))
            .collect();
        assert_eq!(
            why,
            [("b", "upload_chunk"), ("a", "seal"), ("a", "upload_chunk")]
        );
        assert!(u.conflicts[0].reason.contains("belongs to 'a'"));
        assert!(u.conflicts[1].reason.contains("does not match its chunks"));
        assert!(u.conflicts[2].reason.contains("is sealed"));
        assert_eq!(u.conflicts[2].winner, Some(key(4, b"r").id));
    }

    #[test]
    fn the_cap_is_counted_in_bytes() {
        let a = role("a");
        let k0 = key(1, b"c0");
        // 'é' is two bytes: half the cap in characters fills it in bytes.
        let mut u = Upload::create(k0, &a, &first("x"));
        u.length_bytes = UPLOAD_MAX_BYTES - 2;
        let fits = more(k0.id, "é");
        assert_eq!(check(&u, &a, &fits), Ok(Verdict::Apply));
        let over = more(k0.id, "éa");
        let Err(Refusal::Value(why)) = check(&u, &a, &over) else {
            panic!("over the cap must be refused");
        };
        assert!(
            why.contains(&format!("make it {} bytes", UPLOAD_MAX_BYTES + 1)),
            "{why}"
        );
        assert!(why.contains("Nothing was appended"), "{why}");
    }

    #[test]
    fn any_arrival_order_gives_the_same_state() {
        let a = role("a");
        let k0 = key(1, b"c0");
        let parts: Vec<(OrderKey, Op)> = (0..6)
            .map(|i| {
                (
                    key(2 + i, format!("c{i}").as_bytes()),
                    more(k0.id, &format!("part {i}; ")),
                )
            })
            .collect();
        let whole: String = std::iter::once("start; ".to_owned())
            .chain((0..6).map(|i| format!("part {i}; ")))
            .collect();
        let mut expected = Upload::create(k0, &a, &first("start; "));
        for (k, op) in &parts {
            expected.apply(Applied {
                key: *k,
                role: &a,
                op,
            });
        }
        let seal = Op::Seal(expected.seal_op());
        let mut recs: Vec<Applied<'_>> = parts
            .iter()
            .map(|(k, op)| Applied {
                key: *k,
                role: &a,
                op,
            })
            .collect();
        recs.push(Applied {
            key: key(50, b"seal"),
            role: &a,
            op: &seal,
        });
        let reference = Upload::fold(k0, &a, &first("start; "), recs.clone());
        assert_eq!(reference.sha256, sha256_hex(whole.as_bytes()));
        assert!(reference.sealed.is_some());
        // Every rotation and the reverse, with a duplicate thrown in.
        for shift in 0..recs.len() {
            let mut order = recs.clone();
            order.rotate_left(shift);
            order.push(order[0]);
            assert_eq!(
                Upload::fold(k0, &a, &first("start; "), order.clone()),
                reference
            );
            order.reverse();
            assert_eq!(Upload::fold(k0, &a, &first("start; "), order), reference);
        }
    }
}
