//! The `search_messages` query language (protocol §3.6): parsing, limits, the FTS5 `MATCH`
//! text, and the scan that stands in for the index.
//!
//! This module owns the grammar and both of its evaluations:
//!
//! * [`SearchQuery::parse`] accepts exactly the queries SQLite's FTS5 accepts for a
//!   `fts5(topic, body, tokenize='trigram')` table: bare words ANDed by juxtaposition,
//!   `NOT` > `AND` > `OR` (uppercase, left-associative, juxtaposition binding tightest),
//!   parentheses, `"phrase"` (`""` is a literal quote), a trailing `*`, and `topic:` /
//!   `body:` column filters on a term, phrase or group, plus FTS5's rarer syntax (`NEAR(…)`,
//!   `{topic body}:`, `-topic:`, `^`, `+`). A query FTS5 would reject (syntax error, unknown
//!   column, unterminated string) is retried as the AND of its whitespace-split pieces, each
//!   quoted literally, so `C++`, `re:` and `a AND NOT b` search for what was typed.
//! * [`SearchQuery::fts_match`] re-emits the parsed query with every term quoted, so the
//!   text handed to `MATCH` never depends on FTS5 re-reading user input the same way.
//! * [`SearchQuery::matches`] is the scan used when a term is shorter than 3 characters (the
//!   trigram index cannot find those) or the index is missing. For terms of 3 or more
//!   characters it answers exactly as FTS5 does on the same row; a shorter term matches as a
//!   substring, which is the point of scanning.
//!
//! It must not touch files, SQLite (`core` never imports rusqlite) or the clock: the caller
//! runs the SQL, picks the path with [`SearchQuery::needs_scan`] and orders the results.
//!
//! # Using it
//!
//! ```text
//! let q = SearchQuery::parse(query)?;              // refusals are ValueErrors
//! if fts5_available && !q.needs_scan() {
//!     // match: "fts"; ?1 = q.fts_match(), bound as a parameter
//!     // (the index's `bodies_fts` indexes `bodies`, one row per send or revision)
//!     SELECT m.*, snippet(bodies_fts, -1, '[', ']', '…', 12)
//!       FROM bodies_fts JOIN bodies b ON b.rowid = bodies_fts.rowid
//!       JOIN messages m ON m.id = b.message_id
//!      WHERE bodies_fts MATCH ?1 AND <current body / deleted / role / kind / status filters>
//!      ORDER BY bm25(bodies_fts), m.ms DESC, m.c DESC, m.id DESC LIMIT ?
//! } else {
//!     q.check_scannable()?;                        // match: "substring"
//!     // newest first, keep rows where q.matches(topic, body); snippet = first 200 chars
//! }
//! ```
//!
//! The table must be `fts5(topic, body, …, tokenize='trigram')` with those column names in
//! that order (`snippet` column 0 is the topic, 1 the body, -1 lets FTS5 choose). Because
//! `fts_match` is always valid syntax, any error from `MATCH` is a real one (a lock, a
//! missing table) and should propagate, not be reported as a bad query.

use std::fmt;

/// Longest accepted query, in characters (Unicode scalar values, as Python's `len`).
pub const MAX_QUERY_CHARS: usize = 4096;
/// Most terms (bare words, quoted phrases, or literal pieces) a query may hold.
pub const MAX_QUERY_TERMS: usize = 256;
/// Deepest parenthesis nesting a query may use.
pub const MAX_QUERY_DEPTH: usize = 256;
/// Shortest term the trigram index can find; a shorter one forces the scan.
pub const MIN_INDEXED_TERM_CHARS: usize = 3;
/// The FTS5 table's columns, in declaration order. `fts_match` names them, so the index must
/// be declared `fts5(topic, body, …)`; `snippet(tbl, 1, …)` therefore picks the body.
pub const COLUMNS: [&str; 2] = ["topic", "body"];

/// FTS5's query parser keeps a fixed 100-slot stack (`fts5YYSTACKDEPTH`, not growable in the
/// bundled build) and fails with "parser stack overflow" past it; 99 slots are usable
/// (measured: 97 nested parentheses around a term parse, 98 do not).
const FTS5_PARSER_STACK: usize = 99;
/// Upper bound of the parser stack one emitted term (with its column filter, caret, `+`
/// parts or `NEAR(…)` wrapper) occupies; see [`normalize`].
const LEAF_STACK: usize = 9;

/// A refused query. Each variant's `Display` is the exact refusal text the tool returns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// The query is empty or whitespace.
    #[error("'query' is required; pass the words to search for")]
    Required,
    /// The query is longer than [`MAX_QUERY_CHARS`]; carries its length in characters.
    #[error("'query' must be at most {max} characters (got {0})", max = MAX_QUERY_CHARS)]
    TooLong(usize),
    /// The query has more than [`MAX_QUERY_TERMS`] terms; carries the count.
    #[error("'query' may have at most {max} terms (got {0})", max = MAX_QUERY_TERMS)]
    TooManyTerms(usize),
    /// Parentheses nest deeper than [`MAX_QUERY_DEPTH`].
    #[error("'query' may nest parentheses at most {max} deep", max = MAX_QUERY_DEPTH)]
    TooDeep,
    /// The query must be scanned but uses syntax the scan does not evaluate.
    #[error("'query' uses {construct}, which cannot be combined with {reason}")]
    Unscannable {
        /// The construct, as the user would recognise it (e.g. `NEAR(…)`).
        construct: &'static str,
        /// Why the scan was needed; its text also names the way out.
        reason: ScanReason,
    },
}

/// Why a query is answered by the scan rather than the index; part of
/// [`QueryError::Unscannable`]'s text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanReason {
    /// A term is shorter than [`MIN_INDEXED_TERM_CHARS`].
    ShortTerm,
    /// The operators nest too deeply for FTS5's parser.
    Nesting,
    /// Matching the query in the index would cost too much: long phrases over text that
    /// repeats their trigrams (a run of one character) make FTS5 compare every position of
    /// each trigram once per trigram of the phrase.
    Cost,
    /// The caller scans although the query could use the index (e.g. no FTS5 available).
    NoIndex,
}

impl fmt::Display for ScanReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ShortTerm => {
                "a term shorter than 3 characters (such terms are matched by a scan); \
                 lengthen every term to 3 or more characters, or leave that syntax out"
            }
            Self::Nesting => {
                "operators nested this deeply (such queries are matched by a scan); \
                 nest fewer levels, or leave that syntax out"
            }
            Self::Cost => {
                "phrases this long over text this repetitive (such queries are matched by a \
                 scan); shorten the phrases, or leave that syntax out"
            }
            Self::NoIndex => {
                "the scan used while the full-text index is unavailable; leave that syntax out"
            }
        })
    }
}

/// A parsed, limit-checked search query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    root: Node,
    literal: bool,
    features: Features,
    short_term: bool,
    too_nested: bool,
}

