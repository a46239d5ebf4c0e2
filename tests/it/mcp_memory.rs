//! The memory's reading tools through the real stdio server: the view in
//! pages of one snapshot, a line opened down to its original, a long
//! original read in pages, search, thread and date, the refusals that name
//! the field and the way out, and the view following every change of its
//! inputs on a server that keeps what it built.

use serde_json::{Value, json};

use crate::common::Client;
use crate::common::local::{Local, send};
use countersign::app::memory::{Memory, PAGE_BYTES, summarize};
use countersign::app::note::{NoteRequest, write_note};
use countersign::core::memory::note::NoteKind;

/// A view line: `<12 hex>+<items>|<rfc3339>: <text>`.
fn is_view_line(l: &str) -> bool {
    let Some((head, _)) = l.split_once(": ") else {
        return false;
    };
    let Some((name, date)) = head.split_once('|') else {
        return false;
    };
    let Some((id, items)) = name.split_once('+') else {
        return false;
    };
    id.len() == 12
        && id.bytes().all(|b| b.is_ascii_hexdigit())
        && items.parse::<u64>().is_ok_and(|n| n > 0)
        && crate::common::is_rfc3339_ms(date)
}

/// A short line: `<12 hex>|<kind>@<role>[@<device>] <rfc3339>: <text>` (a
/// note names the device that wrote it, a message its role only).
fn is_short_line(l: &str, kind: &str, role: &str) -> bool {
    let Some((id, rest)) = l.split_once('|') else {
        return false;
    };
    let Some((who, rest)) = rest.split_once(' ') else {
        return false;
    };
    let Some((date, _)) = rest.split_once(": ") else {
        return false;
    };
    let prefix = format!("{kind}@{role}");
    id.len() == 12
        && (who == prefix
            || (kind != "msg"
                && who.starts_with(&format!("{prefix}@"))
                && who.len() > prefix.len() + 1))
        && crate::common::is_rfc3339_ms(date)
        && !l.contains('\n')
}

/// Every page of the view from offset 0, as one list of lines, with the
/// pages' `changed` flags.
async fn all_pages(c: &Client) -> (Vec<String>, Vec<bool>) {
    let mut lines = Vec::new();
    let mut changed = Vec::new();
    let mut offset = 0u64;
    loop {
        let p = c.call("memory_view", json!({"offset": offset})).await.ok();
        let view = p["view"].as_str().unwrap();
        assert!(view.len() <= PAGE_BYTES, "a page of {} bytes", view.len());
        lines.extend(view.lines().map(str::to_owned));
        changed.push(p["changed"] == json!(true));
        match p["next_offset"].as_u64() {
            Some(n) => {
                assert!(n > offset);
                offset = n;
            }
            None => break,
        }
    }
    (lines, changed)
}

