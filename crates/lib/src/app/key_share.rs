//! The API key shared through the channel folder, sealed to each admitted
//! device (`countersign memory api-key --share`), and taken up by the
//! others.
//!
//! Owns when this device writes its `api-key.json` (a share, a re-seal when
//! the admitted feeds changed — a device admitted, retired or rotated — and a
//! removal) and when it takes up another device's (the newest share or
//! removal, signed by an admitted feed, a copy sealed to one of this
//! device's feeds). The sealing is `core::sealed_key`; the key file in the
//! home is `store::home::api_key`; what was shared and taken up is kept in the
//! channel's state folder. It never prints or logs the key.

use serde::{Deserialize, Serialize};

use super::refusal::AppResult;
use super::session::Session;
use crate::core::ids::FeedId;
use crate::core::record::parse_pubkey;
use crate::core::sealed_key::{self, KEY_FILE, MAX_KEY_FILE, SharedKey};
use crate::store::error::IoContext as _;
use crate::store::home::KeyName;
use crate::store::{ChannelDir, folder_file, home::api_key, home::state_file};

/// The book's file in the channel's state folder.
const BOOK_FILE: &str = "api_key_share.json";

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Book {
    /// What this device last wrote: its date, whether a removal, and the
    /// recipients (`feed=pubkey`) it was sealed to.
    wrote: Option<(i64, bool, Vec<String>)>,
    /// The date of the newest share or removal taken up from another device.
    took: Option<i64>,
    /// True when the key stored here came from a share (a removal that
    /// travels deletes only such a key).
    from_share: bool,
}

fn load(s: &Session) -> Book {
    state_file::load(s.channel().state_dir(), BOOK_FILE).unwrap_or_default()
}

fn save(s: &Session, b: &Book) -> AppResult<()> {
    state_file::save(s.channel().state_dir(), BOOK_FILE, b)?;
    Ok(())
}

