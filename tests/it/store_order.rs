//! The fold does not care how records arrive: any order of files, segments
//! split anywhere and delivered out of order, ingest passes at any point, and
//! re-ingesting, all give the state a full rebuild gives. Neither do the
//! forms sync hands files over in: gzip, CRLF, half-copied, beside conflict
//! copies, lines doubled or in reverse order by a merge.
//!
//! The history goes through the whole life of a message: debts created,
//! resolved, confirmed, reopened and deleted, work status moved to every value
//! (blocked on a debt, done_local then done), votes, revisions and pins; and
//! it is written from two devices that see each other's records only now and
//! then, so concurrent steps on one message reach the fold, and some lose.
//! Before their last exchange both devices summarize lines of the memory, so
//! summaries (two of one line among them) arrive in every order too.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::common::copy_dir;
use crate::common::local::{Local, open, send};
use countersign::app::delete::delete_message;
use countersign::app::inbox::{mark_read, read_inbox};
use countersign::app::lifecycle::{
    confirm_resolution, reopen_message, resolve_message, set_work_status,
};
use countersign::app::membership::{admit, join};
use countersign::app::memory::{Memory, summarize};
use countersign::app::pin::{PinRequest, pin_set};
use countersign::app::revise::{ReviseRequest, revise_message};
use countersign::app::send::{SendRequest, ToArg, send_message};
use countersign::app::status::summary;
use countersign::app::vote::acknowledge;
use countersign::app::{AppError, Session};
use countersign::core::ids::Role;
use countersign::store::Home;
use countersign::store::segments::segment_name;
use countersign::store::survey::{list_feeds, list_segments};
use proptest::prelude::*;

/// One feed's records: (role, device, lines with their seq).
type Feed = (String, String, Vec<(u64, String)>);

struct History {
    genesis: Vec<u8>,
    feeds: Vec<Feed>,
    digest: String,
    /// How many steps of each kind went through while writing it.
    done: BTreeMap<&'static str, usize>,
    _local: Local,
}

/// A refusal is a legal outcome of a step of the walk; a fault is not.
fn allowed<T>(r: Result<T, AppError>) -> bool {
    match r {
        Ok(_) => true,
        Err(AppError::Value(_) | AppError::Permission(_)) => false,
        Err(e) => panic!("fault: {e}"),
    }
}

/// A message of the walk: (id, author, addressee or "*").
type Sent = (String, &'static str, &'static str);

fn party(m: &Sent, role: &str) -> bool {
    m.1 == role || m.2 == role || m.2 == "*"
}

/// Copies the feeds `device` writes from one copy of the channel to another,
/// as sync would.
fn exchange(from: &Path, to: &Path, device: &str) {
    for role in fs::read_dir(from.join("feeds")).unwrap().flatten() {
        let src = role.path().join(device);
        if src.is_dir() {
            copy_dir(&src, &to.join("feeds").join(role.file_name()).join(device));
        }
    }
}