impl SearchQuery {
    /// Parses `query`, falling back to the literal reading when FTS5 would reject it, and
    /// enforces the limits on whichever reading is used.
    ///
    /// NUL characters are dropped first: FTS5 would stop reading the query at one, and the
    /// trigram tokenizer skips them in indexed text too.
    pub fn parse(query: &str) -> Result<Self, QueryError> {
        if query.chars().all(|c| c == '\0' || is_py_space(c)) {
            return Err(QueryError::Required);
        }
        let chars = query.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(QueryError::TooLong(chars));
        }
        let text: String = query.chars().filter(|&c| c != '\0').collect();
        // Checked on the text, before parsing, so the refusal is the same on every path
        // (index, scan, literal retry) and the recursive parser stays bounded.
        if paren_depth(&text) > MAX_QUERY_DEPTH {
            return Err(QueryError::TooDeep);
        }
        let (mut root, literal, features) = match parse_fts5(&text) {
            Some((root, features)) => (root, false, features),
            None => (literal_pieces(&text), true, Features::default()),
        };
        let terms = root.term_count();
        if terms > MAX_QUERY_TERMS {
            return Err(QueryError::TooManyTerms(terms));
        }
        let stack = normalize(&mut root);
        let short_term = root.has_short_term();
        Ok(Self {
            root,
            literal,
            features,
            short_term,
            too_nested: stack > FTS5_PARSER_STACK,
        })
    }

    /// True when the index cannot answer this query and the caller must scan with
    /// [`matches`](Self::matches): a term is shorter than 3 characters (the trigram index
    /// returns nothing for it), or the operators nest too deeply for FTS5's parser.
    pub fn needs_scan(&self) -> bool {
        self.short_term || self.too_nested
    }

    /// True when the query was not valid FTS5 syntax and is searched as the AND of its
    /// whitespace-split pieces, each taken literally.
    pub fn is_literal(&self) -> bool {
        self.literal
    }

    /// The FTS5 `MATCH` expression: the parsed query with every term quoted and redundant
    /// parentheses dropped. Bind it as a parameter, with the table name on the left
    /// (`WHERE bodies_fts MATCH ?1`), so no column filter is implied. It names the columns
    /// `topic` and `body`. Always valid FTS5 syntax unless [`needs_scan`](Self::needs_scan)
    /// is true because of nesting, which FTS5's parser cannot hold.
    pub fn fts_match(&self) -> String {
        let mut out = String::new();
        emit(&self.root, &mut out);
        out
    }

    /// The folded text of the query when it is a single phrase of one part over both
    /// columns, with no `*` or `^` (a bare word, a quoted string, a literal piece): then
    /// FTS5's instances of it are its occurrences in the folded text, and its bm25 and
    /// snippet can be computed from the rows alone ([`crate::bm25`],
    /// [`crate::snippet`]). `None` for anything else, or when it needs the scan.
    pub fn single_phrase(&self) -> Option<&str> {
        let Node::Phrase(p) = &self.root else {
            return None;
        };
        let [part] = p.parts.as_slice() else {
            return None;
        };
        let needle = p.needle.as_deref()?;
        (!self.needs_scan()
            && !part.prefix
            && !p.caret
            && p.columns == ALL_COLUMNS
            && needle.chars().count() >= MIN_INDEXED_TERM_CHARS)
            .then_some(needle)
    }

    /// Refuses syntax the scan does not evaluate (`NEAR(…)`, a column filter on a group,
    /// `{…}:` and `-col:` column sets, `+`, `^`). Call it before scanning; the refusal
    /// explains why the scan was needed.
    pub fn check_scannable(&self) -> Result<(), QueryError> {
        let Some(construct) = self.features.unscannable() else {
            return Ok(());
        };
        let reason = if self.short_term {
            ScanReason::ShortTerm
        } else if self.too_nested {
            ScanReason::Nesting
        } else {
            ScanReason::NoIndex
        };
        Err(QueryError::Unscannable { construct, reason })
    }

    /// [`check_scannable`](Self::check_scannable) for a caller that scans for a reason of its
    /// own (the index would cost too much, or is missing); the refusal names that reason.
    pub fn check_scannable_for(&self, reason: ScanReason) -> Result<(), QueryError> {
        match self.features.unscannable() {
            None => Ok(()),
            Some(construct) => Err(QueryError::Unscannable { construct, reason }),
        }
    }

    /// The trigrams FTS5 looks up for each phrase of the query (in the order of the parsed
    /// query, which puts cheaper operands first), NOT's right side
    /// included (FTS5 evaluates it too): each part's folded text cut into its overlapping
    /// 3-character tokens, as the trigram tokenizer cuts it. Matching a phrase of `k` tokens
    /// costs FTS5 up to `k` steps per position of its rarest token, which is what a caller
    /// weighs before asking the index.
    pub fn index_terms(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        self.root.each_phrase(true, &mut |p| {
            let mut terms = Vec::new();
            for part in &p.parts {
                let chars: Vec<char> = fold(&part.text).chars().collect();
                terms.extend(chars.windows(3).map(|w| w.iter().collect::<String>()));
            }
            out.push(terms);
        });
        out
    }

    /// The folded text of each phrase a matching row can show, in the order of
    /// [`index_terms`](Self::index_terms), NOT's right side left out: what a snippet cut
    /// outside FTS5 highlights.
    pub fn shown_needles(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.root.each_phrase(false, &mut |p| {
            if let Some(n) = p.needle.as_deref() {
                out.push(n);
            }
        });
        out
    }

    /// How many phrases the scan looks for in each row (each is a pass over its text).
    pub fn phrase_count(&self) -> usize {
        let mut n = 0;
        self.root.each_phrase(true, &mut |_| n += 1);
        n
    }

    /// The scan: whether a row with this `topic` and `body` matches. Both sides are folded as
    /// the trigram tokenizer folds them ([`fold`]); a term or phrase matches as a substring
    /// (a trailing `*` changes nothing, as under trigram), within its column filter.
    ///
    /// When every term has 3 or more characters this returns exactly what FTS5 returns for
    /// [`fts_match`](Self::fts_match) on the same row, for all syntax but `NEAR(…)`, which
    /// is approximated as the AND of its phrases (and refused by
    /// [`check_scannable`](Self::check_scannable), as are the other rare forms). A shorter
    /// term, which the index cannot find, matches as a substring.
    pub fn matches(&self, topic: &str, body: &str) -> bool {
        self.root.eval(&[fold(topic), fold(body)])
    }
}

/// Folds text as FTS5's trigram tokenizer does with its defaults (`case_sensitive 0`,
/// `remove_diacritics 0`): NULs are skipped, U+FFFE/U+FFFF read as U+FFFD, and each character
/// maps through SQLite's simple case folding. ASCII folds as usual; beyond it the table is
/// SQLite's, not Rust's `to_lowercase`, so the scan and the index agree character for
/// character.
pub fn fold(text: &str) -> String {
    text.chars().filter(|&c| c != '\0').map(fold_char).collect()
}

// ---------------------------------------------------------------------------------------
// Syntax tree

