//! The memory on real files and a real SQLite index: the view a session
//! reads, summaries written as records in the writer's feed, a peer's
//! summary that breaks the rules refused at ingest, and two summaries of one
//! line folding the same way on every machine whatever order they arrive in.

use std::fs;

use crate::common::copy_dir;
use crate::common::local::{self, Local, send};
use countersign::app::AppError;
use countersign::app::membership::{admit, join};
use countersign::app::memory::{Memory, memory_view, summarize};
use countersign::core::ids::RecordId;
use countersign::core::memory::tree::DEFAULT_BUDGET;
use countersign::core::op::{Op, Summary};
use countersign::store::Home;
use countersign::store::survey::list_segments;

fn value_error<T: std::fmt::Debug>(r: Result<T, AppError>, needle: &str) {
    match r {
        Err(AppError::Value(m)) => assert!(m.contains(needle), "{m}"),
        other => panic!("expected a ValueError with '{needle}', got {other:?}"),
    }
}

fn summary_records(l: &Local, role: &str) -> usize {
    list_segments(&l.feed_dir(role))
        .unwrap()
        .iter()
        .map(|s| {
            fs::read_to_string(&s.path)
                .unwrap()
                .lines()
                .filter(|l| l.contains(r#""op":"summary""#))
                .count()
        })
        .sum()
}

#[test]
fn a_session_reads_the_view_and_writes_a_summary_record() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(
        &mut s,
        "b",
        "Login",
        "Which fields does POST /login return?",
    );
    send(
        &mut s,
        "b",
        "Long",
        &"the whole spec, word for word. ".repeat(40),
    );
    let mut b = l.session("b");
    send(&mut b, "a", "Re: Login", "token and expires_at");

    let view = memory_view(&mut s, None).unwrap();
    assert_eq!(view.items, 3);
    assert_eq!(view.lines.len(), 3, "{:?}", view.lines);
    assert!(
        view.lines[0]
            .shown
            .ends_with("msg@a: Login — Which fields does POST /login return?")
    );
    // The long message waits for a summary; the short ones are their own lines.
    assert!(view.lines[1].waits && view.lines[1].shown.contains("waits for a compaction"));
    assert!(!view.lines[0].waits && !view.lines[2].waits);
    assert_eq!(view.waiting, 1);
    assert!(view.bytes <= DEFAULT_BUDGET as u64);

    let long = view.lines[1].line.clone();
    // Refused, and nothing written: too long, not one line, not a line here.
    value_error(
        summarize(&mut s, std::slice::from_ref(&long), &"x".repeat(513)),
        "513 bytes",
    );
    value_error(
        summarize(&mut s, std::slice::from_ref(&long), "two\nlines"),
        "one line",
    );
    let stranger = RecordId::of_body(b"nothing here").hex();
    value_error(summarize(&mut s, &[stranger], "x"), "names no line");
    value_error(
        summarize(&mut s, &["abc".into()], "x"),
        "full 64-character id",
    );
    assert_eq!(summary_records(&l, "a"), 0);

    let done = summarize(
        &mut s,
        std::slice::from_ref(&long),
        "a asks b to read the whole spec",
    )
    .unwrap();
    assert_eq!(done.line, long);
    assert_eq!(done.items, 1);
    assert_eq!(
        summary_records(&l, "a"),
        1,
        "the summary is a record in a's feed"
    );
    value_error(
        summarize(&mut s, std::slice::from_ref(&long), "again"),
        "has a summary already",
    );

    // Another machine reading the folder reuses it: no line waits there.
    let mut other = countersign::app::Session::new(
        local::open(&l.dir, &Home::at(l.tmp.path().join("home-2"))),
        None,
    )
    .unwrap();
    // (It has not heard from this device since b's answer, so that one is
    // still tentative there.)
    let there = memory_view(&mut other, None).unwrap();
    assert_eq!(there.waiting, 0);
    assert_eq!(there.items, 2);
    assert!(there.tentative_since.is_some());
    assert!(
        there.lines[1]
            .shown
            .ends_with(": a asks b to read the whole spec")
    );
    // With every item held taken in, both machines show the same view.
    let everything = |ses: &countersign::app::Session| -> Vec<String> {
        let m = Memory::load_at(ses, None).unwrap();
        m.view(DEFAULT_BUDGET)
            .lines
            .into_iter()
            .map(|l| l.shown)
            .collect()
    };
    assert_eq!(everything(&other), everything(&s));
    assert_eq!(everything(&other).len(), 3);

    // Two lines merge: the root over everything, summarized by its halves.
    let memory = Memory::load_at(&s, None).unwrap();
    let tree = memory.tree();
    let root = tree.root().unwrap();
    let halves: Vec<String> = tree.covers(root).iter().map(RecordId::hex).collect();
    summarize(
        &mut b,
        &halves,
        "login fields asked and answered; a long spec sent",
    )
    .unwrap();
    let small = memory_view(&mut s, Some(150)).unwrap();
    assert_eq!(small.lines.len(), 1, "{:?}", small.lines);
    assert!(
        small.lines[0]
            .shown
            .ends_with(": login fields asked and answered; a long spec sent")
    );
    assert_eq!(small.lines[0].items, 3);
}

#[test]
fn a_peers_summary_that_breaks_the_rules_is_refused_at_ingest() {
    type Shape = fn(RecordId) -> Summary;
    let shapes: [(&str, Shape); 4] = [
        ("100000 bytes", |i| Summary {
            covers: vec![i],
            text: "x".repeat(100_000),
        }),
        ("one line", |i| Summary {
            covers: vec![i],
            text: "one\ntwo".into(),
        }),
        ("not 3", |i| Summary {
            covers: vec![i, i, i],
            text: "three".into(),
        }),
        ("not 0", |_| Summary {
            covers: vec![],
            text: "none".into(),
        }),
    ];
    for (why, shape) in shapes {
        let l = Local::new(&["a", "b"]);
        let mut s = l.session("a");
        send(&mut s, "b", "Long", &"spec ".repeat(200));
        let item = memory_view(&mut s, None).unwrap().lines[0].line.clone();
        let item = RecordId::parse(&item).unwrap();
        // A peer writes the summary by hand, signed with the feed's real key.
        l.forge("a", &Op::Summary(shape(item)));

        let mut reader = local::open(&l.dir, &Home::at(l.tmp.path().join("reader")));
        reader.catch_up().unwrap();
        let quarantined = local::quarantined(&reader);
        assert_eq!(quarantined.len(), 1, "{why}: {quarantined:?}");
        assert!(
            quarantined[0].starts_with("summary refused"),
            "{quarantined:?}"
        );
        assert!(quarantined[0].contains(why), "{quarantined:?}");
        assert!(reader.index().summaries_of(&item).unwrap().is_empty());
        let mut session = countersign::app::Session::new(reader, None).unwrap();
        let m = Memory::load_at(&session, None).unwrap();
        assert_eq!(m.view(DEFAULT_BUDGET).lines.len(), 1);
        assert!(m.view(DEFAULT_BUDGET).lines[0].waits, "{why}");
        session.catch_up().unwrap();
    }
}

#[test]
fn two_summaries_of_one_line_fold_the_same_in_any_order() {
    let l = Local::new(&["a", "b", "c"]);
    let mut s = l.session("a");
    send(&mut s, "b", "Long", &"spec ".repeat(200));
    // A second device writes as c on its own copy of the folder.
    let dir2 = l.tmp.path().join("channel-2");
    let home2 = Home::at(l.tmp.path().join("home-2"));
    copy_dir(&l.dir, &dir2);
    let joined = join(&mut local::open(&dir2, &home2), "c").unwrap();
    admit(&mut l.channel(), "c", &joined.pubkey, &joined.device).unwrap();
    let device1 = l.home.device().unwrap().id;
    let exchange = |from: &std::path::Path, to: &std::path::Path, device: &str| {
        for role in fs::read_dir(from.join("feeds")).unwrap().flatten() {
            let src = role.path().join(device);
            if src.is_dir() {
                copy_dir(&src, &to.join("feeds").join(role.file_name()).join(device));
            }
        }
    };
    exchange(&l.dir, &dir2, &device1);
    let item = memory_view(&mut s, None).unwrap().lines[0].line.clone();
    // Both devices summarize the same line before either sees the other's.
    let mut c2 = countersign::app::Session::new(
        local::open(&dir2, &home2),
        Some(countersign::core::ids::Role::new("c").unwrap()),
    )
    .unwrap();
    summarize(
        &mut c2,
        std::slice::from_ref(&item),
        "from the second device",
    )
    .unwrap();
    summarize(&mut s, std::slice::from_ref(&item), "from the first device").unwrap();
    exchange(&l.dir, &dir2, &device1);
    exchange(&dir2, &l.dir, &joined.device);

    // Readers that take the folder in either order show one and keep both.
    let mut shown = Vec::new();
    let mut digests = Vec::new();
    for (dir, home) in [(&l.dir, "r1"), (&dir2, "r2")] {
        let ch = local::open(dir, &Home::at(l.tmp.path().join(home)));
        let mut ses = countersign::app::Session::new(ch, None).unwrap();
        ses.catch_up().unwrap();
        let id = RecordId::parse(&item).unwrap();
        assert_eq!(
            ses.index().summaries_of(&id).unwrap().len(),
            2,
            "both are kept"
        );
        digests.push(ses.index().digest().unwrap());
        let m = Memory::load_at(&ses, None).unwrap();
        shown.push(m.view(DEFAULT_BUDGET).lines[0].shown.clone());
    }
    // And the writers, whose indexes took them in the order they wrote them.
    for ses in [&mut s, &mut c2] {
        ses.catch_up().unwrap();
        digests.push(ses.index().digest().unwrap());
        let m = Memory::load_at(ses, None).unwrap();
        shown.push(m.view(DEFAULT_BUDGET).lines[0].shown.clone());
    }
    assert!(shown.windows(2).all(|w| w[0] == w[1]), "{shown:?}");
    assert!(digests.windows(2).all(|w| w[0] == w[1]), "{digests:?}");
    // The one that stands is the first in the total order.
    let id = RecordId::parse(&item).unwrap();
    let first = &s.index().summaries_of(&id).unwrap()[0].1;
    assert!(shown[0].ends_with(first.as_str()), "{shown:?} {first}");
}
