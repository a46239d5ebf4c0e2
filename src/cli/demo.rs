//! `countersign demo`: a throwaway channel, two roles, a short exchange
//! through the real MCP server (this binary, spawned once per role), printed.

use std::path::Path;
use std::process::ExitCode;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use super::Cli;
use super::mcp_client::{self, Client};
use crate::app::init::create_channel;
use crate::cli::output::outln;
use crate::store::Home;

/// Arguments of `demo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Keep the channel folder instead of deleting it at the end (its path is printed).
    #[arg(long)]
    pub keep: bool,
}

/// Runs the demo.
pub fn run(_cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let tmp = tempfile::Builder::new()
        .prefix("countersign-demo-")
        .tempdir()?;
    let dir = tmp.path().join("channel");
    let home = tmp.path().join("home");
    create_channel(
        &dir,
        &["frontend", "backend"],
        "demo",
        &Home::at(home.clone()),
    )?;
    outln!(
        "A throwaway channel with two roles, frontend and backend, in {}",
        dir.display()
    );
    outln!(
        "Each role is a real `countersign mcp` server on stdio; every step below is a tool call.\n"
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(play(&dir, &home))?;
    outln!("\nThe channel is a folder of signed feeds; anyone can read it offline:\n");
    let exe = std::env::current_exe()?;
    let status = std::process::Command::new(&exe)
        .args(["--channel"])
        .arg(&dir)
        .arg("log")
        .env("COUNTERSIGN_HOME", &home)
        .status()?;
    anyhow::ensure!(status.success(), "countersign log failed");
    if a.keep {
        let kept = tmp.keep();
        outln!(
            "\nKept in {} (set COUNTERSIGN_HOME={} to act as its roles).",
            kept.display(),
            kept.join("home").display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn spawn(dir: &Path, home: &Path, role: &str) -> anyhow::Result<Client> {
    Ok(
        mcp_client::spawn(&std::env::current_exe()?, dir, home, role)
            .await?
            .0,
    )
}

async fn call(c: &Client, who: &str, tool: &str, args: Value) -> anyhow::Result<Value> {
    outln!("{who:>8} → {tool}({})", compact(&args));
    mcp_client::call(c, tool, args).await
}

fn compact(v: &Value) -> String {
    let s = v.to_string();
    let s = s.trim_start_matches('{').trim_end_matches('}');
    if s.chars().count() > 90 {
        format!("{}…", s.chars().take(90).collect::<String>())
    } else {
        s.to_owned()
    }
}

fn show(label: &str, text: &str) {
    outln!("{:>8}   {label}: {text}", "");
}

async fn play(dir: &Path, home: &Path) -> anyhow::Result<()> {
    let fe = spawn(dir, home, "frontend").await?;
    let be = spawn(dir, home, "backend").await?;
    let roles = call(&fe, "frontend", "list_roles", json!({})).await?;
    show("roles", &roles["roles"].to_string());
    let asked = call(
        &fe,
        "frontend",
        "send_message",
        json!({"to": "backend", "topic": "Login API: which fields?", "kind": "question",
               "body": "The login form needs the response shape of POST /login. Which fields, and is the token a JWT?"}),
    )
    .await?;
    let q = asked["id"].as_str().unwrap_or_default().to_owned();
    show("sent", &format!("#{q}"));
    let inbox = call(&be, "backend", "read_inbox", json!({})).await?;
    for m in inbox["result"].as_array().into_iter().flatten() {
        show(
            "inbox",
            &format!(
                "#{} from {}: {}",
                m["id"].as_str().unwrap_or(""),
                m["from"].as_str().unwrap_or(""),
                m["topic"].as_str().unwrap_or("")
            ),
        );
    }
    let answered = call(
        &be,
        "backend",
        "send_message",
        json!({"to": "frontend", "topic": "Re: Login API", "kind": "answer", "reply_to": q,
               "body": "{user_id, display_name, token}; the token is a JWT valid for 1 hour. Schema in api/login.json."}),
    )
    .await?;
    show(
        "sent",
        &format!("#{}", answered["id"].as_str().unwrap_or_default()),
    );
    call(&be, "backend", "mark_read", json!({"message_id": q})).await?;
    let inbox = call(&fe, "frontend", "read_inbox", json!({})).await?;
    for m in inbox["result"].as_array().into_iter().flatten() {
        show(
            "inbox",
            &format!(
                "#{} {}: {}",
                m["id"].as_str().unwrap_or(""),
                m["topic"].as_str().unwrap_or(""),
                m["body"].as_str().unwrap_or("")
            ),
        );
    }
    let hits = call(
        &fe,
        "frontend",
        "search_messages",
        json!({"query": "jwt token"}),
    )
    .await?;
    for h in hits["result"].as_array().into_iter().flatten() {
        show(
            "hit",
            &format!(
                "#{} {}",
                h["id"].as_str().unwrap_or(""),
                h["snippet"].as_str().unwrap_or("")
            ),
        );
    }
    let thread = call(
        &fe,
        "frontend",
        "get_thread",
        json!({"message_id": q, "fields": ["id", "from", "topic"]}),
    )
    .await?;
    for m in thread["result"].as_array().into_iter().flatten() {
        show(
            "thread",
            &format!(
                "#{} {}: {}",
                m["id"].as_str().unwrap_or(""),
                m["from"].as_str().unwrap_or(""),
                m["topic"].as_str().unwrap_or("")
            ),
        );
    }
    let refused = fe
        .call_tool(
            CallToolRequestParams::new("send_message").with_arguments(
                json!({"to": "frontend", "topic": "note to self", "body": "x"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ),
        )
        .await?;
    outln!("{:>8} → send_message(to: frontend …)", "frontend");
    show(
        "refused",
        &refused.structured_content.unwrap_or(Value::Null)["message"].to_string(),
    );
    fe.cancel().await?;
    be.cancel().await?;
    Ok(())
}
