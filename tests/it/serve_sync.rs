//! `countersign serve` syncs its hosted channel in the background by
//! default, so what is written on its machine reaches the others with
//! nobody running `countersign sync` there, and no flag.

use std::time::{Duration, Instant};

use crate::common::machines::World;
use crate::common::serve::Served;

#[test]
fn a_server_publishes_its_machines_writes_by_itself_with_no_flag() {
    let w = World::git(2, &["frontend", "backend"]);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    let _server = Served::start(&a.home, &["--channel", a.dir.to_str().unwrap()], &[]);
    // A write on the server's machine, by another process (as an HTTP
    // agent's write would be by the server itself): the server's folder
    // watcher sees it and its sync loop publishes it.
    a.send("frontend", "backend", "published by the server");
    let start = Instant::now();
    loop {
        b.sync();
        if b.verified_topics()
            .iter()
            .any(|t| t == "published by the server")
        {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(40),
            "the write never reached the other machine: {:?}",
            b.verified_topics()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}
