//! What tools/list answers, for each MCP handler of this crate (the session
//! server, a role's service over HTTP, the management tools): the tools in
//! the protocol's order, their input schemas in the published form
//! (`schema::lean_input`).
//!
//! Owns that list and the two `ServerHandler` methods that read it
//! ([`published_listing!`]); must not decide which tools a handler serves
//! nor how a call runs.

use std::sync::Arc;

use rmcp::model::{ListToolsResult, Tool};

/// The tools a handler lists, as published.
#[derive(Clone)]
pub struct Published(Arc<Vec<Tool>>);

impl Published {
    /// `tools` (as a tool router derives them) in the published form, those
    /// named in `order` first and in its order.
    pub fn lean(tools: Vec<Tool>, order: &[&str]) -> Self {
        let mut tools: Vec<Tool> = tools
            .into_iter()
            .map(|mut t| {
                t.input_schema = Arc::new(super::schema::lean_input(&t.input_schema));
                t
            })
            .collect();
        tools.sort_by_key(|t| {
            order
                .iter()
                .position(|n| *n == t.name)
                .unwrap_or(usize::MAX)
        });
        Self(Arc::new(tools))
    }

    /// `tools` as they are (already published).
    pub fn new(tools: Vec<Tool>) -> Self {
        Self(Arc::new(tools))
    }

    /// The tools, in order.
    pub fn tools(&self) -> &[Tool] {
        &self.0
    }

    /// What tools/list answers.
    pub fn list(&self) -> ListToolsResult {
        ListToolsResult::with_all_items(self.0.to_vec())
    }

    /// The published tool named `name`.
    pub fn get(&self, name: &str) -> Option<Tool> {
        self.0.iter().find(|t| t.name == name).cloned()
    }
}

/// `list_tools` and `get_tool` of a `ServerHandler` whose published tools
/// are in the field `$field` (a [`Published`]).
macro_rules! published_listing {
    ($field:ident) => {
        async fn list_tools(
            &self,
            _request: Option<rmcp::model::PaginatedRequestParams>,
            _context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
            Ok(self.$field.list())
        }

        fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
            self.$field.get(name)
        }
    };
}
pub(crate) use published_listing;
