//! `countersign serve`'s management tools over real HTTP: a real server
//! process, rmcp's client over streamable HTTP, real tokens.

use serde_json::json;

use crate::common::TestChannel;
use crate::common::serve::Served;

/// The shared helpers work: a server on a port of its own, a role token from
/// `token create`, and an MCP session over HTTP acting as that role.
#[tokio::test]
async fn a_role_token_reaches_its_role_over_http() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let out = ch.cli(&["--role", "frontend", "token", "create"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let dir = ch.dir.to_str().unwrap();
    let served = Served::start(&ch.home, &["--channel", dir], &[]);
    assert_eq!(served.get("/healthz", None).0, 200);
    let client = served.client(&token).await;
    let roles = client.call("list_roles", json!({})).await.ok();
    assert_eq!(roles["you"], "frontend", "{roles}");
    client.close().await;
    assert!(served.try_client("cst_not-a-token").await.is_err());
    assert_eq!(served.request("POST", "/mcp", None, Some("{}")).0, 401);
}