/// Every admitted feed of the other devices (not frozen), with its key: the
/// recipients of a share.
fn recipients(s: &Session) -> AppResult<Vec<(FeedId, ed25519_dalek::VerifyingKey, String)>> {
    let me = s.channel().device().id.clone();
    let mut out = Vec::new();
    for f in s.index().admitted_feeds()? {
        let Ok(feed) = FeedId::try_from(f.feed) else {
            continue;
        };
        if feed.is_owner() || feed.device() == me || f.frozen.is_some() {
            continue;
        }
        if let Some(k) = parse_pubkey(&f.pubkey) {
            out.push((feed, k, f.pubkey));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// This device's feed that writes the file, with its key.
fn own_feed(s: &Session) -> AppResult<Option<(FeedId, ed25519_dalek::SigningKey)>> {
    let Some(role) = s
        .role_opt()
        .cloned()
        .or_else(|| Session::keyed_role(s.channel()))
    else {
        return Ok(None);
    };
    let id = s.channel().dir().id().to_owned();
    let Some(key) = s.channel().home().load_key(&id, KeyName::Role(&role))? else {
        return Ok(None);
    };
    let feed = FeedId::new(role.as_str(), &s.channel().device().id);
    Ok(feed.map(|f| (f, key)))
}

/// Writes this device's file: `key` sealed to every recipient, or a
/// removal (`None`). The number of devices it was sealed to.
fn write(s: &Session, book: &mut Book, key: Option<&str>, date: i64) -> AppResult<usize> {
    let Some((feed, signing)) = own_feed(s)? else {
        return Err(super::AppError::value(
            "this device holds no role's key of the channel: it cannot share the API key here",
        ));
    };
    let to = recipients(s)?;
    let copies = match key {
        Some(k) => to
            .iter()
            .map(|(f, v, _)| {
                let mut seed = [0u8; 32];
                getrandom::fill(&mut seed).expect("the OS random source works");
                sealed_key::seal(k.as_bytes(), f, v, seed)
            })
            .collect(),
        None => Vec::new(),
    };
    let devices: std::collections::BTreeSet<&str> = to.iter().map(|(f, _, _)| f.device()).collect();
    let text = sealed_key::encode(
        &SharedKey {
            feed: feed.clone(),
            date,
            removed: key.is_none(),
            to: copies,
        },
        &signing,
    );
    let dir = s.channel().dir().feed_dir(&feed);
    std::fs::create_dir_all(&dir)
        .at(&dir)
        .map_err(crate::store::StoreError::from)?;
    folder_file::replace(&dir.join(KEY_FILE), text.as_bytes(), true)
        .map_err(crate::store::StoreError::from)?;
    book.wrote = Some((
        date,
        key.is_none(),
        to.iter().map(|(f, _, k)| format!("{f}={k}")).collect(),
    ));
    save(s, book)?;
    Ok(devices.len())
}

/// `api-key --share`: seals the key stored here to every admitted device.
/// The number of devices.
pub fn share(s: &mut Session, now: i64) -> AppResult<usize> {
    s.catch_up()?;
    let Some(key) = api_key::load(s.channel().home())? else {
        return Err(super::AppError::value(
            "no API key is stored here: run `countersign memory api-key --share` and paste it",
        ));
    };
    let mut book = load(s);
    write(s, &mut book, Some(&key), now)
}

/// `api-key --remove` on a device that shared: the removal travels the same
/// way. True when one was written.
pub fn unshare(s: &mut Session, now: i64) -> AppResult<bool> {
    let mut book = load(s);
    match book.wrote {
        Some((_, false, _)) => {
            write(s, &mut book, None, now)?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Keeps the share current: re-sealed when the admitted feeds changed, and
/// another device's newer share or removal taken up. True when the key
/// stored here changed: the caller then forgets the API's pause
/// (`app::compaction_api::take_up_shared_key` does both).
pub fn refresh(s: &mut Session) -> AppResult<bool> {
    s.catch_up()?;
    let mut book = load(s);
    let changed = take_up(s, &mut book)?;
    if let Some((date, false, sealed_to)) = book.wrote.clone() {
        let now_to: Vec<String> = recipients(s)?
            .iter()
            .map(|(f, _, k)| format!("{f}={k}"))
            .collect();
        if now_to != sealed_to
            && let Some(key) = api_key::load(s.channel().home())?
        {
            write(s, &mut book, Some(&key), date)?;
        }
    }
    Ok(changed)
}

/// Takes up the newest share or removal of another device, if newer than
/// what this device wrote or took up.
fn take_up(s: &mut Session, book: &mut Book) -> AppResult<bool> {
    let me = s.channel().device().id.clone();
    let mut newest: Option<SharedKey> = None;
    for f in s.index().admitted_feeds()? {
        let Ok(feed) = FeedId::try_from(f.feed) else {
            continue;
        };
        if feed.is_owner() || feed.device() == me || f.frozen.is_some() {
            continue;
        }
        let Some(k) = parse_pubkey(&f.pubkey) else {
            continue;
        };
        let path = s.channel().dir().feed_dir(&feed).join(KEY_FILE);
        let Ok(bytes) = folder_file::read(&path, MAX_KEY_FILE) else {
            continue;
        };
        if let Some(shared) = sealed_key::decode(&bytes, &feed, &k)
            && newest.as_ref().is_none_or(|n| shared.date > n.date)
        {
            newest = Some(shared);
        }
    }
    let Some(newest) = newest else {
        return Ok(false);
    };
    let seen = book
        .took
        .max(book.wrote.as_ref().map(|w| w.0))
        .unwrap_or(i64::MIN);
    if newest.date <= seen {
        return Ok(false);
    }
    let home = s.channel().home().clone();
    if newest.removed {
        book.took = Some(newest.date);
        let had = book.from_share && api_key::remove(&home)?;
        book.from_share = false;
        save(s, book)?;
        return Ok(had);
    }
    let id = s.channel().dir().id().to_owned();
    for copy in &newest.to {
        if copy.feed.device() != me {
            continue;
        }
        let Ok(role) = crate::core::ids::Role::new(copy.feed.role()) else {
            continue;
        };
        let Some(key) = home.load_key(&id, KeyName::Role(&role))? else {
            continue;
        };
        if let Some(plain) = sealed_key::open(copy, &key)
            && let Ok(text) = String::from_utf8(plain)
        {
            api_key::save(&home, &text)?;
            book.took = Some(newest.date);
            book.from_share = true;
            save(s, book)?;
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether any device's shared-key file is in the folder: a device with no
/// key of its own looks for a share only then (a few `stat`s).
pub fn any_share(dir: &ChannelDir) -> bool {
    let Ok(roles) = std::fs::read_dir(dir.feeds()) else {
        return false;
    };
    roles.flatten().any(|r| {
        std::fs::read_dir(r.path())
            .map(|ds| ds.flatten().any(|d| d.path().join(KEY_FILE).is_file()))
            .unwrap_or(false)
    })
}