/// Column set as a bit mask over [`COLUMNS`].
type Columns = u8;
const ALL_COLUMNS: Columns = 0b11;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Part {
    /// Dequoted, NUL-free text of one string token.
    text: String,
    prefix: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Phrase {
    parts: Vec<Part>,
    caret: bool,
    columns: Columns,
    /// Folded text the scan looks for; `None` when no text can match (parts joined by `+`
    /// whose trigrams cannot be adjacent, or that have no trigrams at all).
    needle: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Near {
    phrases: Vec<Phrase>,
    distance: Option<u32>,
    columns: Columns,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Phrase(Phrase),
    Near(Near),
    /// AND of two or more operands (explicit `AND` and juxtaposition are the same node in
    /// FTS5, and it flattens nested ones too).
    And(Vec<Node>),
    Or(Vec<Node>),
    Not(Box<Node>, Box<Node>),
}

impl Node {
    fn is_leaf(&self) -> bool {
        matches!(self, Self::Phrase(_) | Self::Near(_))
    }

    /// An AND of leaves only is emitted as bare juxtaposition, which binds tightest.
    fn is_list(&self) -> bool {
        match self {
            Self::And(children) => children.iter().all(Node::is_leaf),
            other => other.is_leaf(),
        }
    }

    fn term_count(&self) -> usize {
        match self {
            Self::Phrase(p) => p.parts.len(),
            Self::Near(n) => n.phrases.iter().map(|p| p.parts.len()).sum(),
            Self::And(children) | Self::Or(children) => children.iter().map(Node::term_count).sum(),
            Self::Not(l, r) => l.term_count() + r.term_count(),
        }
    }

    fn has_short_term(&self) -> bool {
        let short = |p: &Phrase| {
            p.parts
                .iter()
                .any(|part| part.text.chars().count() < MIN_INDEXED_TERM_CHARS)
        };
        match self {
            Self::Phrase(p) => short(p),
            Self::Near(n) => n.phrases.iter().any(short),
            Self::And(children) | Self::Or(children) => children.iter().any(Node::has_short_term),
            Self::Not(l, r) => l.has_short_term() || r.has_short_term(),
        }
    }

    /// Applies a group's column filter the way FTS5 does: pushed down to every phrase and
    /// intersected with any filter already there (an empty result matches nothing).
    fn restrict(&mut self, columns: Columns) {
        match self {
            Self::Phrase(p) => p.columns &= columns,
            Self::Near(n) => n.columns &= columns,
            Self::And(children) | Self::Or(children) => {
                children.iter_mut().for_each(|c| c.restrict(columns));
            }
            Self::Not(l, r) => {
                l.restrict(columns);
                r.restrict(columns);
            }
        }
    }

    /// Calls `f` with every phrase in order (those of `NEAR` groups included); the right
    /// side of `NOT` only when `negated` is true.
    fn each_phrase<'a>(&'a self, negated: bool, f: &mut impl FnMut(&'a Phrase)) {
        match self {
            Self::Phrase(p) => f(p),
            Self::Near(n) => n.phrases.iter().for_each(f),
            Self::And(children) | Self::Or(children) => {
                children.iter().for_each(|c| c.each_phrase(negated, f));
            }
            Self::Not(l, r) => {
                l.each_phrase(negated, f);
                if negated {
                    r.each_phrase(negated, f);
                }
            }
        }
    }

    fn eval(&self, cols: &[String; 2]) -> bool {
        match self {
            Self::Phrase(p) => p.found(p.columns, cols),
            // FTS5 also wants the phrases close together in one column; the scan refuses
            // NEAR, so this stays a plain AND.
            Self::Near(n) => n.phrases.iter().all(|p| p.found(n.columns, cols)),
            Self::And(children) => children.iter().all(|c| c.eval(cols)),
            Self::Or(children) => children.iter().any(|c| c.eval(cols)),
            Self::Not(l, r) => l.eval(cols) && !r.eval(cols),
        }
    }
}

impl Phrase {
    fn new(parts: Vec<Part>, caret: bool, columns: Columns) -> Self {
        let needle = needle(&parts);
        Self {
            parts,
            caret,
            columns,
            needle,
        }
    }

    fn found(&self, columns: Columns, cols: &[String; 2]) -> bool {
        let Some(needle) = &self.needle else {
            return false;
        };
        cols.iter().enumerate().any(|(i, text)| {
            columns & (1 << i) != 0
                && if self.caret {
                    text.starts_with(needle.as_str())
                } else {
                    text.contains(needle.as_str())
                }
        })
    }
}

/// What the scan looks for. One part is a plain substring at any length (that is the scan's
/// job for short terms). Parts joined by `+` follow trigram phrase rules: each part of 3+
/// characters becomes its trigrams, shorter parts none, and the trigram sequence must be
/// consecutive, so `abc + bcd` means `abcd` and `abc + xyz` can never match.
fn needle(parts: &[Part]) -> Option<String> {
    if let [only] = parts {
        return Some(fold(&only.text));
    }
    let mut joined: Option<Vec<char>> = None;
    for part in parts {
        let text: Vec<char> = fold(&part.text).chars().collect();
        if text.len() < MIN_INDEXED_TERM_CHARS {
            continue;
        }
        joined = Some(match joined {
            None => text,
            Some(mut acc) => {
                // The next trigram starts one character after the previous one, so the part
                // must begin with the last two characters already placed.
                let tail = acc.get(acc.len().saturating_sub(2)..)?;
                if text.get(..2)? != tail {
                    return None;
                }
                acc.extend(text.get(2..)?);
                acc
            }
        });
    }
    joined.map(|chars| chars.into_iter().collect())
}

/// Which scan-unfriendly constructs the query used (recorded while parsing, because the
/// tree no longer shows group filters once they are pushed down).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Features {
    near: bool,
    group_filter: bool,
    braces: bool,
    minus: bool,
    plus: bool,
    caret: bool,
}

impl Features {
    fn unscannable(&self) -> Option<&'static str> {
        [
            (self.near, "NEAR(…)"),
            (
                self.group_filter,
                "a column filter on a group (such as topic:(…))",
            ),
            (
                self.braces,
                "a column list in braces (such as {topic body}:)",
            ),
            (self.minus, "an excluded column (such as -topic:)"),
            (self.plus, "'+' joining phrase parts"),
            (self.caret, "'^' (match at the start of a column)"),
        ]
        .into_iter()
        .find_map(|(used, what)| used.then_some(what))
    }
}

// ---------------------------------------------------------------------------------------
// Lexing and parsing: a recursive-descent copy of FTS5's grammar (fts5parse.y):
//
//   expr      := expr OR expr | expr AND expr | expr NOT expr    (OR < AND < NOT, left)
//              | colset ':' '(' expr ')' | '(' expr ')' | cnearset+
//   cnearset  := [colset ':'] nearset
//   colset    := ['-'] STRING | ['-'] '{' STRING+ '}'
//   nearset   := ['^'] phrase | STRING '(' phrase+ [',' STRING] ')'     (STRING = "NEAR")
//   phrase    := STRING ['*'] ('+' STRING ['*'])*
//
// Note that a parenthesized group never juxtaposes: `a (b)` and `(a) b` are errors.

/// Python's `str.isspace`, used for blank detection and the literal split: Unicode
/// White_Space plus the ASCII separators U+001C..U+001F.
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// FTS5's query lexer skips only these four.
fn is_fts5_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// FTS5 bareword bytes: ASCII alphanumerics, `_`, 0x1A, and every byte of a non-ASCII
/// character.
fn is_bareword(b: u8) -> bool {
    b >= 0x80 || b.is_ascii_alphanumeric() || b == b'_' || b == 0x1a
}

