//! Compaction by agents through the real stdio server (`countersign mcp
//! --tools jobs`): a scripted worker that plays the compactor subagent drains
//! the queue of a 300-message channel, a second home on a copy of the folder
//! then gets no job and shows the same view; leases shared by the server
//! processes of one home (busy, expiry, release), failures that pause a line
//! until it is resumed, and the submits that are refused.

use std::path::Path;

use rmcp::ServiceExt as _;
use rmcp::transport::{ConfigureCommandExt as _, TokioChildProcess};
use serde_json::{Value, json};

use crate::common::local;
use crate::common::{Client, TestChannel, bin, copy_dir};
use countersign::app::Session;
use countersign::app::compaction::CLOCK_OFFSET_ENV;
use countersign::app::memory::Memory;
use countersign::core::memory::tree::DEFAULT_BUDGET;
use countersign::store::Home;

/// A job server (`--tools jobs`) of `role` whose compaction clock runs
/// `offset_ms` ahead.
pub(crate) async fn jobs_server(home: &Path, dir: &Path, role: &str, offset_ms: i64) -> Client {
    let (home, dir, role) = (home.to_path_buf(), dir.to_path_buf(), role.to_owned());
    let transport = TokioChildProcess::new(tokio::process::Command::new(bin()).configure(|c| {
        c.args(["mcp", "--tools", "jobs", "--role"])
            .arg(&role)
            .arg("--channel")
            .arg(&dir)
            .env("COUNTERSIGN_HOME", &home)
            .env(CLOCK_OFFSET_ENV, offset_ms.to_string())
            .env_remove("COUNTERSIGN_ROLE")
            .env_remove("AI_AGENT_CHANNEL_ROLE");
    }))
    .expect("spawn the server");
    Client {
        inner: ().serve(transport).await.expect("MCP handshake"),
    }
}

/// A body of about `len` characters, different for each `i`.
pub(crate) fn body(i: usize, len: usize) -> String {
    let mut out = format!("Message {i}: ");
    let words = [
        "login", "token", "schema", "deploy", "review", "cache", "index", "retry", "budget",
    ];
    let mut k = i;
    while out.len() < len {
        out.push_str(words[k % words.len()]);
        out.push(' ');
        k = k.wrapping_mul(31).wrapping_add(7);
    }
    out
}

/// Reads every page of the job in `answer` after the first; returns the
/// whole text. Every page starts where a line starts, and there are as many
/// as the job says.
async fn read_all(c: &Client, answer: &Value) -> String {
    let job = answer["job"].as_str().unwrap();
    let mut text = answer["text"].as_str().unwrap().to_owned();
    let mut next = answer["next_offset"].as_u64();
    let mut pages = 1;
    while let Some(offset) = next {
        assert!(text.ends_with('\n'), "a page ends inside a line");
        assert_eq!(offset, text.chars().count() as u64);
        let page = c
            .call("compact_read", json!({"job": job, "offset": offset}))
            .await
            .ok();
        pages += 1;
        assert_eq!(page["page"], pages);
        text.push_str(page["text"].as_str().unwrap());
        next = page["next_offset"].as_u64();
    }
    assert_eq!(answer["pages"], pages, "{answer}");
    assert_eq!(
        text.chars().count() as u64,
        answer["total_chars"].as_u64().unwrap()
    );
    text
}

/// The lines a scripted worker writes for a job: one per task, in order,
/// each about 300 bytes, as a real summary would be (two never join).
pub(crate) fn lines_for(answer: &Value) -> Vec<Value> {
    answer["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let text = format!(
                "summary of line {}: {}",
                t.as_str().unwrap(),
                "gist ".repeat(56)
            );
            json!({"line": t, "text": text.trim_end()})
        })
        .collect()
}

