//! In-process access to a channel: the library's own API on real files and a
//! real SQLite index, for tests of feeds and ingest.

use std::path::{Path, PathBuf};

use countersign::app::Session;
use countersign::app::init::create_channel;
use countersign::app::send::{SendRequest, send_message};
use countersign::core::ids::Role;
use countersign::store::{Channel, ChannelDir, Home};

/// A channel folder and a home in a temporary folder.
pub struct Local {
    pub tmp: tempfile::TempDir,
    pub dir: PathBuf,
    pub home: Home,
}

impl Local {
    /// A new channel with `roles`.
    pub fn new(roles: &[&str]) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("channel");
        let home = Home::at(tmp.path().join("home"));
        create_channel(&dir, roles, "local", &home).unwrap();
        Self { tmp, dir, home }
    }

    /// The home's folder (what `COUNTERSIGN_HOME` names).
    pub fn home_root(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    /// Opens the channel (a fresh index handle, as another process would).
    pub fn channel(&self) -> Channel {
        open(&self.dir, &self.home)
    }

    /// A session acting as `role`.
    pub fn session(&self, role: &str) -> Session {
        Session::new(self.channel(), Some(Role::new(role).unwrap())).unwrap()
    }

    /// The folder of `role`'s feed on this device.
    pub fn feed_dir(&self, role: &str) -> PathBuf {
        let device = self.home.device().unwrap().id;
        self.dir.join("feeds").join(role).join(device)
    }
}

/// Opens a channel folder with a home.
pub fn open(dir: &Path, home: &Home) -> Channel {
    Channel::open(ChannelDir::open(dir).unwrap(), home.clone()).unwrap()
}

/// Sends a point-to-point message and returns its short id.
pub fn send(s: &mut Session, to: &str, topic: &str, body: &str) -> String {
    let out = send_message(s, SendRequest::new(to, topic, body)).unwrap();
    out.id
}

impl Local {
    /// Appends to `role`'s own feed, by hand, a record of `op` signed with the
    /// feed's real key and chained to its last record: what a peer writing the
    /// folder directly could put there, past every check of the writer.
    pub fn forge(&self, role: &str, op: &countersign::core::op::Op) {
        use countersign::core::hlc::Hlc;
        use countersign::core::record::{self, Header};
        use countersign::store::KeyName;
        let seg = countersign::store::survey::list_segments(&self.feed_dir(role))
            .unwrap()
            .pop()
            .unwrap()
            .path;
        let ch = ChannelDir::open(&self.dir).unwrap().id().to_owned();
        let r = Role::new(role).unwrap();
        let key = self.home.load_key(&ch, KeyName::Role(&r)).unwrap().unwrap();
        let text = std::fs::read_to_string(&seg).unwrap();
        let last = record::decode(text.lines().last().unwrap().as_bytes()).unwrap();
        let header = Header {
            ch,
            feed: last.header.feed.clone(),
            seq: last.header.seq + 1,
            prev: Some(last.id),
            hlc: Hlc(last.header.hlc.0 + 1, 0),
        };
        let forged = record::encode(&header, op, &key);
        let mut f = std::fs::OpenOptions::new().append(true).open(&seg).unwrap();
        std::io::Write::write_all(&mut f, forged.to_line().as_bytes()).unwrap();
    }
}

/// The reasons of the quarantines `channel`'s index holds.
pub fn quarantined(channel: &Channel) -> Vec<String> {
    channel
        .index()
        .problems()
        .unwrap()
        .into_iter()
        .filter(|p| p.kind == countersign::store::ProblemKind::Quarantine)
        .map(|p| p.reason)
        .collect()
}