#[tokio::test]
async fn a_line_opens_down_to_its_original_and_a_long_one_reads_in_pages() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    let first = send(
        &mut s,
        "b",
        "Login",
        "Which fields does POST /login return?",
    );
    let long_text: String = (0..3000).map(|i| format!("w{i:05} ")).collect();
    let long = send(&mut s, "b", "Spec", &long_text);
    let fruit = send(&mut s, "b", "Lunch", "a pineapple for the team");
    let mut b = l.session("b");
    let reply = send(&mut b, "a", "Re: Login", "token and expires_at");
    // The long item gets a summary, written as a record.
    let memory = Memory::load_at(&s, None).unwrap();
    let tree = memory.tree();
    let long_full = tree
        .keys()
        .iter()
        .find(|k| k.id.hex().starts_with(&long))
        .unwrap()
        .id
        .hex();
    summarize(
        &mut s,
        std::slice::from_ref(&long_full),
        "the login spec, in full",
    )
    .unwrap();
    let root = tree.root().unwrap().clone();
    let halves = tree.covers(&root);

    // memory_date is outside `all` (the default list's byte budget): asked
    // for by its set.
    let c = Client::spawn_with(&l.home_root(), &l.dir, "a", &["--tools", "all,memory"]).await;
    let (lines, _) = all_pages(&c).await;
    assert_eq!(lines.len(), 4, "{lines:#?}");
    assert!(lines.iter().all(|l| is_view_line(l)), "{lines:#?}");
    assert!(lines[0].starts_with(&format!("{first}+1|")), "{}", lines[0]);
    assert!(lines[0].ends_with("msg@a: Login — Which fields does POST /login return?"));
    assert!(
        lines[1].ends_with(": the login spec, in full"),
        "{}",
        lines[1]
    );

    // The line over everything opens into its two halves.
    let z = c
        .call(
            "memory_zoom",
            json!({"id": root.line.hex()[..10], "n": root.items()}),
        )
        .await
        .ok();
    assert!(z["line"].as_str().unwrap().starts_with(&root.line.short()));
    let shown: Vec<&str> = z["halves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    assert_eq!(shown.len(), 2);
    for (h, name) in shown.iter().zip(&halves) {
        assert!(h.starts_with(&name.short()), "{h}");
        assert!(is_view_line(h), "{h}");
    }
    assert!(z.get("original").is_none());
    // As the view writes it, `<id>+<items>`, the line opens the same way.
    let again = c
        .call(
            "memory_zoom",
            json!({"id": format!("{}+{}", root.line.short(), root.items())}),
        )
        .await
        .ok();
    assert_eq!(again["halves"], z["halves"]);

    // An item opens into its original: 12,000 characters, then pages.
    let z = c
        .call("memory_zoom", json!({"id": long, "n": 1}))
        .await
        .ok();
    let o = &z["original"];
    assert_eq!(o["role"], "a");
    assert_eq!(o["topic"], "Spec");
    let total = long_text.chars().count() as u64;
    let mut text = o["text"].as_str().unwrap().to_owned();
    assert_eq!(text.chars().count(), 12_000);
    assert_eq!(o["more"], json!(total - 12_000));
    let mut next = o["next_offset"].as_u64();
    assert_eq!(next, Some(12_000));
    while let Some(offset) = next {
        let page = c
            .call("memory_read", json!({"id": long, "offset": offset}))
            .await
            .ok();
        text.push_str(page["text"].as_str().unwrap());
        next = page["next_offset"].as_u64();
        if next.is_none() {
            assert!(page.get("more").is_none(), "{page}");
        }
    }
    assert_eq!(text, long_text, "the pages make the original");
    // A short item's original is whole at once.
    let z = c
        .call("memory_zoom", json!({"id": format!("{reply}+1")}))
        .await
        .ok();
    assert_eq!(z["original"]["text"], "token and expires_at");
    assert!(z["original"].get("next_offset").is_none());

    // Search: short lines with ids, from the full-text index.
    let found = c
        .call("memory_search", json!({"query": "pineapple"}))
        .await
        .ok();
    let hits = found["lines"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{found}");
    let hit = hits[0].as_str().unwrap();
    assert!(is_short_line(hit, "msg", "a"), "{hit}");
    assert!(hit.starts_with(&format!("{fruit}|")) && hit.contains("pineapple"));
    assert!(found.get("more").is_none(), "{found}");
    let long_hit = c
        .call("memory_search", json!({"query": "w02999"}))
        .await
        .ok();
    let line = long_hit["lines"][0].as_str().unwrap();
    assert!(line.len() < 300, "cut short: {line}");

    // Thread: the items after one, as short lines, oldest first.
    let t = c
        .call("memory_thread", json!({"id": first, "n": 2}))
        .await
        .ok();
    let next: Vec<&str> = t["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(next.len(), 2);
    assert!(
        next[0].starts_with(&format!("{long}|msg@a ")),
        "{}",
        next[0]
    );
    assert!(
        next[1].starts_with(&format!("{fruit}|msg@a ")),
        "{}",
        next[1]
    );
    assert_eq!(t["more"], true);
    let t = c.call("memory_thread", json!({"id": first})).await.ok();
    assert_eq!(t["lines"].as_array().unwrap().len(), 3, "default 5, 3 left");
    assert!(t.get("more").is_none(), "{t}");

    // Date: an item's time, and a line's first and last.
    let d = c.call("memory_date", json!({"id": first})).await.ok();
    assert!(crate::common::is_rfc3339_ms(
        d["first_at"].as_str().unwrap()
    ));
    assert_eq!(d["first_at"], d["last_at"]);
    let d = c
        .call("memory_date", json!({"id": root.line.hex()}))
        .await
        .ok();
    assert!(d["first_at"].as_str().unwrap() < d["last_at"].as_str().unwrap());
    c.close().await;
}

#[tokio::test]
async fn refusals_name_the_field_and_the_way_out() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    let one = send(&mut s, "b", "One", "first");
    send(&mut s, "b", "Two", "second");
    let root = Memory::load_at(&s, None)
        .unwrap()
        .tree()
        .root()
        .unwrap()
        .clone();
    let c = Client::spawn_with(&l.home_root(), &l.dir, "a", &["--tools", "memory"]).await;
    // A page after the first needs the snapshot the first page took.
    c.call("memory_view", json!({"offset": 20}))
        .await
        .value_error("offset: no view is being paged here");
    c.call("memory_view", json!({})).await.ok();
    c.call("memory_view", json!({"offset": 3}))
        .await
        .value_error("offset: 3 is not where a page starts");
    c.call("memory_view", json!({"offset": -1}))
        .await
        .value_error("offset: -1 is negative");
    c.call("memory_zoom", json!({"id": "xyz"}))
        .await
        .value_error("id: 'xyz' is not a line id");
    c.call("memory_zoom", json!({"id": "0123"}))
        .await
        .value_error("at least 8");
    c.call("memory_zoom", json!({"id": "00000000ffff"}))
        .await
        .value_error("id: no line 00000000ffff in the memory here");
    let m = c
        .call("memory_zoom", json!({"id": one, "n": 2}))
        .await
        .value_error("n: line");
    assert!(m.contains("covers 1 item(s)"), "{m}");
    c.call("memory_zoom", json!({"id": format!("{one}+2"), "n": 1}))
        .await
        .value_error("says 2 items but n is 1");
    c.call("memory_zoom", json!({"id": one, "n": 0}))
        .await
        .value_error("n: a line covers at least 1 item");
    c.call("memory_read", json!({"id": root.line.hex()}))
        .await
        .value_error("memory_read reads one item's original");
    c.call("memory_read", json!({"id": one, "offset": 99}))
        .await
        .value_error("offset: the original has 5 characters");
    c.call("memory_thread", json!({"id": one, "n": 31}))
        .await
        .value_error("n: between 1 and 30");
    c.call("memory_search", json!({"query": "first", "limit": 0}))
        .await
        .value_error("limit: between 1 and 100");
    c.call("memory_date", json!({"id": "zz"}))
        .await
        .value_error("is not a line id");
    c.close().await;
}

#[tokio::test]
async fn pages_follow_one_snapshot_and_every_change_shows_on_the_next_view() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    for i in 0..400 {
        send(
            &mut s,
            "b",
            &format!("Note {i}"),
            &format!(
                "item number {i} of the long history: {}",
                "words ".repeat(70)
            ),
        );
    }
    let c = Client::spawn(&l.home_root(), &l.dir, "a").await;
    let b = Client::spawn(&l.home_root(), &l.dir, "b").await;
    // The default serves every memory tool but memory_date, and says where
    // it is.
    let m = c
        .call("memory_date", json!({"id": "00000000"}))
        .await
        .value_error("memory_date is not served here");
    assert!(m.contains("--tools all,memory"), "{m}");
    let (before, changed) = all_pages(&c).await;
    assert!(changed.len() > 2, "{} pages", changed.len());
    assert!(changed.iter().all(|c| !c));
    assert!(before.iter().all(|l| is_view_line(l)));

    // Paging one view while the memory changes: the later pages come from
    // the same snapshot and say it changed.
    let p0 = c.call("memory_view", json!({})).await.ok();
    let mut lines: Vec<String> = p0["view"]
        .as_str()
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let added = b.send("a", "Late", "arrives between two pages").await;
    let mut offset = p0["next_offset"].as_u64();
    let mut flags = Vec::new();
    while let Some(o) = offset {
        let p = c.call("memory_view", json!({"offset": o})).await.ok();
        lines.extend(p["view"].as_str().unwrap().lines().map(str::to_owned));
        flags.push(p["changed"] == json!(true));
        offset = p["next_offset"].as_u64();
    }
    assert_eq!(lines, before, "one snapshot across the pages");
    assert!(flags.iter().all(|f| *f), "{flags:?}");

    // A new view: the new item is there, with a line of its own.
    let (now, changed) = all_pages(&c).await;
    assert!(changed.iter().all(|c| !c));
    let last = now.last().unwrap();
    assert!(
        last.starts_with(&format!("{added}+1|")) && last.ends_with("arrives between two pages"),
        "{last}"
    );
    // Revised: the line shows the text as it stands.
    b.call(
        "revise_message",
        json!({"message_id": added, "body": "revised text"}),
    )
    .await
    .ok();
    let (now, _) = all_pages(&c).await;
    assert!(now.last().unwrap().ends_with("msg@b: Late — revised text"));
    // Deleted: the item leaves the memory.
    b.call("delete_message", json!({"message_id": added}))
        .await
        .ok();
    let (now, _) = all_pages(&c).await;
    assert!(!now.iter().any(|l| l.starts_with(&added)));
    assert_eq!(now, before);
    // A summary written by another process shows on the next view.
    let memory = Memory::load_at(&s, None).unwrap();
    let (at, first) = before
        .iter()
        .enumerate()
        .find(|(_, l)| !l.contains("+1|"))
        .expect("older lines cover several items");
    assert!(first.contains("waits for a compaction"), "{first}");
    let (name, _) = first.split_once('+').unwrap();
    let node = memory
        .tree()
        .nodes()
        .iter()
        .find(|n| n.line.short() == name)
        .unwrap()
        .clone();
    let covers: Vec<String> = memory
        .tree()
        .covers(&node)
        .iter()
        .map(|c| c.hex())
        .collect();
    summarize(&mut s, &covers, "the first stretch, summarized").unwrap();
    let (now, _) = all_pages(&c).await;
    assert!(
        now[at].starts_with(name) && now[at].ends_with(": the first stretch, summarized"),
        "{}",
        now[at]
    );
    // The toolset serves the memory tools by themselves too.
    let only = Client::spawn_with(&l.home_root(), &l.dir, "a", &["--tools", "memory"]).await;
    let listed: Vec<String> = only
        .inner
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        listed,
        [
            "server_build",
            "memory_view",
            "memory_zoom",
            "memory_read",
            "memory_search",
            "memory_thread",
            "memory_date"
        ]
    );
    for t in only.inner.list_all_tools().await.unwrap() {
        let a = t.annotations.expect("annotations");
        assert_eq!(a.read_only_hint, Some(true), "{}", t.name);
    }
    let _: Value = only.call("memory_view", json!({})).await.ok();
    only.close().await;
    c.close().await;
    b.close().await;
}

