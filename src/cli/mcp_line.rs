//! The command line of `countersign mcp`, parsed against that command alone.
//!
//! Clients start a server at every session and wait for its first answers
//! (5 ms from spawn to the tool list is the start's budget,
//! docs/benchmarks.md). Parsing with the whole command line built every
//! command's arguments first: 0.7 ms the first time in a process, 0.2 ms
//! after, against 0.04 ms for `mcp`'s own and the global options; the
//! start's median is 0.2 ms shorter for it. Whatever this parse does not
//! take (help, a mistake) goes through the whole command instead, so every
//! message and exit code stays the one clap gives there.
//!
//! Owns only that shortcut; must not add meaning to an argument. A test
//! holds its arguments to the whole command's.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Arg, ArgAction, Args as _, FromArgMatches as _, Parser as _};

use super::{Cli, Command, mcp};

impl Cli {
    /// Parses the process's arguments (`args`, the program's name first).
    pub fn parse_args(args: Vec<OsString>) -> Self {
        if args.get(1).is_some_and(|a| a == "mcp")
            && let Some(cli) = Self::mcp_alone(&args)
        {
            return cli;
        }
        Self::parse_from(args)
    }

    /// `args` as a `countersign mcp` command line, if this parse takes it.
    fn mcp_alone(args: &[OsString]) -> Option<Self> {
        let matches = mcp_command().try_get_matches_from(args).ok()?;
        let (_, sub) = matches.subcommand()?;
        let a = mcp::Args::from_arg_matches(sub).ok()?;
        let path = |id: &str| matches.get_one::<PathBuf>(id).cloned();
        Some(Self {
            channel: path("channel"),
            role: matches.get_one::<String>("role").cloned(),
            home: path("home"),
            bound: Default::default(),
            binding_check: Default::default(),
            command: Command::Mcp(a),
        })
    }
}

/// The program with its global options and `mcp` as its one command.
fn mcp_command() -> clap::Command {
    let global = |id: &'static str| Arg::new(id).long(id).global(true).action(ArgAction::Set);
    clap::Command::new("countersign")
        .arg(global("channel").value_parser(clap::value_parser!(PathBuf)))
        .arg(global("role"))
        .arg(global("home").value_parser(clap::value_parser!(PathBuf)))
        .subcommand(mcp::Args::augment_args(clap::Command::new("mcp")))
}

/// The ids of `command`'s arguments (globals included once built).
#[cfg(test)]
fn arg_ids(command: &clap::Command) -> Vec<String> {
    let mut ids: Vec<String> = command
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .filter(|id| id != "help")
        .collect();
    ids.sort();
    ids
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    #[test]
    fn mcp_alone_takes_the_arguments_the_whole_command_gives_mcp() {
        let mut whole = Cli::command();
        whole.build();
        let mut alone = mcp_command();
        alone.build();
        let sub = |c: &clap::Command| arg_ids(c.find_subcommand("mcp").expect("mcp is a command"));
        assert_eq!(sub(&alone), sub(&whole));
    }

    #[test]
    fn every_mcp_line_parses_as_the_whole_command_parses_it_or_is_left_to_it() {
        let taken = [
            "mcp",
            "mcp --role backend",
            "mcp --role backend --channel /ch --home /h",
            "mcp --channel=/ch --sync-every off --tools mail,debts",
            "mcp --sync-every 2m --board-listen 127.0.0.1:4100 --role r",
        ];
        for line in taken {
            let args: Vec<OsString> = std::iter::once("countersign")
                .chain(line.split(' '))
                .map(OsString::from)
                .collect();
            let alone = Cli::mcp_alone(&args).unwrap_or_else(|| panic!("`{line}` not taken"));
            let whole = Cli::try_parse_from(&args).unwrap();
            assert_eq!(format!("{alone:?}"), format!("{whole:?}"), "{line}");
        }
        for line in [
            "mcp --help",
            "mcp --version",
            "mcp --role",
            "mcp --tools nothing",
            "mcp --sync-every 1ms",
            "mcp --role a --role b",
            "mcp extra",
        ] {
            let args: Vec<OsString> = std::iter::once("countersign")
                .chain(line.split(' '))
                .map(OsString::from)
                .collect();
            assert!(Cli::mcp_alone(&args).is_none(), "`{line}` was taken");
            assert!(
                Cli::try_parse_from(&args).is_err(),
                "`{line}`: the whole command says something of its own"
            );
        }
    }
}
