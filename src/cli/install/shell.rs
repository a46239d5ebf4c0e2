//! Quoting a word for a POSIX shell, for the hook commands clients run
//! through one. It must not run anything.

/// Quotes a word for a POSIX shell (hook commands run through one).
pub(super) fn sh_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quoting() {
        assert_eq!(sh_quote("/usr/bin/countersign"), "/usr/bin/countersign");
        assert_eq!(sh_quote("/a b/it's"), r"'/a b/it'\''s'");
        assert_eq!(sh_quote(""), "''");
    }
}
