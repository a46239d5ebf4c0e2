//! A JSON check that refuses duplicate object keys anywhere in a document.
//!
//! serde_json keeps the last of two equal keys in a map, so two readers could
//! disagree about what a signed body says. A record body with a duplicate key
//! is therefore invalid, and this walker finds one without building a value.

use std::collections::HashSet;
use std::fmt;

use serde::Deserializer as _;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// `Err` with the duplicated key if any object in `text` repeats a key, or
/// with the parse error if `text` is not JSON.
pub fn check_no_duplicate_keys(text: &str) -> Result<(), String> {
    let mut de = serde_json::Deserializer::from_str(text);
    de.deserialize_any(Walker).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())
}

struct Walker;

impl<'de> DeserializeSeed<'de> for Walker {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walker {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Walker)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if !seen.insert(key.clone().into_owned()) {
                return Err(de::Error::custom(format!("duplicate key '{key}'")));
            }
            map.next_value_seed(Walker)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_duplicates_at_any_depth() {
        assert!(check_no_duplicate_keys(r#"{"a":1,"b":{"c":[1,{"d":2}]}}"#).is_ok());
        assert!(check_no_duplicate_keys(r#"{"a":1,"a":2}"#).is_err());
        assert!(check_no_duplicate_keys(r#"{"a":{"x":1,"x":1}}"#).is_err());
        assert!(check_no_duplicate_keys(r#"[{"x":1},{"x":1,"y":[{"z":1,"z":1}]}]"#).is_err());
        assert!(check_no_duplicate_keys(r#"{"a":1} trailing"#).is_err());
        assert!(check_no_duplicate_keys(r#"{"a\u0062":1,"ab":2}"#).is_err());
    }
}
