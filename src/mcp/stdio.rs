//! This process's stdin and stdout as the MCP server reads and writes them.
//!
//! Tokio's own `stdin()` and `stdout()` hand every read and every write to a
//! thread of its blocking pool, since a terminal or a file cannot be polled:
//! each call then woke two more threads than it needed (the floor of a call
//! at rmcp's client went from 0.196 to 0.078 ms without them). A client
//! starts the server with a pipe (Codex, Python's `mcp`) or a socket pair
//! (Node's `child_process`) on both ends, and those the runtime polls itself:
//! they are opened as such here, in non-blocking mode. Anything else (a
//! terminal, a file) keeps tokio's way.
//!
//! Owns that choice; must not read or write a byte itself.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt as _;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

/// What the server reads its messages from.
pub type Input = Box<dyn AsyncRead + Unpin + Send>;

/// What the server writes its messages to.
pub type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// Stdin, polled by the runtime when it is a pipe or a socket. Must be called
/// inside the runtime.
pub fn input() -> Input {
    polled(io::stdin().as_fd())
        .and_then(|fd| match fd {
            Polled::Pipe(fd) => pipe::Receiver::from_owned_fd(fd)
                .ok()
                .map(|r| Box::new(r) as Input),
            Polled::Socket(fd) => socket(fd).map(|s| Box::new(s) as Input),
        })
        .unwrap_or_else(|| Box::new(tokio::io::stdin()))
}

/// Stdout, polled by the runtime when it is a pipe or a socket. Must be
/// called inside the runtime.
pub fn output() -> Output {
    polled(io::stdout().as_fd())
        .and_then(|fd| match fd {
            Polled::Pipe(fd) => pipe::Sender::from_owned_fd(fd)
                .ok()
                .map(|w| Box::new(w) as Output),
            Polled::Socket(fd) => socket(fd).map(|s| Box::new(s) as Output),
        })
        .unwrap_or_else(|| Box::new(tokio::io::stdout()))
}

/// True if stdin has bytes to read within `wait` (or is closed, or cannot
/// be polled): whether the client has already sent its next message. A
/// blocking poll, for waits far below the runtime's millisecond timers.
pub fn input_within(wait: std::time::Duration) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdin = io::stdin();
    let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
    let timeout = Timespec {
        tv_sec: 0,
        tv_nsec: i64::try_from(wait.as_nanos().min(999_999_999)).unwrap_or(0),
    };
    !matches!(poll(&mut fds, Some(&timeout)), Ok(0))
}

/// A descriptor the runtime can poll: a copy of the standard one (same open
/// file, so the same stream), or `None` for anything else.
enum Polled {
    Pipe(OwnedFd),
    Socket(OwnedFd),
}

fn polled(fd: std::os::fd::BorrowedFd<'_>) -> Option<Polled> {
    let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
    let kind = file.metadata().ok()?.file_type();
    let fd = OwnedFd::from(file);
    if kind.is_fifo() {
        Some(Polled::Pipe(fd))
    } else if kind.is_socket() {
        Some(Polled::Socket(fd))
    } else {
        None
    }
}

/// A stream socket in non-blocking mode, registered with the runtime.
fn socket(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
    let s = std::os::unix::net::UnixStream::from(fd);
    s.set_nonblocking(true).ok()?;
    tokio::net::UnixStream::from_std(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes_and_sockets_are_polled_anything_else_is_not() {
        let (reader, writer) = io::pipe().unwrap();
        assert!(matches!(polled(reader.as_fd()), Some(Polled::Pipe(_))));
        assert!(matches!(polled(writer.as_fd()), Some(Polled::Pipe(_))));
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert!(matches!(polled(a.as_fd()), Some(Polled::Socket(_))));
        let file = tempfile::tempfile().unwrap();
        assert!(polled(file.as_fd()).is_none());
    }

    #[tokio::test]
    async fn a_socket_carries_bytes_both_ways_once_polled() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let (ours, mut theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut s = socket(ours.into()).unwrap();
        std::io::Write::write_all(&mut theirs, b"ping\n").unwrap();
        let mut got = [0u8; 5];
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"ping\n");
        s.write_all(b"pong\n").await.unwrap();
        let mut back = [0u8; 5];
        std::io::Read::read_exact(&mut theirs, &mut back).unwrap();
        assert_eq!(&back, b"pong\n");
    }
}
