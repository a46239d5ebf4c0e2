//! A real MCP client for what drives a `countersign mcp` server: `demo`
//! (this binary's own server) and `countersign-bench` (the `countersign`
//! beside it). Spawns the server and calls its tools; it lives here because
//! `demo`, a product command, needs it.

use std::path::Path;

use anyhow::{Context as _, bail};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::Value;

/// A connected client.
pub type Client = RunningService<RoleClient, ()>;

/// Spawns `exe mcp --role ROLE --channel DIR` with `COUNTERSIGN_HOME=home`
/// (ignoring role and channel variables of the caller's environment) and
/// completes the handshake. Returns the client and the server's pid.
pub async fn spawn(
    exe: &Path,
    dir: &Path,
    home: &Path,
    role: &str,
) -> anyhow::Result<(Client, Option<u32>)> {
    spawn_with(exe, dir, home, role, &[]).await
}

/// Like [`spawn`], with extra arguments to `mcp` (e.g. `--sync-every 1s`).
pub async fn spawn_with(
    exe: &Path,
    dir: &Path,
    home: &Path,
    role: &str,
    extra: &[&str],
) -> anyhow::Result<(Client, Option<u32>)> {
    spawn_command(server_command(exe, dir, home, role, extra)).await
}

/// Spawns the server `command` starts and completes the handshake.
/// Returns the client and the server's pid.
pub async fn spawn_command(
    command: std::process::Command,
) -> anyhow::Result<(Client, Option<u32>)> {
    let transport = TokioChildProcess::new(tokio::process::Command::from(command))
        .context("spawning the MCP server")?;
    let pid = transport.id();
    let client = ().serve(transport).await.context("MCP handshake")?;
    Ok((client, pid))
}

/// The command that starts `exe mcp [extra] --role ROLE --channel DIR` with
/// `COUNTERSIGN_HOME=home`, ignoring the role and channel variables of the
/// caller's environment.
pub fn server_command(
    exe: &Path,
    dir: &Path,
    home: &Path,
    role: &str,
    extra: &[&str],
) -> std::process::Command {
    let mut c = mcp_command(exe, home, extra);
    c.arg("--role").arg(role).arg("--channel").arg(dir);
    c
}

/// The command that starts `exe mcp [extra]` with `COUNTERSIGN_HOME=home`,
/// ignoring the role and channel variables of the caller's environment:
/// the role and channel come from its arguments or, with none, from the
/// project binding of the folder it starts in.
pub fn mcp_command(exe: &Path, home: &Path, extra: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new(exe);
    c.arg("mcp")
        .args(extra)
        .env("COUNTERSIGN_HOME", home)
        .env_remove("COUNTERSIGN_ROLE")
        .env_remove("AI_AGENT_CHANNEL_ROLE")
        .env_remove("COUNTERSIGN_CHANNEL");
    c
}

/// Calls a tool and returns its structured result; a refusal is an error.
pub async fn call(client: &Client, tool: &str, args: Value) -> anyhow::Result<Value> {
    let Value::Object(args) = args else {
        bail!("arguments must be an object")
    };
    let res = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .with_context(|| format!("calling {tool}"))?;
    let v = res.structured_content.unwrap_or(Value::Null);
    if res.is_error == Some(true) {
        bail!("{tool} was refused: {v}");
    }
    Ok(v)
}
