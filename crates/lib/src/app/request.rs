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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::inbox::ReadInboxRequest;
    use super::super::listing::ListRequest;
    use super::super::send::SendRequest;
    use super::*;

    #[test]
    fn a_flattened_page_takes_its_tools_default_and_its_fields() {
        let list: ListRequest = serde_json::from_value(json!({"topic": "t"})).unwrap();
        assert_eq!(
            (list.page.limit, list.filter.topic.as_deref()),
            (100, Some("t"))
        );
        let inbox: ReadInboxRequest = serde_json::from_value(json!({})).unwrap();
        assert_eq!(inbox.page.limit, 50);
        assert!(inbox.unread_only);
        let inbox: ReadInboxRequest =
            serde_json::from_value(json!({"limit": 7, "fields": "headers", "unread_only": false}))
                .unwrap();
        assert_eq!(inbox.page.limit, 7);
        assert!(!inbox.unread_only);
        assert!(matches!(inbox.page.fields, Some(FieldsArg::One(ref f)) if f == "headers"));
    }

    #[test]
    fn a_flattened_page_is_two_parameters_of_the_tool_with_its_default() {
        let schema = serde_json::to_value(schemars::schema_for!(ListRequest)).unwrap();
        let props = &schema["properties"];
        assert_eq!(props["limit"]["default"], json!(100));
        assert_eq!(props["limit"]["description"], json!("How many, 1 to 1000."));
        assert!(props.get("fields").is_some());
        assert!(props.get("page").is_none() && props.get("filter").is_none());
        assert_eq!(schema.get("required"), None::<&Value>);
        let schema = serde_json::to_value(schemars::schema_for!(ReadInboxRequest)).unwrap();
        assert_eq!(schema["properties"]["limit"]["default"], json!(50));
    }

    #[test]
    fn null_and_absence_stay_apart() {
        let absent: SendRequest = serde_json::from_value(json!({"to": "b", "topic": "t"})).unwrap();
        assert_eq!(absent.pin_key, None);
        assert!(absent.decision_requested);
        let null: SendRequest =
            serde_json::from_value(json!({"to": "b", "topic": "t", "pin_key": null})).unwrap();
        assert_eq!(null.pin_key, Some(None));
        let schema = serde_json::to_value(schemars::schema_for!(SendRequest)).unwrap();
        assert_eq!(
            schema["properties"]["pin_key"][NULL_IS_AN_ANSWER],
            json!(true)
        );
    }
}
