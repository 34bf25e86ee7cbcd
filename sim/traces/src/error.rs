//! The one error type for bad input files: it names the file, the line and the field.
//!
//! Loading scenarios and traces is the only fallible layer of dlsim; the engine and model
//! treat broken invariants as bugs (`assert!`). The CLI prints this error and exits 2.

use std::fmt;
use std::path::{Path, PathBuf};

/// A problem with a user-supplied file, located as precisely as the format allows.
#[derive(Debug, thiserror::Error)]
pub struct InputError {
    pub file: PathBuf,
    /// 1-based line number, when known.
    pub line: Option<usize>,
    /// Dotted path of the offending field, e.g. `cluster.groups[0].cores`.
    pub field: Option<String>,
    pub message: String,
}

impl InputError {
    pub fn new(file: &Path, message: impl Into<String>) -> Self {
        InputError {
            file: file.to_path_buf(),
            line: None,
            field: None,
            message: message.into(),
        }
    }

    pub fn at_line(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }

    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// Names `field`, a JSON path into `text` (the file's contents, e.g.
    /// `cluster.groups[2].count`), and places the error on the line of that value there
    /// ([`crate::locate::locate`]; a missing value's nearest enclosing one).
    pub fn field_in(self, text: &str, field: impl Into<String>) -> Self {
        let field = field.into();
        let e = match crate::locate::locate(text, &field) {
            Some(p) => self.at_line(p.line),
            None => self,
        };
        e.field(field)
    }

    /// Converts a serde_json error met while deserialising `file`, keeping the field path.
    /// `line_offset` is added to serde's line (for JSON Lines, where each record is parsed
    /// on its own and serde counts from 1).
    pub fn from_json(
        file: &Path,
        err: serde_path_to_error::Error<serde_json::Error>,
        line_offset: usize,
    ) -> Self {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let line = if inner.line() > 0 {
            Some(inner.line() + line_offset)
        } else {
            None
        };
        // serde_json appends " at line L column C"; we report the line ourselves.
        let mut message = inner.to_string();
        if let Some(cut) = message.find(" at line ") {
            message.truncate(cut);
        }
        InputError {
            file: file.to_path_buf(),
            line,
            field: if path == "." || path.is_empty() {
                None
            } else {
                Some(path)
            },
            message,
        }
    }
}

/// Parses one JSON document from `text` (read from `file`) into `T`, keeping the field path
/// of an error, and refuses anything but whitespace after it (`}garbage`, a second object
/// on the same line). `line_offset` is added to serde's line numbers, as in
/// [`InputError::from_json`]. Every loader of a JSON input goes through here.
pub fn parse_json_document<T: serde::de::DeserializeOwned>(
    file: &Path,
    text: &str,
    line_offset: usize,
) -> Result<T, InputError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let value: T = serde_path_to_error::deserialize(&mut *de)
        .map_err(|e| InputError::from_json(file, e, line_offset))?;
    de.end().map_err(|_| {
        let e = InputError::new(file, "trailing content after the JSON document");
        trailing_at(e, text, line_offset)
    })?;
    Ok(value)
}

/// Places a trailing-content error on the line where the trailing content starts.
fn trailing_at(e: InputError, text: &str, line_offset: usize) -> InputError {
    // Re-read the first document to find where it ends; the trailing content starts at
    // the first non-blank character after it.
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<serde::de::IgnoredAny>();
    let _ = stream.next();
    let offset = stream.byte_offset();
    let rest = &text[offset..];
    let skip = rest.len() - rest.trim_start().len();
    let line = text[..offset + skip].matches('\n').count() + 1;
    e.at_line(line + line_offset)
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}
