//! What the request types of the use cases share: a page of a listing
//! ([`Page`]), the defaults their fields fall back to, and a field whose
//! `null` differs from its absence ([`present`], [`NullIsAnAnswer`]).
//!
//! A request type is the tool's parameters themselves: the MCP adapter
//! deserializes a call's arguments straight into it, and its doc comments
//! are the parameters' descriptions in tools/list (every session pays for
//! them in context, so they stay short). Owns no checks: a use case
//! validates its request and refuses what does not hold.

use schemars::JsonSchema;
use serde::Deserialize;

use super::rows::FieldsArg;

/// How many rows a listing answers unless told (list_messages,
/// open_obligations, awaiting_ack).
pub const LIMIT_HUNDRED: i64 = 100;
/// The shorter default of a listing that reads more per row (read_inbox,
/// search_messages, ready_work).
pub const LIMIT_FIFTY: i64 = 50;

/// A listing's page: how many rows and which of their fields. Flattened
/// into the request of each listing tool that takes both; `LIMIT` is that
/// tool's default.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct Page<const LIMIT: i64> {
    /// How many, 1 to 1000.
    #[serde(default = "default_limit::<LIMIT>")]
    pub limit: i64,
    /// Field names, or "headers" (all but bodies).
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

impl<const LIMIT: i64> Default for Page<LIMIT> {
    fn default() -> Self {
        Self {
            limit: LIMIT,
            fields: None,
        }
    }
}

fn default_limit<const LIMIT: i64>() -> i64 {
    LIMIT
}

/// The default of a flag that is on unless turned off.
pub fn yes() -> bool {
    true
}

/// The extension key that marks a parameter whose `null` is an answer (see
/// [`NullIsAnAnswer`]); never published.
pub const NULL_IS_AN_ANSWER: &str = "x-null-is-an-answer";

/// `schemars(with = …)` for a parameter whose `null` differs from its
/// absence ([`present`]): a `T` or `null`, published as `anyOf`.
pub struct NullIsAnAnswer<T>(std::marker::PhantomData<T>);

impl<T: JsonSchema> JsonSchema for NullIsAnAnswer<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("NullOr{}", T::schema_name()).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let inner = generator.subschema_for::<T>();
        schemars::json_schema!({
            "anyOf": [inner, {"type": "null"}],
            NULL_IS_AN_ANSWER: true,
        })
    }
}

/// Deserializes a parameter whose absence and `null` are different answers:
/// absent stays `None` (through `#[serde(default)]`), `null` is `Some(None)`.
pub fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(d).map(Some)
}