/// Deepest nesting of `(` outside quoted strings, lexed as FTS5 lexes quotes.
fn paren_depth(text: &str) -> usize {
    let (mut depth, mut max, mut quoted) = (0usize, 0usize, false);
    for b in text.bytes() {
        match b {
            // A doubled quote inside a string closes and reopens it, which nets out.
            b'"' => quoted = !quoted,
            b'(' if !quoted => {
                depth += 1;
                max = max.max(depth);
            }
            b')' if !quoted => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    /// A bareword or a quoted string, as written (quotes included).
    Str(&'a str),
    And,
    Or,
    Not,
    LParen,
    RParen,
    LBrace,
    RBrace,
    Colon,
    Comma,
    Plus,
    Star,
    Minus,
    Caret,
}

/// Splits the query as `fts5ExprGetToken` does; `None` on a character FTS5 rejects or an
/// unterminated string.
fn lex(text: &str) -> Option<Vec<Tok<'_>>> {
    let bytes = text.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if is_fts5_space(b) {
            i += 1;
            continue;
        }
        let single = match b {
            b'(' => Some(Tok::LParen),
            b')' => Some(Tok::RParen),
            b'{' => Some(Tok::LBrace),
            b'}' => Some(Tok::RBrace),
            b':' => Some(Tok::Colon),
            b',' => Some(Tok::Comma),
            b'+' => Some(Tok::Plus),
            b'*' => Some(Tok::Star),
            b'-' => Some(Tok::Minus),
            b'^' => Some(Tok::Caret),
            _ => None,
        };
        if let Some(tok) = single {
            toks.push(tok);
            i += 1;
            continue;
        }
        let start = i;
        if b == b'"' {
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return None,
                    Some(b'"') if bytes.get(i + 1) == Some(&b'"') => i += 2,
                    Some(b'"') => break,
                    Some(_) => i += 1,
                }
            }
            i += 1;
            toks.push(Tok::Str(text.get(start..i)?));
        } else if is_bareword(b) {
            while bytes.get(i).is_some_and(|&b| is_bareword(b)) {
                i += 1;
            }
            // Barewords end on an ASCII byte or the end, so `i` is a char boundary.
            let word = text.get(start..i)?;
            toks.push(match word {
                "AND" => Tok::And,
                "OR" => Tok::Or,
                "NOT" => Tok::Not,
                _ => Tok::Str(word),
            });
        } else {
            return None;
        }
    }
    Some(toks)
}

/// The value of a string token: quoted strings lose their quotes and `""` becomes `"`.
fn dequote(raw: &str) -> String {
    match raw.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => raw.to_owned(),
    }
}

/// FTS5 rejected the query (syntax, unknown column, bad NEAR distance): retry literally.
#[derive(Debug)]
struct Rejected;

type Parsed<T> = Result<T, Rejected>;

fn parse_fts5(text: &str) -> Option<(Node, Features)> {
    let toks = lex(text)?;
    let mut parser = Parser {
        toks,
        pos: 0,
        features: Features::default(),
    };
    let root = parser.expr(0).ok()?;
    if parser.pos != parser.toks.len() {
        return None;
    }
    Some((root, parser.features))
}

/// The literal retry: the AND of each whitespace-split piece, quoted.
fn literal_pieces(text: &str) -> Node {
    let leaves = text
        .split(is_py_space)
        .filter(|piece| !piece.is_empty())
        .map(|piece| {
            let part = Part {
                text: piece.to_owned(),
                prefix: false,
            };
            Node::Phrase(Phrase::new(vec![part], false, ALL_COLUMNS))
        })
        .collect();
    Node::And(leaves)
}

struct Parser<'a> {
    toks: Vec<Tok<'a>>,
    pos: usize,
    features: Features,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<Tok<'a>> {
        self.toks.get(self.pos).copied()
    }

    fn peek2(&self) -> Option<Tok<'a>> {
        self.toks.get(self.pos + 1).copied()
    }

    fn eat(&mut self, tok: Tok<'_>) -> Parsed<()> {
        if self.peek() == Some(tok) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Rejected)
        }
    }

    fn string(&mut self) -> Parsed<&'a str> {
        match self.peek() {
            Some(Tok::Str(raw)) => {
                self.pos += 1;
                Ok(raw)
            }
            _ => Err(Rejected),
        }
    }

    /// Precedence climbing over the binary operators; `min` is the weakest operator this
    /// call may consume (1 OR, 2 AND, 3 NOT).
    fn expr(&mut self, min: u8) -> Parsed<Node> {
        let mut lhs = self.operand()?;
        loop {
            let prec = match self.peek() {
                Some(Tok::Or) => 1,
                Some(Tok::And) => 2,
                Some(Tok::Not) => 3,
                _ => break,
            };
            if prec < min {
                break;
            }
            self.pos += 1;
            let rhs = self.expr(prec + 1)?;
            lhs = match prec {
                1 => flatten(false, lhs, rhs),
                2 => flatten(true, lhs, rhs),
                _ => Node::Not(Box::new(lhs), Box::new(rhs)),
            };
        }
        Ok(lhs)
    }

    fn starts_colset(&self) -> bool {
        match self.peek() {
            Some(Tok::Minus | Tok::LBrace) => true,
            Some(Tok::Str(_)) => self.peek2() == Some(Tok::Colon),
            _ => false,
        }
    }

    fn operand(&mut self) -> Parsed<Node> {
        if self.peek() == Some(Tok::LParen) {
            return self.group();
        }
        let first = if self.starts_colset() {
            let columns = self.colset()?;
            self.eat(Tok::Colon)?;
            if self.peek() == Some(Tok::LParen) {
                self.features.group_filter = true;
                let mut group = self.group()?;
                group.restrict(columns);
                return Ok(group);
            }
            self.nearset(columns)?
        } else {
            self.nearset(ALL_COLUMNS)?
        };
        // Juxtaposed terms: FTS5's `exprlist`, an implicit AND that binds tightest.
        let mut list = vec![first];
        while matches!(
            self.peek(),
            Some(Tok::Str(_) | Tok::Caret | Tok::Minus | Tok::LBrace)
        ) {
            let columns = if self.starts_colset() {
                let columns = self.colset()?;
                self.eat(Tok::Colon)?;
                columns
            } else {
                ALL_COLUMNS
            };
            list.push(self.nearset(columns)?);
        }
        Ok(match list.len() {
            1 => list.pop().ok_or(Rejected)?,
            _ => Node::And(list),
        })
    }

    fn group(&mut self) -> Parsed<Node> {
        self.eat(Tok::LParen)?;
        let inner = self.expr(0)?;
        self.eat(Tok::RParen)?;
        Ok(inner)
    }

    fn colset(&mut self) -> Parsed<Columns> {
        let invert = self.peek() == Some(Tok::Minus);
        if invert {
            self.pos += 1;
            self.features.minus = true;
        }
        let mut columns = 0;
        if self.peek() == Some(Tok::LBrace) {
            self.pos += 1;
            self.features.braces = true;
            columns |= column(self.string()?)?;
            while let Some(Tok::Str(raw)) = self.peek() {
                self.pos += 1;
                columns |= column(raw)?;
            }
            self.eat(Tok::RBrace)?;
        } else {
            columns = column(self.string()?)?;
        }
        Ok(if invert {
            !columns & ALL_COLUMNS
        } else {
            columns
        })
    }

    fn nearset(&mut self, columns: Columns) -> Parsed<Node> {
        if self.peek() == Some(Tok::Caret) {
            self.pos += 1;
            self.features.caret = true;
            let parts = self.phrase()?;
            return Ok(Node::Phrase(Phrase::new(parts, true, columns)));
        }
        if let (Some(Tok::Str(raw)), Some(Tok::LParen)) = (self.peek(), self.peek2()) {
            // FTS5 reads `STRING (` as NEAR and then insists on the exact, unquoted keyword.
            if raw != "NEAR" {
                return Err(Rejected);
            }
            self.pos += 2;
            self.features.near = true;
            let mut phrases = vec![Phrase::new(self.phrase()?, false, ALL_COLUMNS)];
            while matches!(self.peek(), Some(Tok::Str(_))) {
                phrases.push(Phrase::new(self.phrase()?, false, ALL_COLUMNS));
            }
            let mut distance = None;
            if self.peek() == Some(Tok::Comma) {
                self.pos += 1;
                distance = Some(near_distance(self.string()?)?);
            }
            self.eat(Tok::RParen)?;
            return Ok(Node::Near(Near {
                phrases,
                distance,
                columns,
            }));
        }
        let parts = self.phrase()?;
        Ok(Node::Phrase(Phrase::new(parts, false, columns)))
    }

    fn phrase(&mut self) -> Parsed<Vec<Part>> {
        let mut parts = vec![self.part()?];
        while self.peek() == Some(Tok::Plus) {
            self.pos += 1;
            self.features.plus = true;
            parts.push(self.part()?);
        }
        Ok(parts)
    }

    fn part(&mut self) -> Parsed<Part> {
        let text = dequote(self.string()?);
        let prefix = self.peek() == Some(Tok::Star);
        if prefix {
            self.pos += 1;
        }
        Ok(Part { text, prefix })
    }
}