#[tokio::test]
async fn a_search_finds_notes_beside_messages_and_a_thread_shows_them() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    let msg = send(&mut s, "b", "Cache", "the cache keeps quince entries");
    let note = write_note(
        &mut s,
        NoteRequest {
            kind: NoteKind::Prompt,
            text: "why do quince entries expire so early?".into(),
            event: None,
            agent: None,
            session: None,
            folder: None,
            folder_hash: None,
        },
    )
    .unwrap();
    let c = Client::spawn(&l.home_root(), &l.dir, "a").await;
    let found = c
        .call("memory_search", json!({"query": "quince"}))
        .await
        .ok();
    let hits: Vec<&str> = found["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    assert_eq!(hits.len(), 2, "{found}");
    assert!(
        hits.iter()
            .any(|h| h.starts_with(&format!("{msg}|")) && is_short_line(h, "msg", "a")),
        "{hits:?}"
    );
    let short = &note.id[..12];
    let hit = hits
        .iter()
        .find(|h| h.starts_with(&format!("{short}|")))
        .unwrap_or_else(|| panic!("no note among {hits:?}"));
    assert!(is_short_line(hit, "prompt", "a"), "{hit}");
    assert!(
        hit.ends_with(": why do quince entries expire so early?"),
        "{hit}"
    );
    // A word the note lacks finds the message alone; one the message lacks,
    // the note alone (every phrase is checked, not only the candidates').
    let both = c
        .call("memory_search", json!({"query": "quince expire"}))
        .await
        .ok();
    assert_eq!(both["lines"].as_array().unwrap().len(), 1, "{both}");
    assert!(both["lines"][0].as_str().unwrap().starts_with(short));

    // The note is an item: the thread after the message shows it.
    let t = c
        .call("memory_thread", json!({"id": msg, "n": 5}))
        .await
        .ok();
    let next = t["lines"][0].as_str().unwrap();
    assert!(
        next.starts_with(&format!("{short}|")) && is_short_line(next, "prompt", "a"),
        "{t}"
    );
}
