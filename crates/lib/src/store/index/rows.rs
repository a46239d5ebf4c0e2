//! How the index's reads turn SQL rows into typed rows: the [`FromRow`]
//! trait, the typed parsing of stored ids, roles, states and JSON columns,
//! and the few helpers ([`Index::rows`], [`Index::row`], [`Index::row_opt`],
//! [`Index::each_row`], [`Index::values`], [`Index::scalar`],
//! [`Index::scalar_opt`], [`Index::exec`]) that prepare a cached statement,
//! map its rows and name the database in the error, so each statement is
//! one line of plumbing.
//!
//! Owns the mapping, not the queries (those are the index's nouns) and not
//! the writes' transactions. A stored value that does not decode is an error
//! naming its table, column and row ([`CorruptColumn`]), never a default:
//! the index is a cache, and a damaged one is rebuilt, not read around.

use std::cell::Cell;
use std::str::FromStr;

use rusqlite::types::{FromSql, Type};
use rusqlite::{OptionalExtension as _, Params, Row};
use serde::de::DeserializeOwned;

use super::Index;
use crate::core::ids::{RecordId, Role};
use crate::store::error::{CorruptColumn, SqlContext as _, StoreError, StoreResult};

/// A typed row read from a statement's columns by their names (a tuple
/// reads its columns in the order selected: only for two to four columns
/// whose meaning the SELECT beside it spells).
pub trait FromRow: Sized {
    /// Reads one row.
    fn from_row(row: &Named<'_, '_>) -> rusqlite::Result<Self>;
}

/// One row with its statement's column names, read once per query.
///
/// rusqlite finds a column by name by asking SQLite for every column's name
/// (a C string, measured with `strlen`) until one matches, for every value
/// of every row: on the status call's row-heavy queries that was a tenth of
/// the call. Here a name is compared with the names read once, starting
/// after the column found last, so reading the columns in the order
/// selected costs one comparison each.
pub struct Named<'r, 's> {
    row: &'r Row<'s>,
    names: &'r [String],
    next: Cell<usize>,
}

impl<'r, 's> Named<'r, 's> {
    /// `row`, whose statement names its columns `names`.
    pub fn new(row: &'r Row<'s>, names: &'r [String]) -> Self {
        Self {
            row,
            names,
            next: Cell::new(0),
        }
    }

    /// The value of a column, by name or by place.
    pub fn get<I: Column, T: FromSql>(&self, column: I) -> rusqlite::Result<T> {
        self.row.get(column.place(self)?)
    }

    /// The name of column `i`, if there is one.
    pub fn name(&self, i: usize) -> Option<&str> {
        self.names.get(i).map(String::as_str)
    }

    fn find(&self, name: &str) -> rusqlite::Result<usize> {
        let n = self.names.len();
        let start = self.next.get();
        (0..n)
            .map(|k| (start + k) % n)
            .find(|&i| self.names[i].eq_ignore_ascii_case(name))
            .inspect(|&i| self.next.set(i + 1))
            .ok_or_else(|| rusqlite::Error::InvalidColumnName(name.to_owned()))
    }
}

/// How [`Named::get`] finds a column: by its name or its place.
pub trait Column {
    /// The column's place in the row.
    fn place(self, row: &Named<'_, '_>) -> rusqlite::Result<usize>;
}

impl Column for usize {
    fn place(self, _: &Named<'_, '_>) -> rusqlite::Result<usize> {
        Ok(self)
    }
}

impl Column for &str {
    fn place(self, row: &Named<'_, '_>) -> rusqlite::Result<usize> {
        row.find(self)
    }
}

/// The column names of `st`, read once for all its rows.
fn names(st: &rusqlite::Statement<'_>) -> Vec<String> {
    st.column_names().map(str::to_owned).collect()
}

macro_rules! tuple_from_row {
    ($($t:ident $i:tt),+) => {
        impl<$($t: FromSql),+> FromRow for ($($t,)+) {
            fn from_row(row: &Named<'_, '_>) -> rusqlite::Result<Self> {
                Ok(($(row.get::<_, $t>($i)?,)+))
            }
        }
    };
}
tuple_from_row!(A 0, B 1);
tuple_from_row!(A 0, B 1, C 2);
tuple_from_row!(A 0, B 1, C 2, D 3);

/// Which row a decoded column belongs to, for the error that names it.
#[derive(Clone, Copy)]
pub(in crate::store) struct At<'a> {
    /// The table.
    pub table: &'static str,
    /// The row's key.
    pub row: &'a str,
}

impl At<'_> {
    /// The error of a value of `column` that does not decode, with why.
    pub fn corrupt(&self, column: &'static str, reason: String) -> rusqlite::Error {
        // The index is not read back: `SqlContext::db` keeps the typed error.
        rusqlite::Error::FromSqlConversionFailure(
            0,
            Type::Text,
            Box::new(CorruptColumn {
                table: self.table,
                column,
                row: self.row.to_owned(),
                reason,
            }),
        )
    }

    /// `text`, read from the JSON column `column`, decoded.
    pub fn decode_json<T: DeserializeOwned>(
        &self,
        column: &'static str,
        text: &str,
    ) -> rusqlite::Result<T> {
        serde_json::from_str(text).map_err(|e| self.corrupt(column, e.to_string()))
    }

    /// `text`, read from the text column `column`, parsed as a `T` ([`Stored`]).
    pub fn decode<T: Stored>(&self, column: &'static str, text: &str) -> rusqlite::Result<T> {
        T::parse_stored(text).map_err(|reason| self.corrupt(column, reason))
    }

    /// The JSON column `column` (read by name), decoded.
    pub fn json<T: DeserializeOwned>(
        &self,
        row: &Named<'_, '_>,
        column: &'static str,
    ) -> rusqlite::Result<T> {
        self.decode_json(column, &row.get::<_, String>(column)?)
    }

    /// The nullable JSON column `column` (read by name), decoded when set.
    pub fn json_opt<T: DeserializeOwned>(
        &self,
        row: &Named<'_, '_>,
        column: &'static str,
    ) -> rusqlite::Result<Option<T>> {
        row.get::<_, Option<String>>(column)?
            .map(|text| self.decode_json(column, &text))
            .transpose()
    }
}

