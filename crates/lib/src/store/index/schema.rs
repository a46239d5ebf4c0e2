//! The index's schema: every table and index in one batch, the tables a
//! rebuild empties, and the stamp that tells an index file already holds
//! this batch.
//!
//! Owns the text of the schema; must not open connections or write rows
//! (`Index::open` runs the batch, `write::derived` empties the tables).

/// Every table and index of the index file. The last table, `claims`
/// (invitation claims, derived: emptied by a rebuild like every folded
/// table), ends the text without a comment of its own: the batch hashes to
/// the stamp it had while `store::fold::invitation` kept it, so index files made
/// before are not set up again.
pub(super) const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- Ingest cursors, one per segment file (relative path).
CREATE TABLE IF NOT EXISTS files(
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    offset INTEGER NOT NULL, tail_len INTEGER NOT NULL, tail_hash TEXT NOT NULL);
-- Every feed seen: its key (from the owner's admit), role and chain head.
CREATE TABLE IF NOT EXISTS feeds(
    feed TEXT PRIMARY KEY, role TEXT NOT NULL, pubkey TEXT, admitted_by TEXT,
    head_seq INTEGER NOT NULL DEFAULT 0, head_id TEXT, head_ms INTEGER, head_c INTEGER,
    frozen TEXT);
-- Owner-signed key replacements (a lost key): from `from_seq` on, `feed` is signed by `pubkey`.
CREATE TABLE IF NOT EXISTS key_changes(
    feed TEXT NOT NULL, from_seq INTEGER NOT NULL, pubkey TEXT NOT NULL,
    PRIMARY KEY(feed, from_seq));
-- Accepted records, verified and chained. n is the local ingest sequence.
CREATE TABLE IF NOT EXISTS records(
    n INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, feed TEXT NOT NULL, seq INTEGER NOT NULL,
    ms INTEGER NOT NULL, c INTEGER NOT NULL, op TEXT NOT NULL, role TEXT NOT NULL,
    body TEXT NOT NULL, sig TEXT NOT NULL, UNIQUE(feed, seq));
CREATE INDEX IF NOT EXISTS records_order ON records(ms, c);
-- The records that set a feed's key, which a writer reads once per session
-- (a feed's own are otherwise found only by reading all its rows). The two
-- partial indexes say their ops as equalities joined by OR, never as an IN
-- list: SQLite tests a list of three or more against a temporary b-tree it
-- opens and closes at every insert into `records` (`records_keys` and
-- `records_consent`, dropped below, did). A query names the same words, or
-- one of the equalities, to use them.
CREATE INDEX IF NOT EXISTS records_key_ops ON records(feed)
    WHERE op = 'feed_init' OR op = 'replace_key' OR op = 'admit';
-- The channel-wide consent ops, which the consent fold reads all of.
CREATE INDEX IF NOT EXISTS records_consent_ops ON records(op)
    WHERE op = 'pin_set' OR op = 'backfill' OR op = 'undo_backfill';
DROP INDEX IF EXISTS records_keys;
DROP INDEX IF EXISTS records_consent;
-- Which records act on which message.
CREATE TABLE IF NOT EXISTS targets(target TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY(target, n)) WITHOUT ROWID;
-- Lines that were skipped (garbage), quarantined, forks and frozen feeds.
CREATE TABLE IF NOT EXISTS problems(
    n INTEGER PRIMARY KEY, kind TEXT NOT NULL, path TEXT NOT NULL, offset INTEGER NOT NULL,
    record TEXT, feed TEXT, reason TEXT NOT NULL, UNIQUE(path, offset, kind));
-- A feed's problems of one kind, which every listing of a feed folder looks
-- up: without it each lookup scanned every problem, a row per junk file, so
-- a folder of junk feeds cost every call the square of their number.
CREATE INDEX IF NOT EXISTS problems_feed ON problems(kind, feed);

-- Derived state, rewritten per message by the fold. Bodies live in `bodies`
-- so that message rows stay small: counters and listings scan thousands of
-- rows and must not drag every body through the page cache.
CREATE TABLE IF NOT EXISTS messages(
    id TEXT PRIMARY KEY, n INTEGER NOT NULL, from_role TEXT NOT NULL, to_json TEXT NOT NULL,
    multi INTEGER NOT NULL, topic TEXT NOT NULL,
    action_required INTEGER NOT NULL, reply_to TEXT, kind TEXT, work_status TEXT,
    addenda TEXT, decision_requested INTEGER NOT NULL, ms INTEGER NOT NULL, c INTEGER NOT NULL,
    deleted_ms INTEGER, body_sha256 TEXT NOT NULL, body_bytes INTEGER NOT NULL,
    body_chars INTEGER NOT NULL, conflicts TEXT,
    -- The debt and work-status lifecycle, as folded.
    status TEXT, resolved_by TEXT, resolved_ms INTEGER, resolution_note TEXT,
    confirmed INTEGER NOT NULL DEFAULT 0, blocked_by TEXT, ws_by TEXT,
    taken INTEGER NOT NULL DEFAULT 0, last_move_ms INTEGER NOT NULL,
    -- Proposals, nudges and consent, as folded (see core::consent).
    -- `voters` is the declared electorate as core reads it (null when none,
    -- an empty list included); `awaiting` the roles the proposal waits for
    -- (`Message::awaiting`, null when none): queries join on these and hold
    -- no rule of their own.
    pin_key TEXT, about TEXT, voters TEXT, revised_ms INTEGER, retired_ms INTEGER,
    retired_backfill INTEGER NOT NULL DEFAULT 0, round_conflict TEXT, approved TEXT,
    acks TEXT, awaiting TEXT,
    -- The rowid of the current text's row in `bodies` (the newest), so that a
    -- listing reads each body by its rowid instead of searching `bodies` by
    -- message id (an index file made before gains it: `add_body_row`).
    body_row INTEGER);
CREATE INDEX IF NOT EXISTS messages_pin_key ON messages(pin_key) WHERE pin_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_about ON messages(about) WHERE about IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_proc ON messages(ms, c, id) WHERE kind = 'proc';
CREATE INDEX IF NOT EXISTS messages_awaiting ON messages(ms, c, id) WHERE awaiting IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_order ON messages(ms, c, id);
-- A role's messages, newest first (list_messages' `from_role`): walked from
-- `messages_order`, a quiet role's page read every message sent since.
CREATE INDEX IF NOT EXISTS messages_from ON messages(from_role, ms, c, id);
CREATE INDEX IF NOT EXISTS messages_reply ON messages(reply_to);
-- A body row's message, if the row is its current text, with what a search
-- filters and sorts each match by: search joins FTS5's matches here
-- (`store::index::search`) and reads a message row only for the hits kept.
CREATE INDEX IF NOT EXISTS messages_body_row ON messages(body_row, deleted_ms, ms, c, id);
-- The counters read debts, work statuses and conflicts of many messages at
-- once; these partial indexes cover those queries so no message row is read.
-- They carry the recipients (`to_json`, which never changes and lists exactly
-- the roles with a row in `deliveries`), so "addressed to the role" is decided
-- in the index too instead of by a lookup in `deliveries` per message. They
-- replace `messages_debts` and `messages_ws`, which lacked them (dropped
-- below; an index file made before just gains these on its next open).
CREATE INDEX IF NOT EXISTS messages_debts_to ON messages(
    status, deleted_ms, ms, c, id, taken, topic, confirmed, resolved_by, from_role, to_json)
    WHERE status IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_ws_to ON messages(
    work_status, deleted_ms, ws_by, from_role, blocked_by, ms, c, id, topic, to_json)
    WHERE work_status IS NOT NULL;
DROP INDEX IF EXISTS messages_debts;
DROP INDEX IF EXISTS messages_ws;
-- Resolved debts by when they were resolved, for the board's chart of open
-- debts over the last days (which reads only the recent ones). Covering: it
-- holds `status` too, which its WHERE names.
CREATE INDEX IF NOT EXISTS messages_debt_closed ON messages(
    resolved_ms, deleted_ms, ms, to_json, status) WHERE status = 'resolved';
CREATE INDEX IF NOT EXISTS messages_conflicted ON messages(ms, c, id) WHERE conflicts IS NOT NULL;
-- The live tasks blocked on a message, in order, which a resolve of it names
-- in its answer: without it that answer read every blocked task.
CREATE INDEX IF NOT EXISTS messages_blocked_on ON messages(blocked_by, ms, c, id)
    WHERE work_status = 'blocked' AND deleted_ms IS NULL;
CREATE TABLE IF NOT EXISTS deliveries(
    role TEXT NOT NULL, message_id TEXT NOT NULL, ms INTEGER NOT NULL, c INTEGER NOT NULL,
    read_ms INTEGER, opened_ms INTEGER, deleted INTEGER NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY(role, message_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS deliveries_inbox ON deliveries(role, ms, c);
CREATE INDEX IF NOT EXISTS deliveries_message ON deliveries(message_id);
-- Covering, so counting a role's unread mail reads the index alone. The
-- columns of its WHERE are in it too: SQLite treats a partial index as
-- covering only if it holds every column the query names, and the count names
-- read_ms (`deliveries_unread`, without them, cost a table lookup per row).
CREATE INDEX IF NOT EXISTS deliveries_unread_cover ON deliveries(
    role, ms, c, opened_ms, n, read_ms, deleted)
    WHERE read_ms IS NULL AND deleted = 0;
DROP INDEX IF EXISTS deliveries_unread;
CREATE TABLE IF NOT EXISTS events(
    message_id TEXT NOT NULL, pos INTEGER NOT NULL, event TEXT NOT NULL, role TEXT NOT NULL,
    note TEXT, ms INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY(message_id, pos));
-- Each role's latest decision on a message, as folded.
CREATE TABLE IF NOT EXISTS votes(
    message_id TEXT NOT NULL, role TEXT NOT NULL, decision TEXT NOT NULL, note TEXT,
    ms INTEGER NOT NULL, record TEXT NOT NULL, body_sha256 TEXT NOT NULL, pin_head TEXT,
    stale INTEGER NOT NULL, PRIMARY KEY(message_id, role)) WITHOUT ROWID;
-- Every pin version that stands, in order per key.
CREATE TABLE IF NOT EXISTS pins(
    record TEXT PRIMARY KEY, key TEXT NOT NULL, pos INTEGER NOT NULL, title TEXT NOT NULL,
    version TEXT NOT NULL, body TEXT NOT NULL, body_ref TEXT, approved_by TEXT,
    role TEXT NOT NULL, ms INTEGER NOT NULL, sha256 TEXT NOT NULL, bytes INTEGER NOT NULL,
    chars INTEGER NOT NULL, UNIQUE(key, pos));
-- Pin writes that lost at their place in the order.
CREATE TABLE IF NOT EXISTS pin_conflicts(
    record TEXT PRIMARY KEY, key TEXT NOT NULL, role TEXT NOT NULL, reason TEXT NOT NULL,
    winner TEXT, ms INTEGER NOT NULL, c INTEGER NOT NULL);
-- Immutable text rows for full-text search (one per send or revision).
CREATE TABLE IF NOT EXISTS bodies(
    rowid INTEGER PRIMARY KEY, message_id TEXT NOT NULL, topic TEXT NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS bodies_message ON bodies(message_id);
CREATE VIRTUAL TABLE IF NOT EXISTS bodies_fts USING fts5(
    topic, body, content='bodies', content_rowid='rowid', tokenize='trigram');
-- No trigger feeds bodies_fts: FTS5 flushes its buffer to disk at every
-- statement savepoint, so one insert per body would flush once per message.
-- Ingest indexes each pass's new bodies with one INSERT … SELECT instead.

-- Uploads. Every chunk record keeps its text here once (a document of 8 MiB is
-- many rows, never one row rewritten per append); `pos` is its place in the
-- document as folded, NULL for a chunk that conflicted.
CREATE TABLE IF NOT EXISTS upload_chunks(
    n INTEGER PRIMARY KEY, record TEXT NOT NULL UNIQUE, upload TEXT NOT NULL,
    role TEXT NOT NULL, ms INTEGER NOT NULL, c INTEGER NOT NULL, text TEXT NOT NULL,
    label TEXT, pos INTEGER);
CREATE INDEX IF NOT EXISTS upload_chunks_upload ON upload_chunks(upload, pos);
CREATE TABLE IF NOT EXISTS upload_seals(
    n INTEGER PRIMARY KEY, record TEXT NOT NULL UNIQUE, upload TEXT NOT NULL,
    role TEXT NOT NULL, ms INTEGER NOT NULL, c INTEGER NOT NULL, sha256 TEXT NOT NULL,
    length_bytes INTEGER NOT NULL, length_chars INTEGER NOT NULL, chunks INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS upload_seals_upload ON upload_seals(upload);
-- The folded state of each upload (sha256 and lengths of the text so far).
CREATE TABLE IF NOT EXISTS uploads(
    id TEXT PRIMARY KEY, uploader TEXT NOT NULL, label TEXT, ms INTEGER NOT NULL,
    c INTEGER NOT NULL, chunks INTEGER NOT NULL, length_bytes INTEGER NOT NULL,
    length_chars INTEGER NOT NULL, sha256 TEXT NOT NULL, sealed_ms INTEGER, seal TEXT,
    conflicts TEXT);
-- Messages whose text (sent or revised) is an upload: re-written when that
-- upload is sealed here.
CREATE TABLE IF NOT EXISTS body_refs(
    upload TEXT NOT NULL, message_id TEXT NOT NULL, PRIMARY KEY(upload, message_id))
    WITHOUT ROWID;
-- Summaries of the memory's lines (core::memory), every one kept; `line` is
-- the name of the line it covers, `n` the record it came in.
CREATE TABLE IF NOT EXISTS summaries(
    n INTEGER PRIMARY KEY, line TEXT NOT NULL, id TEXT NOT NULL UNIQUE, ms INTEGER NOT NULL,
    c INTEGER NOT NULL, covers TEXT NOT NULL, text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS summaries_line ON summaries(line, ms, c, id);
-- Notes of the memory (core::memory::note), `n` the record each came in;
-- `event` is the recorded event, looked up per role to deliver it once.
CREATE TABLE IF NOT EXISTS notes(
    n INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, role TEXT NOT NULL, ms INTEGER NOT NULL,
    c INTEGER NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL, event TEXT, agent TEXT,
    session TEXT, folder TEXT, folder_hash TEXT);
CREATE INDEX IF NOT EXISTS notes_event ON notes(role, event) WHERE event IS NOT NULL;
-- One session's notes in order, for memory_thread.
CREATE INDEX IF NOT EXISTS notes_session ON notes(role, session, ms, c, id)
    WHERE session IS NOT NULL;
-- The notes' own full-text table: the message search never sees a note, a
-- memory search reads both. Notes are few (a few per turn), so each is
-- indexed as it is ingested.
CREATE VIRTUAL TABLE IF NOT EXISTS notes_fts USING fts5(
    text, content='notes', content_rowid='n', tokenize='trigram');

CREATE TABLE IF NOT EXISTS claims(
    id TEXT PRIMARY KEY, feed TEXT NOT NULL, invitation TEXT NOT NULL, pubkey TEXT NOT NULL,
    proof TEXT NOT NULL, ms INTEGER NOT NULL, c INTEGER NOT NULL, path TEXT NOT NULL,
    offset INTEGER NOT NULL);
"#;

/// Indexes that only the tools' queries read, never an ingest or a fold: a
/// rebuild drops them before it folds every record and makes them again at
/// the end ([`SCHEMA`] makes whatever is missing). SQLite then builds each
/// from one sort of the finished rows, instead of an insert into each index
/// at every change of a row (a message's row is written again by every
/// record that acts on it). An index a fold looks things up by (a message's
/// deliveries, bodies or replies, a feed's key records, pins by key) must
/// not be here: without it each lookup would read the whole table.
pub(super) const BUILT_AFTER_A_REBUILD: &[&str] = &[
    "records_order",
    "messages_proc",
    "messages_awaiting",
    "messages_order",
    "messages_from",
    "messages_body_row",
    "messages_debts_to",
    "messages_ws_to",
    "messages_debt_closed",
    "messages_conflicted",
    "messages_blocked_on",
    "deliveries_inbox",
    "deliveries_unread_cover",
    "summaries_line",
    "notes_session",
];

/// Tables emptied by a rebuild (everything folded from the feeds).
pub(super) const DERIVED_TABLES: &[&str] = &[
    "files",
    "feeds",
    "key_changes",
    "records",
    "targets",
    "problems",
    "messages",
    "deliveries",
    "events",
    "bodies",
    "votes",
    "pins",
    "pin_conflicts",
    "upload_chunks",
    "upload_seals",
    "uploads",
    "body_refs",
    "claims",
    "summaries",
    "notes",
];

/// What an index file's `user_version` holds once this build's schema
/// batch ran on it: a digest of the batch's text (31 bits, never 0, which is
/// what SQLite starts with). Parsing the whole batch of `CREATE … IF NOT
/// EXISTS` took about a tenth of a server's start-up on every open; a file
/// stamped with the same digest already holds all of it, and a build whose
/// schema text differs in any byte runs the batch once and stamps the file.
pub(super) fn schema_stamp() -> i32 {
    static STAMP: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *STAMP.get_or_init(|| {
        use sha2::Digest as _;
        let mut h = sha2::Sha256::new();
        h.update(SCHEMA.as_bytes());
        let d = h.finalize();
        let v = i32::from_be_bytes([d[0], d[1], d[2], d[3]]) & i32::MAX;
        v.max(1)
    })
}