/// A small but varied history, written once through the real use cases.
fn history() -> &'static History {
    static H: OnceLock<History> = OnceLock::new();
    H.get_or_init(|| {
        let l = Local::new(&["a", "b", "c"]);
        // A second device writes as c, on its own copy of the folder.
        let dir2 = l.tmp.path().join("channel-2");
        let home2 = Home::at(l.tmp.path().join("home-2"));
        copy_dir(&l.dir, &dir2);
        let joined = join(&mut open(&dir2, &home2), "c").unwrap();
        let (pubkey, device2) = (joined.pubkey, joined.device);
        admit(&mut l.channel(), "c", &pubkey, &device2).unwrap();
        let device1 = l.home.device().unwrap().id;
        exchange(&l.dir, &dir2, &device1);
        let mut done = BTreeMap::<&'static str, usize>::new();
        // Per message, whether each device stepped on it since they last
        // exchanged: both is a concurrent pair.
        let mut touched: BTreeMap<String, (bool, bool)> = BTreeMap::new();
        let mut concurrent = 0;
        let roles = ["a", "b", "c"];
        let mut sent: Vec<Sent> = Vec::new();
        let mut debts: Vec<Sent> = Vec::new();
        let mut done_local: Vec<(String, &'static str)> = Vec::new();
        let mut resolved: Vec<(String, &'static str)> = Vec::new();
        // A fixed pseudo-random walk keeps the history the same on every run.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut proposals: Vec<(String, &str)> = Vec::new();
        let mut rounds: Vec<(String, String)> = Vec::new();
        for step in 0..200 {
            if rnd(8) == 0 {
                exchange(&l.dir, &dir2, &device1);
                exchange(&dir2, &l.dir, &device2);
                concurrent += touched.values().filter(|(a, b)| *a && *b).count();
                touched.clear();
            }
            let second = rnd(3) == 0;
            let me = if second { "c" } else { roles[rnd(3) as usize] };
            let other = roles
                .iter()
                .copied()
                .filter(|r| *r != me)
                .nth(rnd(2) as usize)
                .unwrap();
            let mut session = if second {
                Session::new(open(&dir2, &home2), Some(Role::new("c").unwrap())).unwrap()
            } else {
                l.session(me)
            };
            let s = &mut session;
            // The message a lifecycle step acts on, counted once it goes through.
            let mut target: Option<String> = None;
            let pick = |list: &[Sent], n: u64| -> Option<Sent> {
                let mine: Vec<&Sent> = list.iter().filter(|m| party(m, me)).collect();
                (!mine.is_empty()).then(|| mine[n as usize % mine.len()].clone())
            };
            let (kind, ok) = match rnd(22) {
                0 | 1 => {
                    let id = send(
                        s,
                        other,
                        &format!("topic {step}"),
                        &format!("body {step} from {me}"),
                    );
                    sent.push((id, me, other));
                    ("send", true)
                }
                2 => {
                    let out = send_message(
                        s,
                        SendRequest {
                            to: ToArg::One("*".into()),
                            topic: format!("status {step}"),
                            body: format!("everyone: step {step}"),
                            body_ref: None,
                            action_required: false,
                            reply_to: sent.last().filter(|_| rnd(2) == 0).map(|m| m.0.clone()),
                            kind: Some("status".into()),
                            work_status: Some("in_progress".into()),
                            addenda: None,
                            decision_requested: true,
                            pin_key: None,
                            about_message_id: None,
                            voters: None,
                        },
                    );
                    if let Ok(out) = &out {
                        sent.push((out.id.clone(), me, "*"));
                    }
                    ("broadcast", allowed(out))
                }
                3 => ("read_inbox", allowed(read_inbox(s, true, 5, None))),
                4 => match sent
                    .iter()
                    .find(|(_, f, t)| *t == me || (*t == "*" && *f != me))
                {
                    Some((id, _, _)) => ("mark_read", allowed(mark_read(s, Some(id), None))),
                    None => ("mark_read", false),
                },
                6 => {
                    // A round on one of two keys (refused while one is open), or a nudge.
                    let key = format!("k{}", rnd(2));
                    let about = proposals
                        .last()
                        .filter(|_| rnd(3) == 0)
                        .map(|p| p.0.clone());
                    let req = SendRequest {
                        to: ToArg::One("*".into()),
                        topic: format!("proposal {step} for {key}"),
                        body: format!("text {step}"),
                        body_ref: None,
                        action_required: false,
                        reply_to: None,
                        kind: Some("proc".into()),
                        work_status: None,
                        addenda: None,
                        decision_requested: true,
                        pin_key: Some(about.is_none().then(|| key.clone())),
                        about_message_id: Some(about.clone()),
                        voters: about.is_none().then_some(Some(ToArg::One("*".into()))),
                    };
                    let out = send_message(s, req);
                    if let Ok(out) = &out {
                        let id = out.id.clone();
                        if about.is_none() {
                            rounds.push((id.clone(), key));
                        }
                        proposals.push((id, me));
                    }
                    ("proposal", allowed(out))
                }
                7 | 8 => match proposals.get(rnd(proposals.len().max(1) as u64) as usize) {
                    Some((p, _)) => {
                        let d = ["agree", "agree", "reject", "void"][rnd(4) as usize];
                        ("vote", allowed(acknowledge(s, p, d, None, None)))
                    }
                    None => ("vote", false),
                },
                9 => match proposals.iter().rev().find(|(_, a)| *a == me) {
                    Some((p, _)) => {
                        let req = ReviseRequest {
                            message_id: p.clone(),
                            body: format!("revised at {step}"),
                            ..ReviseRequest::default()
                        };
                        ("revise", allowed(revise_message(s, req)))
                    }
                    None => ("revise", false),
                },
                10 | 19 => {
                    // A write on a round's key, allowed by its proposal once
                    // agreed, or a free write.
                    let (key, approved_by) = match rounds.last().filter(|_| rnd(2) == 0) {
                        Some((p, key)) => (key.clone(), Some(p.clone())),
                        None => ("notes".to_owned(), None),
                    };
                    let out = pin_set(
                        s,
                        PinRequest {
                            key,
                            title: "t".into(),
                            version: format!("{step}"),
                            body: format!("pinned at {step}"),
                            approved_by,
                            dry_run: false,
                            body_ref: None,
                        },
                    );
                    ("pin_set", allowed(out))
                }
                11 | 12 => {
                    // A debt, sometimes with its work status set at send time.
                    let req = SendRequest {
                        action_required: true,
                        kind: Some(["bug", "question", "feat"][rnd(3) as usize].into()),
                        work_status: (rnd(3) == 0).then(|| "proposed".into()),
                        ..SendRequest::new(other, format!("debt {step}"), format!("owed {step}"))
                    };
                    let out = send_message(s, req);
                    if let Ok(out) = &out {
                        let id = out.id.clone();
                        debts.push((id.clone(), me, other));
                        sent.push((id, me, other));
                    }
                    ("debt", allowed(out))
                }
                13 | 14 => match pick(&debts, rnd(64)) {
                    Some(d) => {
                        target = Some(d.0.clone());
                        let note = (rnd(2) == 0).then(|| format!("done at {step}"));
                        let ok = allowed(resolve_message(s, &d.0, note));
                        if ok {
                            resolved.push((d.0.clone(), me));
                        }
                        ("resolve", ok)
                    }
                    None => ("resolve", false),
                },
                15 => {
                    // The other side confirms a resolution.
                    let theirs: Vec<&(String, &str)> = resolved
                        .iter()
                        .filter(|(id, by)| {
                            *by != me && debts.iter().any(|m| m.0 == *id && party(m, me))
                        })
                        .collect();
                    match theirs.get(rnd(theirs.len().max(1) as u64) as usize) {
                        Some((id, _)) => {
                            let id = id.clone();
                            target = Some(id.clone());
                            ("confirm", allowed(confirm_resolution(s, &id, None)))
                        }
                        None => ("confirm", false),
                    }
                }
                16 => match pick(&debts, rnd(64)) {
                    Some(d) => {
                        target = Some(d.0.clone());
                        let why = Some(format!("not yet, at {step}"));
                        ("reopen", allowed(reopen_message(s, &d.0, why)))
                    }
                    None => ("reopen", false),
                },
                17 | 18 => match pick(&sent, rnd(64)) {
                    Some(m) => {
                        target = Some(m.0.clone());
                        let values = [
                            "proposed",
                            "in_progress",
                            "needs_you",
                            "blocked",
                            "done_local",
                            "done_local",
                        ];
                        let v = values[rnd(values.len() as u64) as usize];
                        let blocker = (v == "blocked" && rnd(2) == 0)
                            .then(|| debts.get(rnd(debts.len().max(1) as u64) as usize))
                            .flatten()
                            .map(|d| d.0.clone());
                        let ok = allowed(set_work_status(s, &m.0, v, None, blocker.as_deref()));
                        if ok && v == "done_local" {
                            done_local.push((m.0.clone(), me));
                        }
                        ("work_status", ok)
                    }
                    None => ("work_status", false),
                },
                5 => {
                    // The other side confirms a done_local with done.
                    let theirs: Vec<&(String, &str)> = done_local
                        .iter()
                        .filter(|(id, by)| {
                            *by != me && sent.iter().any(|m| m.0 == *id && party(m, me))
                        })
                        .collect();
                    match theirs.get(rnd(theirs.len().max(1) as u64) as usize) {
                        Some((id, _)) => {
                            let id = id.clone();
                            target = Some(id.clone());
                            let note = Some(format!("checked at {step}"));
                            ("done", allowed(set_work_status(s, &id, "done", note, None)))
                        }
                        None => ("done", false),
                    }
                }
                _ => {
                    let mine: Vec<usize> = (0..sent.len())
                        .filter(|i| sent[*i].1 == me || sent[*i].2 == me)
                        .collect();
                    if mine.is_empty() {
                        ("delete", false)
                    } else {
                        let pos = mine[rnd(mine.len() as u64) as usize];
                        let ok = allowed(delete_message(s, &sent[pos].0));
                        if ok {
                            sent.remove(pos);
                        }
                        ("delete", ok)
                    }
                }
            };
            *done.entry(kind).or_default() += usize::from(ok);
            if let Some(id) = target.filter(|_| ok) {
                let t = touched.entry(id).or_default();
                if second {
                    t.1 = true;
                } else {
                    t.0 = true;
                }
            }
        }
        // Both devices summarize lines of the memory before they exchange
        // again, the oldest first, so some line gets two summaries.
        let mut summaries = 0;
        for (second, role) in [(false, "a"), (true, "c")] {
            let mut s = if second {
                Session::new(open(&dir2, &home2), Some(Role::new(role).unwrap())).unwrap()
            } else {
                l.session(role)
            };
            s.catch_up().unwrap();
            let memory = Memory::load_at(&s, None).unwrap();
            let waiting: Vec<Vec<String>> = memory
                .view(800)
                .lines
                .iter()
                .filter(|l| l.waits)
                .take(4)
                .map(|l| {
                    let node = memory.tree().nodes()[..]
                        .iter()
                        .find(|n| n.line.hex() == l.line)
                        .unwrap();
                    memory.tree().covers(node).iter().map(|c| c.hex()).collect()
                })
                .collect();
            for covers in waiting {
                let text = format!("{role} sums up {} names", covers.len());
                summaries += usize::from(allowed(summarize(&mut s, &covers, &text)));
            }
        }
        done.insert("summary", summaries);
        exchange(&l.dir, &dir2, &device1);
        exchange(&dir2, &l.dir, &device2);
        concurrent += touched.values().filter(|(a, b)| *a && *b).count();
        done.insert("concurrent", concurrent);
        let mut ch = l.channel();
        ch.reindex(None).unwrap();
        let digest = ch.index().digest().unwrap();
        // Steps that lost at their place in the order, as each role is told.
        let conflicted = roles
            .iter()
            .map(|r| {
                summary(ch.index(), &Role::new(r).unwrap())
                    .unwrap()
                    .count("conflicted")
            })
            .sum();
        done.insert("conflicted", conflicted);
        let mut other = open(&dir2, &home2);
        other.catch_up().unwrap();
        assert_eq!(
            other.index().digest().unwrap(),
            digest,
            "the two devices agree once they have exchanged everything"
        );
        let mut feeds = Vec::new();
        for (feed, dir) in list_feeds(&l.dir.join("feeds")).unwrap() {
            let mut lines = Vec::new();
            for seg in list_segments(&dir).unwrap() {
                for line in fs::read_to_string(&seg.path).unwrap().lines() {
                    let rec = countersign::core::record::decode(line.as_bytes()).unwrap();
                    lines.push((rec.header.seq, format!("{line}\n")));
                }
            }
            feeds.push((feed.role().to_owned(), feed.device().to_owned(), lines));
        }
        History {
            genesis: fs::read(l.dir.join("channel.json")).unwrap(),
            feeds,
            digest,
            done,
            _local: l,
        }
    })
}

/// A delivery: which piece of which feed, in the order they land.
#[derive(Debug, Clone)]
struct Plan {
    /// Per feed, where its records are cut into segments (fractions 0..1).
    cuts: Vec<Vec<f64>>,
    /// A shuffle key per piece; pieces land sorted by it.
    order: Vec<u32>,
    /// Whether to run an ingest pass after each landing.
    ingest_after: Vec<bool>,
    /// Per piece, how sync hands it over: 0 plain, 1 gzip, 2 CRLF, 3 plain
    /// beside a conflict copy holding junk, 4 both plain and gzip, 5 every
    /// line twice (a union merge of two copies), 6 the lines in reverse order
    /// (an interleaving merge).
    form: Vec<u8>,
    /// Per piece, whether it first lands cut in the middle (a copy in flight),
    /// with an ingest pass before the rest arrives.
    torn: Vec<bool>,
}

fn plan() -> impl Strategy<Value = Plan> {
    (
        prop::collection::vec(prop::collection::vec(0.0f64..1.0, 0..4), 6),
        prop::collection::vec(any::<u32>(), 32),
        prop::collection::vec(any::<bool>(), 32),
        prop::collection::vec(0u8..7, 32),
        prop::collection::vec(any::<bool>(), 32),
    )
        .prop_map(|(cuts, order, ingest_after, form, torn)| Plan {
            cuts,
            order,
            ingest_after,
            form,
            torn,
        })
}

fn gz_path(plain: &Path) -> PathBuf {
    let mut name = plain.file_name().unwrap().to_os_string();
    name.push(".gz");
    plain.with_file_name(name)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// Lays the history's feeds out in `dir` as `plan` says. With `hazards`, the
/// pieces also arrive gzip, CRLF-converted, beside conflict copies, and cut
/// in the middle before they are whole.
fn deliver(dir: &Path, h: &History, plan: &Plan, home: &Home, hazards: bool) -> String {
    fs::create_dir_all(dir.join("feeds")).unwrap();
    fs::write(dir.join("channel.json"), &h.genesis).unwrap();
    // Cut every feed into segments.
    let mut pieces: Vec<(PathBuf, String)> = Vec::new();
    for (i, (role, device, lines)) in h.feeds.iter().enumerate() {
        let mut cuts: Vec<usize> = plan
            .cuts
            .get(i)
            .into_iter()
            .flatten()
            .map(|f| (f * lines.len() as f64) as usize)
            .collect();
        cuts.push(0);
        cuts.push(lines.len());
        cuts.sort_unstable();
        cuts.dedup();
        for w in cuts.windows(2) {
            let chunk = &lines[w[0]..w[1]];
            let Some((first_seq, _)) = chunk.first() else {
                continue;
            };
            let path = dir
                .join("feeds")
                .join(role)
                .join(device)
                .join(segment_name(*first_seq));
            pieces.push((path, chunk.iter().map(|(_, l)| l.as_str()).collect()));
        }
    }
    let mut keyed: Vec<(u32, usize)> = pieces
        .iter()
        .enumerate()
        .map(|(i, _)| {
            (
                plan.order[i % plan.order.len()].wrapping_add(i as u32 * 7919),
                i,
            )
        })
        .collect();
    keyed.sort_unstable();
    let mut ch = None;
    for (n, (_, i)) in keyed.into_iter().enumerate() {
        let (path, text) = &pieces[i];
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let (path, bytes) = match (hazards, plan.form[n % plan.form.len()]) {
            (true, 1) => (gz_path(path), gzip(text.as_bytes())),
            (true, 2) => (path.clone(), text.replace('\n', "\r\n").into_bytes()),
            (true, 3) => {
                let copy = path.with_extension("sync-conflict-20261130-0101-X.jsonl");
                fs::write(copy, format!("{text}junk\n{text}")).unwrap();
                (path.clone(), text.clone().into_bytes())
            }
            (true, 4) => {
                fs::write(gz_path(path), gzip(text.as_bytes())).unwrap();
                (path.clone(), text.clone().into_bytes())
            }
            (true, 5) => {
                let doubled: String = text.lines().map(|l| format!("{l}\n{l}\n")).collect();
                (path.clone(), doubled.into_bytes())
            }
            (true, 6) => {
                let reversed: String = text.lines().rev().map(|l| format!("{l}\n")).collect();
                (path.clone(), reversed.into_bytes())
            }
            _ => (path.clone(), text.clone().into_bytes()),
        };
        if hazards && plan.torn[n % plan.torn.len()] {
            fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
            ch.get_or_insert_with(|| open(dir, home))
                .catch_up()
                .unwrap();
        }
        fs::write(&path, &bytes).unwrap();
        if plan.ingest_after[n % plan.ingest_after.len()] {
            let c = ch.get_or_insert_with(|| open(dir, home));
            c.catch_up().unwrap();
        }
    }
    let mut c = ch.unwrap_or_else(|| open(dir, home));
    c.catch_up().unwrap();
    let incremental = c.index().digest().unwrap();
    // Ingesting again changes nothing.
    let report = c.catch_up().unwrap();
    assert_eq!(report.accepted, 0);
    assert_eq!(c.index().digest().unwrap(), incremental);
    incremental
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn any_arrival_order_gives_the_rebuilt_state(p in plan()) {
        let h = history();
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::at(tmp.path().join("home"));
        let dir = tmp.path().join("copy");
        let incremental = deliver(&dir, h, &p, &home, false);
        prop_assert_eq!(&incremental, &h.digest);
        let mut rebuilt = open(&dir, &home);
        rebuilt.reindex(None).unwrap();
        prop_assert_eq!(rebuilt.index().digest().unwrap(), h.digest.clone());
    }

    #[test]
    fn what_sync_does_on_the_way_gives_the_rebuilt_state(p in plan()) {
        let h = history();
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::at(tmp.path().join("home"));
        let dir = tmp.path().join("copy");
        let incremental = deliver(&dir, h, &p, &home, true);
        prop_assert_eq!(&incremental, &h.digest);
        let mut rebuilt = open(&dir, &home);
        rebuilt.reindex(None).unwrap();
        prop_assert_eq!(rebuilt.index().digest().unwrap(), h.digest.clone());
        // Conflict copies the delivery leaves are named as strays, and
        // nothing else is a problem.
        let problems = rebuilt.index().problems().unwrap();
        prop_assert!(problems.iter().all(|p| p.kind == "stray"), "{:?}", problems);
    }
}

#[test]
fn the_history_is_not_trivial() {
    // Guards the property above against a generator that stopped generating:
    // every step kind went through, the records of every lifecycle step are
    // there, and the two devices stepped on the same messages concurrently.
    let h = history();
    eprintln!("steps that went through, by kind: {:?}", h.done);
    let records: usize = h.feeds.iter().map(|f| f.2.len()).sum();
    assert!(h.feeds.len() >= 5, "owner + three roles + a second device");
    assert!(records > 100, "{records} records");
    for kind in [
        "send",
        "broadcast",
        "read_inbox",
        "mark_read",
        "proposal",
        "vote",
        "revise",
        "pin_set",
        "debt",
        "resolve",
        "confirm",
        "reopen",
        "work_status",
        "done",
        "delete",
        "summary",
    ] {
        assert!(
            h.done.get(kind).copied().unwrap_or(0) >= 2,
            "too few {kind} steps went through: {:?}",
            h.done
        );
    }
    assert!(h.done["concurrent"] >= 3, "{:?}", h.done);
    assert!(h.done["conflicted"] >= 1, "{:?}", h.done);
    let missing: Vec<&str> = [
        "\"op\":\"send\"",
        "\"op\":\"read\"",
        "\"op\":\"opened\"",
        "\"op\":\"delete\"",
        "\"op\":\"ack\"",
        "\"op\":\"revise\"",
        "\"op\":\"pin_set\"",
        "\"about\":",
        "\"action_required\":true",
        "\"op\":\"resolve\"",
        "\"op\":\"confirm\"",
        "\"op\":\"reopen\"",
        "\"op\":\"work_status\"",
        "\"value\":\"blocked\",\"blocked_by\":",
        "\"value\":\"done_local\"",
        "\"value\":\"done\"",
        "\"value\":\"needs_you\"",
        "\"op\":\"admit\"",
        "\"op\":\"summary\"",
    ]
    .into_iter()
    .filter(|op| {
        !h.feeds
            .iter()
            .any(|f| f.2.iter().any(|(_, l)| l.contains(op)))
    })
    .collect();
    assert!(missing.is_empty(), "never written: {missing:?}");
}