/// Resolves a column name as FTS5 does: dequoted, ASCII case-insensitive.
fn column(raw: &str) -> Parsed<Columns> {
    let name = dequote(raw);
    COLUMNS
        .iter()
        .position(|c| c.eq_ignore_ascii_case(&name))
        .map(|i| 1 << i)
        .ok_or(Rejected)
}

/// A NEAR distance: unquoted digits only, accumulated as FTS5 does (it stops growing the
/// number rather than overflow).
fn near_distance(raw: &str) -> Parsed<u32> {
    let mut n: u32 = 0;
    for b in raw.bytes() {
        if !b.is_ascii_digit() {
            return Err(Rejected);
        }
        if n < 214_748_363 {
            n = n * 10 + u32::from(b - b'0');
        }
    }
    Ok(n)
}

/// Builds an AND/OR node, absorbing operands that are already the same operator (FTS5
/// flattens them too, and it keeps the tree shallow).
fn flatten(and: bool, lhs: Node, rhs: Node) -> Node {
    let mut children = Vec::new();
    for side in [lhs, rhs] {
        match side {
            Node::And(inner) if and => children.extend(inner),
            Node::Or(inner) if !and => children.extend(inner),
            other => children.push(other),
        }
    }
    if and {
        Node::And(children)
    } else {
        Node::Or(children)
    }
}

// ---------------------------------------------------------------------------------------
// Emitting the MATCH text

/// Orders AND/OR operands for emission and returns the FTS5 parser stack the emitted text
/// needs (an upper bound, in stack slots).
///
/// FTS5's parser holds `expr OP` (2 slots) for every operand after the first while it
/// parses that operand, and 1 slot per open parenthesis, so the deepest operand goes first;
/// within an AND, bare terms go last and are juxtaposed. NOT cannot be reordered.
fn normalize(node: &mut Node) -> usize {
    // An operand's cost once wrapped in parentheses when its parent needs them.
    fn wrapped(cost: usize, parens: bool) -> usize {
        if parens { (cost + 1).max(3) } else { cost }
    }
    // `c1 OP c2 OP …`: the first operand sits at the base, the others above `expr OP`.
    fn chain(costs: &[usize]) -> usize {
        let first = costs.first().copied().unwrap_or(0);
        let rest = costs.iter().skip(1).max().map_or(0, |c| c + 2);
        first.max(rest).max(3)
    }
    match node {
        Node::Phrase(_) | Node::Near(_) => LEAF_STACK,
        Node::And(children) => {
            let mut compound: Vec<(usize, Node)> = Vec::new();
            let mut leaves = Vec::new();
            for mut child in std::mem::take(children) {
                if child.is_leaf() {
                    leaves.push(child);
                } else {
                    let cost = normalize(&mut child);
                    compound.push((wrapped(cost, matches!(child, Node::Or(_))), child));
                }
            }
            compound.sort_by_key(|(cost, _)| std::cmp::Reverse(*cost));
            let mut costs: Vec<usize> = compound.iter().map(|(c, _)| *c).collect();
            match leaves.len() {
                0 => {}
                1 => costs.push(LEAF_STACK),
                _ => costs.push(LEAF_STACK + 1),
            }
            children.extend(compound.into_iter().map(|(_, n)| n));
            children.extend(leaves);
            if costs.len() == 1 {
                costs.first().copied().unwrap_or(LEAF_STACK)
            } else {
                chain(&costs)
            }
        }
        Node::Or(children) => {
            let mut costed: Vec<(usize, Node)> = std::mem::take(children)
                .into_iter()
                .map(|mut child| (normalize(&mut child), child))
                .collect();
            costed.sort_by_key(|(cost, _)| std::cmp::Reverse(*cost));
            let costs: Vec<usize> = costed.iter().map(|(c, _)| *c).collect();
            children.extend(costed.into_iter().map(|(_, n)| n));
            chain(&costs)
        }
        Node::Not(l, r) => {
            let left = wrapped(normalize(l), needs_parens_left_of_not(l));
            let right = wrapped(normalize(r), !r.is_list());
            chain(&[left, right])
        }
    }
}

/// NOT binds tighter than AND and OR and is left-associative, so only those two (when not
/// a bare juxtaposed list) need parentheses on its left.
fn needs_parens_left_of_not(node: &Node) -> bool {
    match node {
        Node::Or(_) => true,
        Node::And(_) => !node.is_list(),
        _ => false,
    }
}

fn emit(node: &Node, out: &mut String) {
    match node {
        Node::Phrase(p) => {
            emit_columns(p.columns, out);
            if p.caret {
                out.push('^');
            }
            emit_parts(&p.parts, out);
        }
        Node::Near(n) => {
            emit_columns(n.columns, out);
            out.push_str("NEAR(");
            for (i, p) in n.phrases.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                emit_parts(&p.parts, out);
            }
            if let Some(d) = n.distance {
                out.push_str(", ");
                out.push_str(&d.to_string());
            }
            out.push(')');
        }
        Node::And(children) => {
            let mut first = true;
            let mut in_list = false;
            for child in children {
                if child.is_leaf() {
                    // Leaves come last (see `normalize`): one juxtaposed list.
                    if !first {
                        out.push_str(if in_list { " " } else { " AND " });
                    }
                    in_list = true;
                    emit(child, out);
                } else {
                    if !first {
                        out.push_str(" AND ");
                    }
                    emit_wrapped(child, matches!(child, Node::Or(_)), out);
                }
                first = false;
            }
        }
        Node::Or(children) => {
            for (i, child) in children.iter().enumerate() {
                if i > 0 {
                    out.push_str(" OR ");
                }
                emit(child, out);
            }
        }
        Node::Not(l, r) => {
            emit_wrapped(l, needs_parens_left_of_not(l), out);
            out.push_str(" NOT ");
            emit_wrapped(r, !r.is_list(), out);
        }
    }
}

fn emit_wrapped(node: &Node, parens: bool, out: &mut String) {
    if parens {
        out.push('(');
        emit(node, out);
        out.push(')');
    } else {
        emit(node, out);
    }
}

