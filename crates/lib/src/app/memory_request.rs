//! The request types of the memory tools (memory_view, memory_zoom,
//! memory_read, memory_search, memory_thread, memory_date): the tools'
//! parameters themselves, deserialized by the MCP adapter and handed to
//! `memory`'s use cases. Their descriptions are a word or two, as a
//! parameter's name says most of it (every session pays for these in
//! tools/list); the use cases check the values and their refusals teach
//! the rest.

use schemars::JsonSchema;
use serde::Deserialize;

/// What memory_view was asked for.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct ViewRequest {
    /// 0 or next_offset.
    #[serde(default)]
    pub offset: i64,
}

/// What memory_zoom was asked for.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ZoomRequest {
    /// Line id.
    pub id: String,
    /// Its items.
    #[serde(default)]
    pub n: Option<i64>,
}

/// What memory_read was asked for.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ReadRequest {
    /// Item id.
    pub id: String,
    /// 0 or next_offset.
    #[serde(default)]
    pub offset: i64,
}

/// What memory_search was asked for.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct SearchRequest {
    /// Words.
    pub query: String,
    /// 1-100.
    #[serde(default = "ten")]
    pub limit: i64,
}

/// What memory_thread was asked for.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ThreadRequest {
    /// Line id.
    pub id: String,
    /// 1-30.
    #[serde(default = "five")]
    pub n: i64,
}

/// What memory_date was asked for.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct DateRequest {
    /// Line id.
    pub id: String,
}

fn ten() -> i64 {
    10
}

fn five() -> i64 {
    5
}
