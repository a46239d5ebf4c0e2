//! What a command prints on stdout.
//!
//! `println!` panics when the reader has gone (`countersign log | head`
//! closes the pipe after ten lines). A command's output goes through here
//! instead: a reader that went away ends the command at once, quietly and
//! with success (the reader chose to stop; a pipeline's status is its last
//! command's), and any other failure to write is reported on stderr with
//! exit code 2. Ending there is safe wherever a command prints:
//! every write it made before is complete and durable, or rolled back as
//! after a crash.

use std::cell::RefCell;
use std::fmt;
use std::io::{self, Write as _};

thread_local! {
    /// Output held back by [`hold`] until [`release`].
    static HELD: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Holds back what is printed from now on until [`release`]: a command that
/// writes files prints its whole report only once they are written, so a
/// reader that went away can still make it put them back.
pub fn hold() {
    HELD.with(|h| *h.borrow_mut() = Some(String::new()));
}

/// Prints what was held back and stops holding; the error when stdout
/// cannot take it (a reader that went away included).
pub fn release() -> io::Result<()> {
    let Some(text) = HELD.with(|h| h.borrow_mut().take()) else {
        return Ok(());
    };
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush())
}

/// Writes `args` to stdout and flushes; see the module docs for a failure.
pub fn print(args: fmt::Arguments<'_>) {
    let held = HELD.with(|h| {
        h.borrow_mut()
            .as_mut()
            .map(|buf| fmt::Write::write_fmt(buf, args).is_ok())
    });
    if held.is_some() {
        return;
    }
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        if e.kind() == io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("countersign: cannot write to stdout: {e}");
        std::process::exit(2);
    }
}

/// `println!` for a command's output (see [`print`]).
macro_rules! outln {
    () => {
        $crate::cli::output::print(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::output::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` for a command's output (see [`print`]).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::output::print(format_args!($($arg)*))
    };
}

pub(crate) use {out, outln};