/// The view over every item held in a home, as shown lines.
fn view_of(dir: &Path, home: &Path) -> Vec<String> {
    let mut s = Session::new(local::open(dir, &Home::at(home.to_path_buf())), None).unwrap();
    s.catch_up().unwrap();
    Memory::load_at(&s, None)
        .unwrap()
        .view(DEFAULT_BUDGET)
        .lines
        .into_iter()
        .map(|l| l.shown)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_worker_drains_the_queue_and_a_second_home_has_nothing_left() {
    let ch = TestChannel::new(&["a", "b"]);
    let a = ch.client("a").await;
    let b = ch.client("b").await;
    // 300 messages of about 400 characters (two never fit one line side by
    // side, and the view of them all passes 128 KB), some long ones, and one
    // longer than a worker is shown.
    for i in 0..300 {
        let len = match i {
            7 => 20_000,
            _ if i % 25 == 3 => 2_000,
            _ => 400,
        };
        let (from, to) = if i % 2 == 0 { (&a, "b") } else { (&b, "a") };
        from.send(to, &format!("topic {}", i % 17), &body(i, len))
            .await;
    }
    a.close().await;
    b.close().await;

    let w = jobs_server(&ch.home, &ch.dir, "a", 0).await;
    // The job tools only: a session on the channel never loads them.
    let tools: Vec<String> = w
        .inner
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        tools,
        [
            "server_build",
            "compact_next",
            "compact_read",
            "compact_submit",
            "compact_release",
            "compact_resume"
        ]
    );

    let first = w.call("compact_next", json!({})).await.ok();
    assert_eq!(first["status"], "job", "{first}");
    let worker = first["worker"].as_str().unwrap().to_owned();
    let page = first["text"].as_str().unwrap();
    assert!(page.contains("NEVER INSTRUCTIONS"), "{page}");
    // Long items come first: they are the lowest lines.
    assert!(page.contains("summarize one item"), "{page}");
    assert!(
        first["next_offset"].as_u64().is_some(),
        "the view makes it long"
    );
    let ntasks = first["tasks"].as_array().unwrap().len();
    assert!((1..=10).contains(&ntasks));

    // Refused, nothing written, and the job given back at once each time:
    // before every page was read, lines out of order, too long, on two
    // lines, one line short. The worker's next job holds the same lines.
    let records = ch.feed_records();
    let pages = first["pages"].as_u64().unwrap();
    assert!(pages >= 2, "{first}");
    assert!(page.contains(&format!("{pages} pages")), "{page}");
    let mut bad: Vec<(Vec<Value>, &str)> = vec![(lines_for(&first), "read every page")];
    if ntasks > 1 {
        let mut lines = lines_for(&first);
        lines.swap(0, 1);
        bad.push((lines, "out of order"));
    }
    let mut lines = lines_for(&first);
    lines[0]["text"] = json!("x".repeat(513));
    bad.push((lines, "513 bytes"));
    let mut lines = lines_for(&first);
    lines[0]["text"] = json!("two\nlines");
    bad.push((lines, "one line"));
    bad.push((lines_for(&first)[1..].to_vec(), "one line per task"));
    let mut held = first.clone();
    for (lines, why) in bad {
        let refusal = w
            .call(
                "compact_submit",
                json!({"job": held["job"], "lines": lines}),
            )
            .await
            .value_error(why);
        assert!(refusal.contains("given back"), "{refusal}");
        w.call("compact_read", json!({"job": held["job"], "offset": 0}))
            .await
            .value_error("given back");
        held = w.call("compact_next", json!({"worker": worker})).await.ok();
        assert_eq!(held["status"], "job", "{held}");
        assert_eq!(held["tasks"], first["tasks"]);
    }
    w.call("compact_read", json!({"job": held["job"], "offset": 17}))
        .await
        .value_error("starts no page");
    assert_eq!(
        ch.feed_records(),
        records,
        "a refused submit writes nothing"
    );
    w.call(
        "compact_release",
        json!({"job": held["job"], "reason": "starting over"}),
    )
    .await
    .ok();

    // A new worker's first job carries the whole view.
    let first = w.call("compact_next", json!({})).await.ok();
    assert_eq!(first["tasks"], held["tasks"]);
    let worker = first["worker"].as_str().unwrap().to_owned();
    let job = first["job"].as_str().unwrap().to_owned();
    let text = read_all(&w, &first).await;
    assert!(text.contains("CONTEXT, not to summarize: the memory's view"));
    assert!(
        text.contains("[cut at 8000 of 20"),
        "the 20,000-character message is cut"
    );

    // The worker's loop: submit, read the next job's pages, submit, until
    // done.
    let mut answer = first;
    let mut jobs = 0;
    let mut written = 0;
    let mut merges = 0;
    loop {
        match answer["status"].as_str().unwrap() {
            "job" => {}
            "done" => break,
            other => panic!("the only worker got {other}: {answer}"),
        }
        jobs += 1;
        assert!(jobs < 400, "the queue does not drain");
        let text = read_all(&w, &answer).await;
        if jobs > 1 {
            assert!(
                text.contains("since your last job")
                    || text.contains("has not changed since your last job"),
                "later jobs carry only what changed"
            );
            assert!(!text.contains("the memory's view, "), "no whole view again");
        }
        if text.contains("merge two lines") {
            merges += 1;
        }
        let done = w
            .call(
                "compact_submit",
                json!({"job": answer["job"], "lines": lines_for(&answer)}),
            )
            .await
            .ok();
        written += done["written"].as_array().unwrap().len();
        assert!(done["skipped"].as_array().unwrap().is_empty(), "{done}");
        answer = done["next"].clone();
        assert_eq!(answer["worker"], worker.as_str());
    }
    assert!(merges > 0, "old lines were merged, not only long items");
    assert_eq!(
        ch.feed_records(),
        records + written,
        "one summary record per line written"
    );
    // A submitted job is closed.
    w.call(
        "compact_submit",
        json!({"job": job, "lines": lines_for(&answer)}),
    )
    .await
    .value_error("submitted already");
    let again = w.call("compact_next", json!({"worker": worker})).await.ok();
    assert_eq!(again["status"], "done", "{again}");
    w.close().await;

    // No line of the view waits any more.
    let view = view_of(&ch.dir, &ch.home);
    assert!(
        view.iter().all(|l| !l.contains("waits for a compaction")),
        "{view:?}"
    );

    // A second home on a copy of the folder: no job for what was summarized
    // here, and the same view.
    let copy = ch.tmp.path().join("copy");
    copy_dir(&ch.dir, &copy);
    let home2 = ch.tmp.path().join("home-2");
    let w2 = jobs_server(&home2, &copy, "b", 0).await;
    let there = w2.call("compact_next", json!({})).await.ok();
    assert_eq!(there["status"], "done", "{there}");
    assert_eq!(there["waiting"], 0);
    w2.close().await;
    assert_eq!(view_of(&copy, &home2), view);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_are_shared_by_the_servers_of_a_home_expire_and_failures_pause_a_line() {
    let ch = TestChannel::new(&["a", "b"]);
    let a = ch.client("a").await;
    for i in 0..4 {
        a.send("b", "long", &body(i, 1_500)).await;
    }
    a.close().await;

    let one = jobs_server(&ch.home, &ch.dir, "a", 0).await;
    let two = jobs_server(&ch.home, &ch.dir, "a", 0).await;
    // Six minutes later: every lease taken now has run out.
    let later = jobs_server(&ch.home, &ch.dir, "a", 6 * 60 * 1000).await;

    let j1 = one.call("compact_next", json!({})).await.ok();
    assert_eq!(j1["status"], "job");
    assert_eq!(j1["tasks"].as_array().unwrap().len(), 4);
    let tasks = j1["tasks"].clone();

    // Another process of this home: everything ready is leased.
    let busy = two.call("compact_next", json!({})).await.ok();
    assert_eq!(busy["status"], "busy", "{busy}");
    let w2 = busy["worker"].as_str().unwrap().to_owned();
    let retry = busy["retry_after_s"].as_u64().unwrap();
    assert!((250..=300).contains(&retry), "{retry}");
    // Asking again without work does not take the lease either.
    let busy = two.call("compact_next", json!({"worker": w2})).await.ok();
    assert_eq!(busy["status"], "busy");

    // The worker that holds a job gets it again on compact_next.
    let w1 = j1["worker"].as_str().unwrap().to_owned();
    let same = one.call("compact_next", json!({"worker": w1})).await.ok();
    assert_eq!(same["job"], j1["job"]);

    // Released: the lines are free at once.
    let r = one
        .call(
            "compact_release",
            json!({"job": j1["job"], "reason": "stopping"}),
        )
        .await
        .ok();
    assert!(r["paused"].as_array().unwrap().is_empty());
    one.call("compact_read", json!({"job": j1["job"], "offset": 0}))
        .await
        .value_error("given back");

    // Three explicit failures pause the lines.
    for round in 1..=3 {
        let j = two.call("compact_next", json!({"worker": w2})).await.ok();
        assert_eq!(j["status"], "job", "round {round}: {j}");
        assert_eq!(j["tasks"], tasks);
        let r = two
            .call(
                "compact_release",
                json!({"job": j["job"], "reason": "cannot read it", "failed": true}),
            )
            .await
            .ok();
        let paused = r["paused"].as_array().unwrap().len();
        assert_eq!(paused, if round == 3 { 4 } else { 0 }, "{r}");
    }
    let stuck = two.call("compact_next", json!({"worker": w2})).await.ok();
    assert_eq!(stuck["status"], "paused", "{stuck}");
    assert_eq!(stuck["paused"].as_array().unwrap().len(), 4);
    assert!(stuck["text"].as_str().unwrap().contains("compact_resume"));

    // Resumed, one line is offered again; a prefix too short or unknown is
    // refused.
    two.call("compact_resume", json!({"line": "abc"}))
        .await
        .value_error("8 hex digits");
    two.call("compact_resume", json!({"line": "0000000000"}))
        .await
        .value_error("no paused");
    let line = tasks[0].as_str().unwrap();
    two.call("compact_resume", json!({"line": line})).await.ok();
    let j = two.call("compact_next", json!({"worker": w2})).await.ok();
    assert_eq!(j["status"], "job", "{j}");
    assert_eq!(j["tasks"], json!([line]));

    // Held by `two`: busy for `one` now, free six minutes later.
    let b = one.call("compact_next", json!({})).await.ok();
    assert_eq!(b["status"], "busy", "{b}");
    let taken = later.call("compact_next", json!({})).await.ok();
    assert_eq!(taken["status"], "job", "the lease expired: {taken}");
    assert_eq!(taken["tasks"], json!([line]));
    // The late worker's summary is written; `two` submitting the same line
    // afterwards skips it.
    read_all(&later, &taken).await;
    let done = later
        .call(
            "compact_submit",
            json!({"job": taken["job"], "lines": lines_for(&taken)}),
        )
        .await
        .ok();
    assert_eq!(done["written"], json!([line]));
    read_all(&two, &j).await;
    let dup = two
        .call(
            "compact_submit",
            json!({"job": j["job"], "lines": lines_for(&j)}),
        )
        .await
        .ok();
    assert!(dup["written"].as_array().unwrap().is_empty(), "{dup}");
    assert!(
        dup["skipped"][0]
            .as_str()
            .unwrap()
            .contains("summarized elsewhere"),
        "{dup}"
    );
    for c in [one, two, later] {
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_submit_frees_the_lines_at_once_and_memory_status_counts_them_apart() {
    let ch = TestChannel::new(&["a", "b"]);
    let a = ch.client("a").await;
    for i in 0..4 {
        a.send("b", "long", &body(i, 1_500)).await;
    }
    a.close().await;
    let one = jobs_server(&ch.home, &ch.dir, "a", 0).await;
    let two = jobs_server(&ch.home, &ch.dir, "a", 0).await;
    let j = one.call("compact_next", json!({})).await.ok();
    assert_eq!(j["status"], "job", "{j}");
    assert_eq!(j["tasks"].as_array().unwrap().len(), 4);

    // Leased lines are being written, not ready.
    let status = |want: &str| {
        let out = memory_status(&ch, &[], "");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(text.contains(want), "{text}");
        let json: Value =
            serde_json::from_slice(&memory_status(&ch, &["--json"], "").stdout).unwrap();
        (
            json["ready"].as_u64().unwrap(),
            json["leased"].as_u64().unwrap(),
        )
    };
    assert_eq!(status("(0 ready now, 4 being written)"), (0, 4));

    // Every page read, one line too long: refused, and the job is given
    // back at once, so another worker takes its lines now, not in 5 minutes.
    read_all(&one, &j).await;
    let mut lines = lines_for(&j);
    lines[2]["text"] = json!("x".repeat(600));
    let refusal = one
        .call("compact_submit", json!({"job": j["job"], "lines": lines}))
        .await
        .value_error("600 bytes");
    assert!(refusal.contains("given back"), "{refusal}");
    assert_eq!(status("(4 ready now, 0 being written)"), (4, 0));
    let taken = two.call("compact_next", json!({})).await.ok();
    assert_eq!(
        taken["status"], "job",
        "the lines are free at once: {taken}"
    );
    assert_eq!(taken["tasks"], j["tasks"]);
    // The job given back stays closed.
    one.call(
        "compact_submit",
        json!({"job": j["job"], "lines": lines_for(&j)}),
    )
    .await
    .value_error("given back");
    for c in [one, two] {
        c.close().await;
    }
}

/// Runs `countersign memory status …` with `input` on stdin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_naming_the_line_that_failed_pauses_that_line_alone() {
    let ch = TestChannel::new(&["a", "b"]);
    let a = ch.client("a").await;
    for i in 0..3 {
        a.send("b", "long", &body(i, 1_500)).await;
    }
    a.close().await;
    let w = jobs_server(&ch.home, &ch.dir, "a", 0).await;
    let mut worker = None;
    let mut bad = String::new();
    for round in 1..=3 {
        let j = w.call("compact_next", json!({"worker": worker})).await.ok();
        assert_eq!(j["status"], "job", "round {round}: {j}");
        assert_eq!(j["tasks"].as_array().unwrap().len(), 3);
        worker = Some(j["worker"].as_str().unwrap().to_owned());
        bad = j["tasks"][1].as_str().unwrap().to_owned();
        // A line of another job, or `line` without `failed`, is refused.
        w.call(
            "compact_release",
            json!({"job": j["job"], "reason": "x", "failed": true, "line": "00000000"}),
        )
        .await
        .value_error("not one task of this job");
        w.call(
            "compact_release",
            json!({"job": j["job"], "reason": "x", "line": &bad[..8]}),
        )
        .await
        .value_error("set failed=true");
        let r = w
            .call(
                "compact_release",
                json!({"job": j["job"], "reason": "unreadable", "failed": true, "line": &bad[..8]}),
            )
            .await
            .ok();
        let paused = r["paused"].as_array().unwrap();
        assert_eq!(paused.len(), usize::from(round == 3), "{r}");
    }
    // The other two lines are offered again; the failed one is not.
    let j = w.call("compact_next", json!({"worker": worker})).await.ok();
    assert_eq!(j["status"], "job", "{j}");
    let tasks: Vec<&str> = j["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(tasks.len(), 2, "{j}");
    assert!(!tasks.contains(&bad.as_str()), "{tasks:?}");
}

/// The first file named `name` under `dir`.
fn find_file(dir: &Path, name: &str) -> Option<std::path::PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if p.is_dir() {
            if let Some(f) = find_file(&p, name) {
                return Some(f);
            }
        } else if p.file_name().is_some_and(|n| n == name) {
            return Some(p);
        }
    }
    None
}

fn memory_status(ch: &TestChannel, args: &[&str], input: &str) -> std::process::Output {
    use std::io::Write as _;
    let mut c = std::process::Command::new(bin());
    c.env("COUNTERSIGN_HOME", &ch.home)
        .env_remove("COUNTERSIGN_ROLE")
        .env_remove("COUNTERSIGN_CHANNEL")
        .args(["memory", "status"])
        .args(args)
        .arg("--channel")
        .arg(&ch.dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_status_counts_what_waits_and_the_status_line_keeps_the_one_before() {
    let ch = TestChannel::new(&["a", "b"]);
    let a = ch.client("a").await;
    for i in 0..3 {
        a.send("b", "long", &body(i, 1_000)).await;
    }
    let input = json!({"cwd": ch.tmp.path(), "model": {"display_name": "M"}}).to_string();
    // Fewer than 30 wait: the status line prints nothing of ours.
    let out = memory_status(&ch, &["--statusline"], &input);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    // The status line that was there before is kept, and sees the same input.
    let out = memory_status(
        &ch,
        &["--statusline", "--with", "echo before; cat >/dev/null"],
        &input,
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "before\n");

    for i in 3..35 {
        a.send("b", "long", &body(i, 1_000)).await;
    }
    a.close().await;
    let out = memory_status(&ch, &[], "");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("items:          35"), "{text}");
    assert!(text.contains("35 ready now"), "{text}");
    let json: Value = serde_json::from_slice(&memory_status(&ch, &["--json"], "").stdout).unwrap();
    assert_eq!(json["items_waiting"], 35);
    assert_eq!(json["leased"], 0);

    let out = memory_status(&ch, &["--statusline"], &input);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "memory: 35 items wait (/countersign-compact)\n"
    );
    // While the index stands still, the status line answers from the count it
    // kept in the state folder (here altered to tell it apart), with no pass
    // over the history.
    let kept = find_file(&ch.home, "memory_waiting.json").expect("the count is kept");
    let mut k: Value = serde_json::from_slice(&std::fs::read(&kept).unwrap()).unwrap();
    assert_eq!(k["items_waiting"], 35);
    k["items_waiting"] = json!(77);
    std::fs::write(&kept, k.to_string()).unwrap();
    let out = memory_status(&ch, &["--statusline"], &input);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "memory: 77 items wait (/countersign-compact)\n"
    );
    k["items_waiting"] = json!(35);
    std::fs::write(&kept, k.to_string()).unwrap();
    let out = memory_status(
        &ch,
        &[
            "--statusline",
            "--with",
            "grep -o '\"display_name\": *\"M\"' | head -c 100 >/dev/null; printf 'model M'",
        ],
        &input,
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "model M · memory: 35 items wait (/countersign-compact)\n"
    );

    // Trouble prints nothing and never fails: no channel there.
    let out = std::process::Command::new(bin())
        .env("COUNTERSIGN_HOME", &ch.home)
        .args(["memory", "status", "--statusline", "--channel"])
        .arg(ch.tmp.path().join("nowhere"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
}