fn emit_columns(columns: Columns, out: &mut String) {
    out.push_str(match columns {
        ALL_COLUMNS => "",
        0b01 => "topic : ",
        0b10 => "body : ",
        // Filters that intersect to nothing: FTS5 then matches nothing, and so does this.
        _ => "-{topic body} : ",
    });
}

fn emit_parts(parts: &[Part], out: &mut String) {
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(" + ");
        }
        out.push('"');
        out.push_str(&part.text.replace('"', "\"\""));
        out.push('"');
        if part.prefix {
            out.push('*');
        }
    }
}

// ---------------------------------------------------------------------------------------
// Case folding, ported from `sqlite3Fts5UnicodeFold` (SQLite 3.54, public domain) with
// diacritic removal off, which is what `tokenize='trigram'` uses. Rust's `to_lowercase`
// differs from it on some characters, and the scan must agree with the index.

/// `(first code point, flags, range length)`: the range folds by `FOLD_OFFSETS[flags >> 1]`;
/// when `flags & 1` is set only every second code point (same parity as `first`) folds.
#[rustfmt::skip]
const FOLD_RANGES: [(u16, u8, u8); 163] = [
    (65, 14, 26), (181, 64, 1), (192, 14, 23), (216, 14, 7), (256, 1, 48), (306, 1, 6),
    (313, 1, 16), (330, 1, 46), (376, 116, 1), (377, 1, 6), (383, 104, 1), (385, 50, 1),
    (386, 1, 4), (390, 44, 1), (391, 0, 1), (393, 42, 2), (395, 0, 1), (398, 32, 1),
    (399, 38, 1), (400, 40, 1), (401, 0, 1), (403, 42, 1), (404, 46, 1), (406, 52, 1),
    (407, 48, 1), (408, 0, 1), (412, 52, 1), (413, 54, 1), (415, 56, 1), (416, 1, 6),
    (422, 60, 1), (423, 0, 1), (425, 60, 1), (428, 0, 1), (430, 60, 1), (431, 0, 1),
    (433, 58, 2), (435, 1, 4), (439, 62, 1), (440, 0, 1), (444, 0, 1), (452, 2, 1),
    (453, 0, 1), (455, 2, 1), (456, 0, 1), (458, 2, 1), (459, 1, 18), (478, 1, 18),
    (497, 2, 1), (498, 1, 4), (502, 122, 1), (503, 134, 1), (504, 1, 40), (544, 110, 1),
    (546, 1, 18), (570, 70, 1), (571, 0, 1), (573, 108, 1), (574, 68, 1), (577, 0, 1),
    (579, 106, 1), (580, 28, 1), (581, 30, 1), (582, 1, 10), (837, 36, 1), (880, 1, 4),
    (886, 0, 1), (902, 18, 1), (904, 16, 3), (908, 26, 1), (910, 24, 2), (913, 14, 17),
    (931, 14, 9), (962, 0, 1), (975, 4, 1), (976, 140, 1), (977, 142, 1), (981, 146, 1),
    (982, 144, 1), (984, 1, 24), (1008, 136, 1), (1009, 138, 1), (1012, 130, 1), (1013, 128, 1),
    (1015, 0, 1), (1017, 152, 1), (1018, 0, 1), (1021, 110, 3), (1024, 34, 16), (1040, 14, 32),
    (1120, 1, 34), (1162, 1, 54), (1216, 6, 1), (1217, 1, 14), (1232, 1, 88), (1329, 22, 38),
    (4256, 66, 38), (4295, 66, 1), (4301, 66, 1), (7680, 1, 150), (7835, 132, 1), (7838, 96, 1),
    (7840, 1, 96), (7944, 150, 8), (7960, 150, 6), (7976, 150, 8), (7992, 150, 8), (8008, 150, 6),
    (8025, 151, 8), (8040, 150, 8), (8072, 150, 8), (8088, 150, 8), (8104, 150, 8), (8120, 150, 2),
    (8122, 126, 2), (8124, 148, 1), (8126, 100, 1), (8136, 124, 4), (8140, 148, 1), (8152, 150, 2),
    (8154, 120, 2), (8168, 150, 2), (8170, 118, 2), (8172, 152, 1), (8184, 112, 2), (8186, 114, 2),
    (8188, 148, 1), (8486, 98, 1), (8490, 92, 1), (8491, 94, 1), (8498, 12, 1), (8544, 8, 16),
    (8579, 0, 1), (9398, 10, 26), (11264, 22, 47), (11360, 0, 1), (11362, 88, 1), (11363, 102, 1),
    (11364, 90, 1), (11367, 1, 6), (11373, 84, 1), (11374, 86, 1), (11375, 80, 1), (11376, 82, 1),
    (11378, 0, 1), (11381, 0, 1), (11390, 78, 2), (11392, 1, 100), (11499, 1, 4), (11506, 0, 1),
    (42560, 1, 46), (42624, 1, 24), (42786, 1, 14), (42802, 1, 62), (42873, 1, 4), (42877, 76, 1),
    (42878, 1, 10), (42891, 0, 1), (42893, 74, 1), (42896, 1, 4), (42912, 1, 10), (42922, 72, 1),
    (65313, 14, 26),
];

/// Offsets added (modulo 2^16) to a folding code point; indexed by `flags >> 1`.
#[rustfmt::skip]
const FOLD_OFFSETS: [u16; 77] = [
    1, 2, 8, 15, 16, 26, 28, 32, 37, 38, 40, 48,
    63, 64, 69, 71, 79, 80, 116, 202, 203, 205, 206, 207,
    209, 210, 211, 213, 214, 217, 218, 219, 775, 7264, 10792, 10795,
    23228, 23256, 30204, 54721, 54753, 54754, 54756, 54787, 54793, 54809, 57153, 57274,
    57921, 58019, 58363, 61722, 65268, 65341, 65373, 65406, 65408, 65410, 65415, 65424,
    65436, 65439, 65450, 65462, 65472, 65476, 65478, 65480, 65482, 65488, 65506, 65511,
    65514, 65521, 65527, 65528, 65529,
];

