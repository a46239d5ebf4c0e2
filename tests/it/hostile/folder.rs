//! The folder's files: every path, type and byte in `feeds/` may come from a
//! hostile peer. Nothing is followed, nothing unbounded is read, nothing that
//! failed is published later, and whatever does not belong is reported by
//! path and left untouched.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::machines::{World, git_ok};
use crate::common::{TestChannel, bin};

/// The folder of `role`'s one feed (this channel has one device).
fn feed_dir(tc: &TestChannel, role: &str) -> PathBuf {
    let role_dir = tc.dir.join("feeds").join(role);
    let dev = fs::read_dir(&role_dir)
        .unwrap()
        .flatten()
        .find(|e| e.file_type().unwrap().is_dir())
        .expect("a device folder");
    dev.path()
}

/// The newest segment of a feed folder.
fn newest_segment(dir: &Path) -> PathBuf {
    let mut segs: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    segs.sort();
    segs.pop().expect("a segment")
}

/// Runs the binary on the channel, failing the test (not hanging it) when
/// it takes longer than `limit`: a reader that blocks on a FIFO or reads an
/// 8 GiB file would otherwise stall the suite.
fn cli_within(tc: &TestChannel, args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(bin())
        .env("COUNTERSIGN_HOME", &tc.home)
        .env_remove("COUNTERSIGN_ROLE")
        .env_remove("AI_AGENT_CHANNEL_ROLE")
        .env_remove("COUNTERSIGN_CHANNEL")
        .arg("--channel")
        .arg(&tc.dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("`countersign {}` took more than {limit:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn send(tc: &TestChannel, topic: &str, body: &str) -> Output {
    tc.cli(&[
        "--role", "a", "send", "--to", "b", "--topic", topic, "--body", body,
    ])
}

fn send_ok(tc: &TestChannel, topic: &str) {
    let out = send(tc, topic, "body");
    assert!(out.status.success(), "{}", text(&out));
}

/// `status --role b` as JSON (exit 0 or 1 both mean it read the channel).
fn status_json(tc: &TestChannel) -> serde_json::Value {
    let out = cli_within(tc, &["--role", "b", "status"], Duration::from_secs(60));
    assert!(out.status.code() != Some(2), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn alarms_of(status: &serde_json::Value) -> Vec<serde_json::Value> {
    status["alarms"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_symlinked_head_is_replaced_never_written_through() {
    let tc = TestChannel::new(&["a", "b"]);
    send_ok(&tc, "first");
    let victim = tc.tmp.path().join("victim.txt");
    fs::write(&victim, b"precious\n").unwrap();
    let head = feed_dir(&tc, "a").join("head.json");
    fs::remove_file(&head).unwrap();
    symlink(&victim, &head).unwrap();
    send_ok(&tc, "second");
    assert_eq!(fs::read(&victim).unwrap(), b"precious\n");
    assert!(
        !fs::symlink_metadata(&head)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_hard_linked_head_is_replaced_never_written_through() {
    // The head is written in place when it stands as a plain file of its
    // own; a second name would carry those bytes out of the folder.
    let tc = TestChannel::new(&["a", "b"]);
    send_ok(&tc, "first");
    let head = feed_dir(&tc, "a").join("head.json");
    let victim = tc.tmp.path().join("victim.txt");
    fs::remove_file(&head).unwrap();
    fs::write(&victim, b"precious\n").unwrap();
    fs::hard_link(&victim, &head).unwrap();
    send_ok(&tc, "second");
    assert_eq!(fs::read(&victim).unwrap(), b"precious\n");
    let written = fs::read_to_string(&head).unwrap();
    assert!(written.contains("\"seq\":3"), "{written}");
}

#[test]
fn a_symlinked_segment_is_never_appended_to_and_is_an_alarm() {
    let tc = TestChannel::new(&["a", "b"]);
    send_ok(&tc, "first");
    let seg = newest_segment(&feed_dir(&tc, "a"));
    let victim = tc.tmp.path().join("victim.jsonl");
    fs::copy(&seg, &victim).unwrap();
    let before = fs::read(&victim).unwrap();
    fs::remove_file(&seg).unwrap();
    symlink(&victim, &seg).unwrap();
    let out = send(&tc, "second", "body");
    assert!(!out.status.success(), "a send through a symlink succeeded");
    assert!(text(&out).contains("symbolic link"), "{}", text(&out));
    assert_eq!(fs::read(&victim).unwrap(), before, "the target was written");
    assert!(fs::symlink_metadata(&seg).unwrap().file_type().is_symlink());
    let out = cli_within(&tc, &["verify"], Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("wrong_type"), "{}", text(&out));
    let alarms = alarms_of(&status_json(&tc));
    assert!(
        alarms.iter().any(|a| a["kind"] == "wrong_type"
            && a["where"].as_str().unwrap().contains("00000001.jsonl")),
        "{alarms:?}"
    );
}

#[test]
fn a_fifo_or_a_folder_named_like_a_segment_is_reported_without_blocking() {
    let tc = TestChannel::new(&["a", "b"]);
    send_ok(&tc, "first");
    let dir = feed_dir(&tc, "a");
    let fifo = dir.join("00000900.jsonl");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    fs::create_dir(dir.join("00000950.jsonl")).unwrap();
    let out = cli_within(&tc, &["verify"], Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("00000900.jsonl") && t.contains("named pipe"),
        "{t}"
    );
    assert!(
        t.contains("00000950.jsonl") && t.contains("a directory"),
        "{t}"
    );
    // Still there, untouched.
    assert!(fs::symlink_metadata(&fifo).is_ok());
    assert!(dir.join("00000950.jsonl").is_dir());
}

#[test]
fn a_symlinked_role_folder_is_an_alarm_and_not_walked() {
    let tc = TestChannel::new(&["a", "b"]);
    send_ok(&tc, "first");
    // A role folder pointing at another channel's feeds would otherwise be
    // read as this one's.
    let elsewhere = tc.tmp.path().join("elsewhere");
    fs::create_dir_all(elsewhere.join("dev-000000")).unwrap();
    fs::write(elsewhere.join("dev-000000/00000001.jsonl"), b"garbage\n").unwrap();
    symlink(&elsewhere, tc.dir.join("feeds/c")).unwrap();
    let out = cli_within(&tc, &["verify"], Duration::from_secs(60));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("feeds/c") && t.contains("symbolic link"), "{t}");
    assert!(!t.contains("garbage:"), "the linked folder was read: {t}");
}

#[test]
fn a_sparse_8_gib_segment_is_reported_once_and_never_read() {
    let tc = TestChannel::new(&["a", "b"]);
    send_ok(&tc, "first");
    let big = feed_dir(&tc, "a").join("00000700.jsonl");
    fs::File::create(&big).unwrap().set_len(8 << 30).unwrap();
    // Read whole, this file would take many seconds and 8 GiB of memory.
    let out = cli_within(&tc, &["verify"], Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("oversize"), "{}", text(&out));
    for _ in 0..2 {
        let alarms = alarms_of(&status_json(&tc));
        let n = alarms.iter().filter(|a| a["kind"] == "oversize").count();
        assert_eq!(n, 1, "{alarms:?}");
    }
    // Writing goes on beside it.
    send_ok(&tc, "second");
}

#[test]
fn a_gzip_bomb_is_not_decompressed_past_the_bound() {
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use std::io::Write as _;
    let tc = TestChannel::new(&["a", "b"]);
    send_ok(&tc, "first");
    // 64 MiB of newlines pack into well under a megabyte.
    let mut enc = GzEncoder::new(Vec::new(), Compression::best());
    let block = vec![b'\n'; 1 << 20];
    for _ in 0..64 {
        enc.write_all(&block).unwrap();
    }
    let gz = enc.finish().unwrap();
    assert!(gz.len() < 1 << 20);
    fs::write(feed_dir(&tc, "a").join("00000600.jsonl.gz"), gz).unwrap();
    let out = cli_within(&tc, &["verify"], Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("decompresses to more than"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_long_line_without_newline_is_reported_at_its_offset() {
    let tc = TestChannel::new(&["a", "b"]);
    send_ok(&tc, "first");
    let other = tc.dir.join("feeds/b/dev-111111");
    fs::create_dir_all(&other).unwrap();
    fs::write(other.join("00000001.jsonl"), vec![b'x'; 2 << 20]).unwrap();
    let out = cli_within(&tc, &["verify"], Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("feeds/b/dev-111111/00000001.jsonl:0")
            && text(&out).contains("no newline"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_write_that_failed_is_never_published_later() {
    let tc = TestChannel::new(&["a", "b"]);
    // A body that fills the segment, so the next record starts a new file.
    let big = "x".repeat(256 * 1024);
    let mut child = Command::new(bin())
        .env("COUNTERSIGN_HOME", &tc.home)
        .args(["--channel", tc.dir.to_str().unwrap()])
        .args(["--role", "a", "send", "--to", "b", "--topic", "big"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(big.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let dir = feed_dir(&tc, "a");
    let seg = newest_segment(&dir);
    assert!(fs::metadata(&seg).unwrap().len() >= 256 * 1024);
    // seq 1 feed_init, seq 2 the big send: the next record is seq 3.
    let blocker = dir.join("00000003.jsonl");
    fs::create_dir(&blocker).unwrap();
    let out = send(&tc, "second", "body");
    assert!(!out.status.success(), "a write into a directory succeeded");
    assert!(text(&out).contains("00000003.jsonl"), "{}", text(&out));
    fs::remove_dir(&blocker).unwrap();
    send_ok(&tc, "third");
    let out = tc.cli(&["--role", "b", "inbox"]);
    let inbox = text(&out);
    assert!(inbox.contains("third") && inbox.contains("big"), "{inbox}");
    assert!(
        !inbox.contains("second"),
        "the failed write was published: {inbox}"
    );
}

#[test]
fn verify_reports_a_feed_cut_short_of_its_signed_head() {
    let tc = TestChannel::new(&["a", "b"]);
    send_ok(&tc, "first");
    send_ok(&tc, "second");
    let seg = newest_segment(&feed_dir(&tc, "a"));
    let bytes = fs::read(&seg).unwrap();
    // Cut the last record off, at a line boundary: what is left is a
    // perfectly valid, shorter feed.
    let body = &bytes[..bytes.len() - 1];
    let cut = body.iter().rposition(|&b| b == b'\n').unwrap() + 1;
    fs::write(&seg, &bytes[..cut]).unwrap();
    let out = cli_within(&tc, &["verify"], Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("cut") && text(&out).contains("signed head names seq"),
        "{}",
        text(&out)
    );
}

#[test]
fn stray_files_in_feeds_are_named_by_verify() {
    let tc = TestChannel::new(&["a", "b"]);
    send_ok(&tc, "first");
    let dir = feed_dir(&tc, "a");
    fs::write(dir.join("notes.txt"), b"hello\n").unwrap();
    fs::write(tc.dir.join("feeds/README"), b"hello\n").unwrap();
    let out = cli_within(&tc, &["verify"], Duration::from_secs(30));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("notes.txt") && t.contains("feeds/README"), "{t}");
    // Harmless: not an alarm in status.
    let alarms = alarms_of(&status_json(&tc));
    assert!(alarms.iter().all(|a| a["kind"] != "stray"), "{alarms:?}");
}

#[test]
fn no_role_can_take_a_reserved_name() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .env("COUNTERSIGN_HOME", tmp.path().join("home"))
        .args(["init"])
        .arg(tmp.path().join("ch"))
        .args(["--roles", "owner,b"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out).contains("reserved"), "{}", text(&out));
    assert!(!tmp.path().join("ch/channel.json").exists());

    let tc = TestChannel::new(&["a", "b"]);
    let out = tc.cli(&["add-role", "owner"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("reserved"), "{}", text(&out));
    // The owner key still admits roles.
    let out = tc.cli(&["add-role", "c"]);
    assert!(out.status.success(), "{}", text(&out));
    send_ok(&tc, "after");
    let out = cli_within(&tc, &["verify"], Duration::from_secs(30));
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn a_git_pull_never_materializes_a_symlink() {
    let w = World::git(2, &["a", "b"]);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    a.send("a", "b", "hello");
    a.sync();
    b.sync();
    for m in [a, b] {
        let v = git_ok(&m.dir, &["config", "--local", "--get", "core.symlinks"]);
        assert_eq!(v.trim(), "false", "{}", m.name);
    }
    // A peer commits a symlink into machine A's own feed folder, on a clone
    // of its own where links are links.
    let evil = w.tmp.path().join("evil");
    git_ok(
        w.tmp.path(),
        &[
            "clone",
            "-q",
            w.remote.to_str().unwrap(),
            evil.to_str().unwrap(),
        ],
    );
    let device_a = a.device();
    let victim = w.tmp.path().join("victim.txt");
    fs::write(&victim, b"precious\n").unwrap();
    let head = evil.join("feeds/a").join(&device_a).join("head.json");
    fs::remove_file(&head).unwrap();
    symlink(&victim, &head).unwrap();
    git_ok(&evil, &["add", "-A"]);
    git_ok(
        &evil,
        &[
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@x",
            "commit",
            "-q",
            "-m",
            "plant",
        ],
    );
    git_ok(&evil, &["push", "-q", "origin", "HEAD"]);
    // A pulls, then writes.
    a.sync();
    a.send("a", "b", "after");
    a.sync();
    assert_eq!(fs::read(&victim).unwrap(), b"precious\n");
    let local = a.dir.join("feeds/a").join(&device_a).join("head.json");
    assert!(
        !fs::symlink_metadata(&local)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

// ---------------------------------------------------------------------------
// Arbitrary trees and bytes: whatever a peer adds to the folder, ingest
// neither panics nor stalls, and the state is the clean channel's, the same
// incrementally and rebuilt.

mod arbitrary {
    use std::fs;
    use std::os::unix::fs::symlink;
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::sync::OnceLock;
    use std::time::{Duration, Instant};

    use proptest::prelude::*;

    use crate::common::local::{Local, open, send};
    use countersign::store::Home;

    /// A channel with messages from two roles, and its clean digest.
    struct Base {
        local: Local,
        digest: String,
    }

    fn base() -> &'static Base {
        static BASE: OnceLock<Base> = OnceLock::new();
        BASE.get_or_init(|| {
            let local = Local::new(&["a", "b"]);
            let mut a = local.session("a");
            let mut b = local.session("b");
            for i in 0..4 {
                send(&mut a, "b", &format!("from a {i}"), "body");
                send(&mut b, "a", &format!("from b {i}"), "body");
            }
            let mut ch = local.channel();
            ch.catch_up().unwrap();
            let digest = ch.index().digest().unwrap();
            Base { local, digest }
        })
    }

    /// Where in the tree an addition goes.
    #[derive(Clone, Debug)]
    enum Place {
        /// `feeds/` itself.
        Feeds,
        /// A role folder (index into the roles present).
        Role(usize),
        /// A feed folder (index into the feeds present).
        Feed(usize),
    }

    /// What is put there.
    #[derive(Clone, Debug)]
    enum What {
        File(Vec<u8>),
        Append(Vec<u8>),
        Dir,
        Link(usize),
        Fifo,
    }

    #[derive(Clone, Debug)]
    struct Addition {
        place: Place,
        name: String,
        what: What,
    }

    fn names() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("00000001.jsonl".to_owned()),
            Just("00000002.jsonl".to_owned()),
            Just("00000009.jsonl".to_owned()),
            Just("00000001.jsonl.gz".to_owned()),
            Just("00099999.jsonl".to_owned()),
            Just("head.json".to_owned()),
            Just("a".to_owned()),
            Just("vm-000000".to_owned()),
            Just("_owner".to_owned()),
            Just("x.tmp".to_owned()),
            "[a-z0-9._ -]{1,12}",
        ]
    }

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..2048),
            // Plausible JSON lines, torn or not.
            "(\\{\"body\":\\{\"ch\":\"[0-9a-f]{0,8}\",\"seq\":[0-9]{1,3}\\},\"sig\":\"\"\\}\n?){0,4}"
                .prop_map(String::into_bytes),
            Just(b"\n\n\n".to_vec()),
        ]
    }

    fn addition() -> impl Strategy<Value = Addition> {
        let place = prop_oneof![
            Just(Place::Feeds),
            (0..4usize).prop_map(Place::Role),
            (0..6usize).prop_map(Place::Feed),
        ];
        let what = prop_oneof![
            3 => bytes().prop_map(What::File),
            3 => bytes().prop_map(What::Append),
            1 => Just(What::Dir),
            2 => (0..4usize).prop_map(What::Link),
            1 => Just(What::Fifo),
        ];
        (place, names(), what).prop_map(|(place, name, what)| Addition { place, name, what })
    }

    fn dirs_in(dir: &Path) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = fs::read_dir(dir)
            .map(|r| {
                r.flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }

    /// Applies an addition to the channel copy in `root`; link targets are
    /// real files and folders outside it that must never be read or written.
    fn apply(root: &Path, outside: &[PathBuf], add: &Addition) {
        let feeds = root.join("feeds");
        let roles = dirs_in(&feeds);
        let feed_dirs: Vec<PathBuf> = roles.iter().flat_map(|r| dirs_in(r)).collect();
        let at = match &add.place {
            Place::Feeds => feeds,
            Place::Role(i) => roles[i % roles.len()].clone(),
            Place::Feed(i) => feed_dirs[i % feed_dirs.len()].clone(),
        };
        let path = at.join(&add.name);
        match &add.what {
            What::Append(bytes) => {
                if fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                    use std::io::Write as _;
                    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
                    f.write_all(bytes).unwrap();
                }
            }
            _ if fs::symlink_metadata(&path).is_ok() => {} // never replace what stands
            What::File(bytes) => fs::write(&path, bytes).unwrap(),
            What::Dir => fs::create_dir(&path).unwrap(),
            What::Link(i) => symlink(&outside[i % outside.len()], &path).unwrap(),
            What::Fifo => {
                assert!(
                    Command::new("mkfifo")
                        .arg(&path)
                        .status()
                        .unwrap()
                        .success()
                );
            }
        }
    }

    fn copy_tree(from: &Path, to: &Path) {
        let ok = Command::new("cp")
            .arg("-a")
            .arg(from)
            .arg(to)
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn whatever_a_peer_adds_the_state_is_the_clean_one(
            first in proptest::collection::vec(addition(), 1..8),
            second in proptest::collection::vec(addition(), 0..8),
        ) {
            let base = base();
            let tmp = tempfile::tempdir().unwrap();
            let root = tmp.path().join("channel");
            copy_tree(&base.local.dir, &root);
            // Things outside the channel a link may point at: a copy of a
            // real segment, a secret, a folder, the file system's root.
            let outside_dir = tmp.path().join("outside");
            copy_tree(&base.local.dir.join("feeds"), &outside_dir);
            let secret = tmp.path().join("secret");
            fs::write(&secret, b"secret\n").unwrap();
            let seg = dirs_in(&dirs_in(&outside_dir)[1])[0].join("00000001.jsonl");
            let outside = vec![seg, secret.clone(), outside_dir, PathBuf::from("/")];

            let started = Instant::now();
            // Incremental: a reader that saw the clean folder, then each wave.
            let mut inc = open(&root, &Home::at(tmp.path().join("home-inc")));
            inc.catch_up().unwrap();
            for add in &first {
                apply(&root, &outside, add);
            }
            inc.catch_up().unwrap();
            for add in &second {
                apply(&root, &outside, add);
            }
            inc.catch_up().unwrap();
            let incremental = inc.index().digest().unwrap();
            // Rebuilt: a fresh home reads the final folder at once.
            let mut fresh = open(&root, &Home::at(tmp.path().join("home-fresh")));
            fresh.reindex(None).unwrap();
            let rebuilt = fresh.index().digest().unwrap();
            prop_assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
            prop_assert_eq!(&incremental, &base.digest);
            prop_assert_eq!(&rebuilt, &base.digest);
            prop_assert_eq!(fs::read(&secret).unwrap(), b"secret\n".to_vec());
        }
    }
}

#[test]
fn verify_shows_a_hostile_file_name_inert() {
    let tc = TestChannel::new(&["a", "b"]);
    send_ok(&tc, "first");
    // A name that would clear the screen and forge a line of its own.
    let name = "x\u{1b}[2J\nquarantine: x:0: all clean";
    fs::write(feed_dir(&tc, "a").join(name), b"hello\n").unwrap();
    let out = cli_within(&tc, &["verify"], Duration::from_secs(30));
    let t = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(!t.contains('\u{1b}'), "{t:?}");
    assert!(
        t.lines().all(|l| !l.starts_with("quarantine:")),
        "a forged line: {t:?}"
    );
    assert!(t.contains("\\u{1b}[2J\\nquarantine"), "{t:?}");
}

#[test]
fn a_symlinked_feeds_folder_is_an_alarm_and_not_read() {
    let tc = TestChannel::new(&["a", "b"]);
    send_ok(&tc, "first");
    // The whole feeds folder swapped for a link to a copy elsewhere.
    let elsewhere = tc.tmp.path().join("elsewhere");
    fs::rename(tc.dir.join("feeds"), &elsewhere).unwrap();
    symlink(&elsewhere, tc.dir.join("feeds")).unwrap();
    let out = cli_within(&tc, &["verify"], Duration::from_secs(30));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("wrong_type: feeds:0") && t.contains("symbolic link"),
        "{t}"
    );
    assert!(
        t.contains("0 records verified"),
        "the linked folder was read: {t}"
    );
    // And nothing is written through it.
    let before = fs::read_dir(&elsewhere).unwrap().count();
    assert!(!send(&tc, "second", "body").status.success());
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), before);
}