/// A core type the index stores as text, parsed back as the fold wrote it
/// (`FromSql`-style; core has no SQLite, so its parsing from a column lives
/// here). The error says what the text is not.
pub trait Stored: Sized {
    /// Parses the stored text.
    fn parse_stored(text: &str) -> Result<Self, String>;
}

impl Stored for RecordId {
    fn parse_stored(text: &str) -> Result<Self, String> {
        RecordId::parse(text).ok_or_else(|| format!("'{text}' is not a 64-character hex id"))
    }
}

impl Stored for Role {
    fn parse_stored(text: &str) -> Result<Self, String> {
        Role::new(text).map_err(|e| e.to_string())
    }
}

macro_rules! stored_vocabulary {
    ($($t:ty),+) => {$(
        impl Stored for $t {
            fn parse_stored(text: &str) -> Result<Self, String> {
                <$t>::from_str(text).map_err(|e| e.to_string())
            }
        }
    )+};
}
stored_vocabulary!(crate::core::vocab::Kind, crate::core::vocab::WorkStatus);

impl Stored for crate::core::vocab::DebtStatus {
    fn parse_stored(text: &str) -> Result<Self, String> {
        Self::parse_field(text, "status").map_err(|e| e.to_string())
    }
}

impl Index {
    /// Every row of `sql` with `params`, mapped.
    pub(in crate::store) fn rows<T: FromRow>(
        &self,
        sql: &str,
        params: impl Params,
    ) -> StoreResult<Vec<T>> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut st| {
                let names = names(&st);
                st.query_map(params, |r| T::from_row(&Named::new(r, &names)))?
                    .collect()
            })
            .db(&self.path)
    }

    /// The one row of `sql` with `params`, mapped (an aggregate, or a row
    /// that must be there).
    pub(in crate::store) fn row<T: FromRow>(
        &self,
        sql: &str,
        params: impl Params,
    ) -> StoreResult<T> {
        self.first_row(sql, params).db(&self.path)
    }

    /// The first row of `sql` with `params`, mapped (`None` when there is none).
    pub(in crate::store) fn row_opt<T: FromRow>(
        &self,
        sql: &str,
        params: impl Params,
    ) -> StoreResult<Option<T>> {
        self.first_row(sql, params).optional().db(&self.path)
    }

    /// The first row of `sql` with `params`, mapped; SQLite's error when
    /// there is none.
    fn first_row<T: FromRow>(&self, sql: &str, params: impl Params) -> rusqlite::Result<T> {
        let mut st = self.conn.prepare_cached(sql)?;
        let names = names(&st);
        st.query_row(params, |r| T::from_row(&Named::new(r, &names)))
    }

    /// The rows of `sql` with `params`, mapped and handed to `each` one at a
    /// time until it returns `false` (nothing is collected).
    pub(in crate::store) fn each_row<T: FromRow, E: From<StoreError>>(
        &self,
        sql: &str,
        params: impl Params,
        mut each: impl FnMut(T) -> Result<bool, E>,
    ) -> Result<(), E> {
        let p = &self.path;
        let mut st = self.conn.prepare_cached(sql).db(p)?;
        let names = names(&st);
        let mut rows = st.query(params).db(p)?;
        while let Some(r) = rows.next().db(p)? {
            if !each(T::from_row(&Named::new(r, &names)).db(p)?)? {
                break;
            }
        }
        Ok(())
    }

    /// The first column of every row of `sql` with `params`.
    pub(in crate::store) fn values<T: FromSql>(
        &self,
        sql: &str,
        params: impl Params,
    ) -> StoreResult<Vec<T>> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut st| st.query_map(params, |r| r.get(0))?.collect())
            .db(&self.path)
    }

    /// The first column of the one row of `sql` with `params` (an aggregate).
    pub(in crate::store) fn scalar<T: FromSql>(
        &self,
        sql: &str,
        params: impl Params,
    ) -> StoreResult<T> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut st| st.query_row(params, |r| r.get(0)))
            .db(&self.path)
    }

    /// The first column of the first row of `sql` with `params`, `None`
    /// when there is no row.
    pub(in crate::store) fn scalar_opt<T: FromSql>(
        &self,
        sql: &str,
        params: impl Params,
    ) -> StoreResult<Option<T>> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut st| st.query_row(params, |r| r.get(0)).optional())
            .db(&self.path)
    }

    /// Runs one statement of `sql` with `params`; the number of rows it changed.
    pub(in crate::store) fn exec(&self, sql: &str, params: impl Params) -> StoreResult<usize> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut st| st.execute(params))
            .db(&self.path)
    }
}