fn fold_char(c: char) -> char {
    let cp = u32::from(c);
    let folded = if cp < 0x80 {
        u32::from(c.to_ascii_lowercase())
    } else if cp < 0x1_0000 {
        // The tokenizer's UTF-8 reader turns the noncharacters U+FFFE/U+FFFF into U+FFFD.
        let cp = if cp >= 0xFFFE { 0xFFFD } else { cp };
        let idx = FOLD_RANGES.partition_point(|&(first, _, _)| u32::from(first) <= cp);
        match idx.checked_sub(1).and_then(|i| FOLD_RANGES.get(i)) {
            Some(&(first, flags, len))
                if cp < u32::from(first) + u32::from(len)
                    && (u32::from(flags) & 1 & (u32::from(first) ^ cp)) == 0 =>
            {
                let offset = FOLD_OFFSETS
                    .get(usize::from(flags >> 1))
                    .copied()
                    .unwrap_or(0);
                (cp + u32::from(offset)) & 0xFFFF
            }
            _ => cp,
        }
    } else if (0x10400..0x10428).contains(&cp) {
        // Deseret, the only range above the BMP that SQLite folds.
        cp + 40
    } else {
        cp
    };
    char::from_u32(folded).unwrap_or(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> SearchQuery {
        match SearchQuery::parse(text) {
            Ok(query) => query,
            Err(e) => panic!("{text:?} refused: {e}"),
        }
    }

    fn parsed(text: &str) -> bool {
        !q(text).is_literal()
    }

    #[test]
    fn bare_words_are_anded_and_quoted() {
        let query = q("alpha beta");
        assert!(!query.is_literal());
        assert_eq!(query.fts_match(), r#""alpha" "beta""#);
        assert!(query.matches("Alpha", "the BETA"));
        assert!(!query.matches("alpha", "gamma"));
    }

    #[test]
    fn accepts_and_rejects_like_fts5() {
        for ok in [
            "abc",
            "abc AND def",
            "abc OR def NOT ghi",
            "(abc OR def) AND ghi",
            "abc (def)",
            "topic:abc",
            "TOPIC:abc",
            "\"topic\":abc",
            "topic:(abc OR def)",
            "{topic body}:abc",
            "-body:abc",
            "-{body}:abc",
            "topic:^abc",
            "^abc",
            "abc + def",
            "abc*",
            "abc *",
            "\"abc\"*",
            "NEAR(abc def)",
            "NEAR(abc def, 5)",
            "NEAR (abc)",
            "abc\u{1a}def",
            "\u{e9}cole",
            "abc\"def\"",
        ] {
            let expect_ok = ok != "abc (def)";
            assert_eq!(parsed(ok), expect_ok, "{ok:?}");
        }
        for bad in [
            "(abc) def",
            "abc topic:(def)",
            "NOT abc",
            "abc AND",
            "abc AND NOT def",
            "abc NOT NOT",
            "^topic:abc",
            "foo:abc",
            "re:",
            "near(abc)",
            "\"NEAR\"(abc)",
            "NEAR()",
            "NEAR(abc, x)",
            "NEAR(abc, \"5\")",
            "abc**",
            "abc +",
            "abc-def",
            "C++",
            "a.b",
            "abc \"def",
            "abc\u{b}def",
            "{}:abc",
            "topic:body:abc",
            "()",
            "abc)",
            "(abc",
        ] {
            assert!(
                !parsed(bad),
                "{bad:?} should fall back to the literal reading"
            );
        }
    }

    #[test]
    fn precedence_not_over_and_over_or() {
        // `a OR b AND c` = a OR (b AND c)
        let query = q("aaa OR bbb AND ccc");
        assert!(query.matches("aaa", ""));
        assert!(!query.matches("bbb", ""));
        assert!(query.matches("bbb ccc", ""));
        // `a AND b OR c` = (a AND b) OR c
        let query = q("aaa AND bbb OR ccc");
        assert!(query.matches("ccc", ""));
        assert!(!query.matches("aaa", ""));
        // `a NOT b AND c` = (a NOT b) AND c
        let query = q("aaa NOT bbb AND ccc");
        assert!(query.matches("aaa ccc", ""));
        assert!(!query.matches("aaa bbb ccc", ""));
        // `a OR b NOT c` = a OR (b NOT c)
        let query = q("aaa OR bbb NOT ccc");
        assert!(query.matches("aaa ccc", ""));
        assert!(!query.matches("bbb ccc", ""));
        // Juxtaposition binds tighter than NOT: `a b NOT c` = (a b) NOT c.
        let query = q("aaa bbb NOT ccc");
        assert!(query.matches("aaa bbb", ""));
        assert!(!query.matches("aaa bbb ccc", ""));
        // Left associativity: `a NOT b NOT c` = (a NOT b) NOT c.
        let query = q("aaa NOT bbb NOT ccc");
        assert!(query.matches("aaa", ""));
        assert!(!query.matches("aaa ccc", ""));
        // `a NOT b c` = a NOT (b c)
        let query = q("aaa NOT bbb ccc");
        assert!(query.matches("aaa bbb", ""));
        assert!(!query.matches("aaa bbb ccc", ""));
    }

    #[test]
    fn emitted_text_keeps_structure() {
        assert_eq!(
            q("aaa OR bbb AND ccc").fts_match(),
            r#""bbb" "ccc" OR "aaa""#
        );
        assert_eq!(
            q("(aaa OR bbb) ccc").fts_match(),
            q("(aaa OR bbb) ccc").fts_match()
        );
        assert_eq!(
            q("(aaa OR bbb) AND ccc").fts_match(),
            r#"("aaa" OR "bbb") AND "ccc""#
        );
        assert_eq!(
            q("aaa NOT (bbb NOT ccc)").fts_match(),
            r#""aaa" NOT ("bbb" NOT "ccc")"#
        );
        assert_eq!(
            q("(aaa OR bbb) NOT ccc").fts_match(),
            r#"("aaa" OR "bbb") NOT "ccc""#
        );
        assert_eq!(q("aaa NOT bbb ccc").fts_match(), r#""aaa" NOT "bbb" "ccc""#);
        assert_eq!(q("((((aaa))))").fts_match(), r#""aaa""#);
        assert_eq!(
            q("topic:(aaa OR body:bbb)").fts_match(),
            r#"topic : "aaa" OR -{topic body} : "bbb""#
        );
        assert_eq!(
            q("-topic:abc* + def").fts_match(),
            r#"body : "abc"* + "def""#
        );
        assert_eq!(
            q("NEAR(abc def, 007)").fts_match(),
            r#"NEAR("abc" "def", 7)"#
        );
    }

    #[test]
    fn phrases_and_doubled_quotes() {
        let query = q(r#""say ""hi"" now""#);
        assert!(!query.is_literal());
        assert!(query.matches("", r#"they SAY "HI" NOW ok"#));
        assert!(!query.matches("", "say hi now"));
        assert_eq!(query.fts_match(), r#""say ""hi"" now""#);
    }

    #[test]
    fn prefix_is_a_substring_under_trigram() {
        let query = q("rotat*");
        assert!(query.matches("", "key ROTATION done"));
        assert!(query.matches("", "unrotated"));
        assert!(!query.matches("", "rot at"));
    }

    #[test]
    fn column_filters() {
        let query = q("topic:deploy");
        assert!(query.matches("Deploy notes", ""));
        assert!(!query.matches("notes", "deploy"));
        // A group never juxtaposes, so this is read literally.
        assert!(q("body:(alpha OR beta) gamma").is_literal());
        let query = q("body:(alpha OR beta) AND gamma");
        assert!(query.matches("gamma", "beta"));
        assert!(!query.matches("beta gamma", ""));
        let query = q("topic:(body:abc)");
        assert!(!query.matches("abc", "abc"));
    }

    #[test]
    fn literal_fallback() {
        for (text, topic, yes) in [
            ("C++", "we use c++ here", true),
            ("C++", "we use c here", false),
            ("re:", "RE: hello", true),
            ("a AND NOT b", "a and not b", true),
            ("a AND NOT b", "a b", false),
            ("abc \"def", "\"DEF abc", true),
        ] {
            let query = q(text);
            assert!(query.is_literal(), "{text:?}");
            assert_eq!(query.matches(topic, ""), yes, "{text:?} on {topic:?}");
        }
        assert_eq!(q("C++ x.y").fts_match(), r#""C++" "x.y""#);
        assert!(q("a AND NOT b").needs_scan());
        assert_eq!(q("a AND NOT b").check_scannable(), Ok(()));
    }

    #[test]
    fn terms_and_needles_per_phrase() {
        let query = q("Deploy \"xxxxx\" OR (abc NOT retry) OR NEAR(keys lock)");
        assert_eq!(
            query.index_terms(),
            [
                vec!["abc"],
                vec!["ret", "etr", "try"],
                vec!["dep", "epl", "plo", "loy"],
                vec!["xxx", "xxx", "xxx"],
                vec!["key", "eys"],
                vec!["loc", "ock"],
            ]
        );
        assert_eq!(
            query.shown_needles(),
            ["abc", "deploy", "xxxxx", "keys", "lock"]
        );
        assert_eq!(query.phrase_count(), 6);
        assert_eq!(q("éCole").index_terms(), [vec!["éco", "col", "ole"]]);
        assert_eq!(q("\"xx\" + abc").index_terms(), [vec!["abc"]]);
        assert_eq!(q("deploy").check_scannable_for(ScanReason::Cost), Ok(()));
        let err = q("NEAR(abc cde)").check_scannable_for(ScanReason::Cost);
        let Err(err) = err else {
            panic!("NEAR cannot be scanned");
        };
        assert!(
            err.to_string()
                .contains("phrases this long over text this repetitive"),
            "{err}"
        );
    }

    #[test]
    fn short_terms_need_the_scan() {
        assert!(q("ab").needs_scan());
        assert!(q("abc OR \"x\"").needs_scan());
        assert!(!q("abc OR \"xyz\"").needs_scan());
        assert!(q("ab*").needs_scan());
        assert!(!q("\u{e9}t\u{e9}").needs_scan());
        let query = q("go OR topic:rust");
        assert!(query.matches("Go", ""));
        assert!(query.matches("", "ago"));
        assert!(query.matches("RUST", ""));
        assert!(!query.matches("", "rust"));
        assert_eq!(query.check_scannable(), Ok(()));
    }

    #[test]
    fn scan_refuses_what_it_cannot_mimic() {
        for (text, construct) in [
            ("NEAR(ab cde)", "NEAR(…)"),
            (
                "topic:(ab OR cde)",
                "a column filter on a group (such as topic:(…))",
            ),
            (
                "{topic}:ab",
                "a column list in braces (such as {topic body}:)",
            ),
            ("-topic:ab", "an excluded column (such as -topic:)"),
            ("ab + cde", "'+' joining phrase parts"),
            ("^ab", "'^' (match at the start of a column)"),
        ] {
            let query = q(text);
            assert!(query.needs_scan(), "{text:?}");
            let err = query.check_scannable();
            let expected = QueryError::Unscannable {
                construct,
                reason: ScanReason::ShortTerm,
            };
            assert_eq!(err, Err(expected.clone()), "{text:?}");
            let message = expected.to_string();
            assert!(message.contains("cannot be combined with a term shorter than 3 characters"));
            assert!(message.contains(construct));
        }
        // Without a short term the same syntax goes to the index; a caller scanning anyway
        // (no FTS5) hears why.
        let err = q("NEAR(abc cde)").check_scannable();
        assert_eq!(
            err,
            Err(QueryError::Unscannable {
                construct: "NEAR(…)",
                reason: ScanReason::NoIndex
            })
        );
    }

    #[test]
    fn limits() {
        assert_eq!(SearchQuery::parse(""), Err(QueryError::Required));
        assert_eq!(
            SearchQuery::parse(" \t\n\u{3000}\u{1f}"),
            Err(QueryError::Required)
        );
        assert_eq!(SearchQuery::parse("\0"), Err(QueryError::Required));
        assert_eq!(
            QueryError::Required.to_string(),
            "'query' is required; pass the words to search for"
        );

        let long = "a".repeat(MAX_QUERY_CHARS);
        assert!(SearchQuery::parse(&long).is_ok());
        let longer = "\u{e9}".repeat(MAX_QUERY_CHARS + 1);
        assert_eq!(SearchQuery::parse(&longer), Err(QueryError::TooLong(4097)));
        assert_eq!(
            QueryError::TooLong(4097).to_string(),
            "'query' must be at most 4096 characters (got 4097)"
        );

        let words = |n: usize| (0..n).map(|i| format!("w{i:03}")).collect::<Vec<_>>();
        assert!(SearchQuery::parse(&words(256).join(" ")).is_ok());
        assert_eq!(
            SearchQuery::parse(&words(257).join(" ")),
            Err(QueryError::TooManyTerms(257))
        );
        assert_eq!(
            SearchQuery::parse(&words(257).join(" OR ")),
            Err(QueryError::TooManyTerms(257))
        );
        // The literal path counts its pieces.
        assert_eq!(
            SearchQuery::parse(&words(257).join(". ")),
            Err(QueryError::TooManyTerms(257))
        );
        assert_eq!(
            QueryError::TooManyTerms(257).to_string(),
            "'query' may have at most 256 terms (got 257)"
        );

        let nest = |n: usize| format!("{}abc{}", "(".repeat(n), ")".repeat(n));
        let deep = q(&nest(256));
        assert!(!deep.is_literal());
        assert!(!deep.needs_scan());
        assert_eq!(SearchQuery::parse(&nest(257)), Err(QueryError::TooDeep));
        // Unbalanced, so literal, and still refused.
        assert_eq!(
            SearchQuery::parse(&"(".repeat(257)),
            Err(QueryError::TooDeep)
        );
        // Parentheses inside a phrase are text.
        assert!(SearchQuery::parse(&format!("\"{}\"", "(".repeat(300))).is_ok());
        assert_eq!(
            QueryError::TooDeep.to_string(),
            "'query' may nest parentheses at most 256 deep"
        );
    }

    #[test]
    fn deep_structure_that_fts5_cannot_parse_goes_to_the_scan() {
        let mut text = String::from("t00");
        for i in 1..60 {
            text = format!("t{i:02} NOT ({text})");
        }
        let query = q(&text);
        assert!(query.needs_scan());
        assert_eq!(query.check_scannable(), Ok(()));
        assert!(query.matches("t59", ""));
        assert!(!query.matches("t59 t58", ""));

        let near = format!("{text} OR NEAR(abc def)");
        let err = q(&near).check_scannable();
        assert_eq!(
            err,
            Err(QueryError::Unscannable {
                construct: "NEAR(…)",
                reason: ScanReason::Nesting
            })
        );
    }

    #[test]
    fn plus_follows_trigram_adjacency() {
        assert!(q("abc + bcd").matches("", "xabcdx"));
        assert!(!q("abc + bcd").matches("", "abc bcd"));
        assert!(!q("abc + xyz").matches("", "abcxyz"));
        assert!(q("abcd + cdef").matches("", "ABCDEF"));
    }

    #[test]
    fn caret_anchors_at_column_start() {
        let query = q("^hello");
        assert!(query.matches("Hello there", ""));
        assert!(!query.matches("say hello", ""));
        assert!(query.matches("", "hello"));
    }

    #[test]
    fn folding_is_sqlites() {
        assert_eq!(
            fold("ÉCOLE Straße ẞ ΣΑΣ Ж \u{212a}"),
            "école straße ß σασ ж k"
        );
        // SQLite leaves dotted capital I alone (Rust would lowercase it to "i\u{307}").
        assert_eq!(fold("\u{130}"), "\u{130}");
        assert_eq!(fold("a\0b\u{ffff}"), "ab\u{fffd}");
        assert_eq!(fold("\u{10400}"), "\u{10428}");
        assert!(q("ÉCOLE").matches("", "l'école"));
    }

    #[test]
    fn nul_is_ignored() {
        let query = q("ab\0c");
        assert_eq!(query.fts_match(), r#""abc""#);
        assert!(query.matches("", "xab\0cx"));
    }
}
