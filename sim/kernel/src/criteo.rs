//! Reader for real Criteo-format rows: `label, I1..I13, C1..C26`.
//!
//! Accepts tab- or comma-separated lines (the separator is detected per line), an optional
//! header line starting with `label`, empty fields as missing values, fractional integer
//! features (`260.0`) and categorical values. A categorical value is an opaque token: the
//! usual 32-bit hex hash is read as its number; any other token (real files carry
//! spreadsheet-mangled hashes such as `2.42E+05` in DLRover's Criteo example) gets a stable
//! hash of its bytes in `[2^32, 2^40)`, apart from every hex value. Missing dense values
//! become 0; a missing categorical value becomes its field's reserved "missing" ID. Malformed
//! input is an error naming the line and column; nothing here panics on file content.

use std::path::{Path, PathBuf};

use crate::data::{dense_transform, InMemory, Sample, NUM_DENSE, NUM_SPARSE};
use crate::plan::{feature_id, stable_hash};

/// Value used for a missing categorical feature (outside the 32-bit hash range).
pub const MISSING_VALUE: u64 = 1 << 40;

/// Why a Criteo file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CriteoError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("line {line}: expected {expected} columns, found {found}")]
    Columns {
        line: usize,
        expected: usize,
        found: usize,
    },
    #[error("line {line}, column {column} ({name}): cannot parse {value:?}")]
    Value {
        line: usize,
        column: usize,
        name: String,
        value: String,
    },
}

/// Parsed rows held in memory.
pub type CriteoData = InMemory;

fn column_name(c: usize) -> String {
    match c {
        0 => "label".into(),
        1..=NUM_DENSE => format!("I{c}"),
        _ => format!("C{}", c - NUM_DENSE),
    }
}

/// Parses one data line (1-based `line` for messages) into sample number `id`.
pub fn parse_line(text: &str, line: usize, id: u64) -> Result<Sample, CriteoError> {
    let sep = if text.contains('\t') { '\t' } else { ',' };
    let cols: Vec<&str> = text.trim_end_matches(['\r', '\n']).split(sep).collect();
    let expected = 1 + NUM_DENSE + NUM_SPARSE;
    if cols.len() != expected {
        return Err(CriteoError::Columns {
            line,
            expected,
            found: cols.len(),
        });
    }
    let bad = |column: usize| CriteoError::Value {
        line,
        column: column + 1,
        name: column_name(column),
        value: cols[column].to_string(),
    };
    let label: f32 = cols[0].trim().parse().map_err(|_| bad(0))?;
    if label != 0.0 && label != 1.0 {
        return Err(bad(0));
    }
    let mut dense = [0.0f32; NUM_DENSE];
    for (k, d) in dense.iter_mut().enumerate() {
        let s = cols[1 + k].trim();
        if !s.is_empty() {
            let v: f32 = s.parse().map_err(|_| bad(1 + k))?;
            if !v.is_finite() {
                return Err(bad(1 + k));
            }
            *d = dense_transform(v);
        }
    }
    let mut sparse = [0u64; NUM_SPARSE];
    for (f, slot) in sparse.iter_mut().enumerate() {
        let c = 1 + NUM_DENSE + f;
        let s = cols[c].trim();
        let value = if s.is_empty() {
            MISSING_VALUE
        } else {
            categorical_value(s)
        };
        *slot = feature_id(f, value);
    }
    Ok(Sample {
        id,
        label,
        dense,
        sparse,
    })
}

/// The number of a categorical token: a hex hash below 2^32 as itself, any other token a
/// stable hash of its bytes in `[2^32, 2^40)` (never [`MISSING_VALUE`]).
fn categorical_value(token: &str) -> u64 {
    match u64::from_str_radix(token, 16) {
        Ok(v) if v < 1 << 32 => v,
        _ => {
            let h = token.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                stable_hash(h ^ u64::from(b))
            });
            (1 << 32) + h % (MISSING_VALUE - (1 << 32))
        }
    }
}

/// Parses a whole file's text; blank lines and a leading `label...` header are skipped.
pub fn parse_str(text: &str) -> Result<CriteoData, CriteoError> {
    let mut samples = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || (i == 0 && line.starts_with("label")) {
            continue;
        }
        samples.push(parse_line(line, i + 1, samples.len() as u64)?);
    }
    Ok(CriteoData { samples })
}

/// Reads and parses a Criteo-format file.
pub fn read_file(path: &Path) -> Result<CriteoData, CriteoError> {
    let text = std::fs::read_to_string(path).map_err(|source| CriteoError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_str(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(sep: &str) -> String {
        let mut cols = vec!["1".to_string(), "".into(), "3".into(), "260.0".into()];
        cols.extend((0..10).map(|i| i.to_string()));
        cols.extend((0..26).map(|i| {
            if i % 5 == 0 {
                String::new()
            } else {
                format!("{:08x}", i * 977)
            }
        }));
        cols.join(sep)
    }

    #[test]
    fn tab_and_comma_give_the_same_sample() {
        let a = parse_line(&row("\t"), 1, 0).unwrap();
        let b = parse_line(&row(","), 1, 0).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.label, 1.0);
        assert_eq!(a.dense[0], 0.0);
        assert_eq!(a.sparse[0], feature_id(0, MISSING_VALUE));
        assert_eq!(a.sparse[1], feature_id(1, 977));
    }

    #[test]
    fn errors_name_line_and_column() {
        let bad = row(",").replacen("260.0", "abc", 1);
        let e = parse_str(&format!("{}\n{}", row(","), bad))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("I3"), "{e}");
        let e = parse_line("1,2,3", 9, 0).unwrap_err().to_string();
        assert!(e.contains("line 9") && e.contains("40 columns"), "{e}");
        assert!(parse_line(&row(",").replacen("1", "7", 1), 1, 0).is_err());
    }

    #[test]
    fn non_hex_categorical_tokens_get_stable_ids_apart_from_hex_ones() {
        let v = categorical_value("2.42E+05");
        assert_eq!(v, categorical_value("2.42E+05"));
        assert_ne!(v, categorical_value("2.43E+05"));
        assert!(((1 << 32)..MISSING_VALUE).contains(&v), "{v}");
        assert_eq!(categorical_value("68fd1e64"), 0x68fd_1e64);
        // A hex token too long for 32 bits is a token too.
        assert!(categorical_value("1ffffffffff") >= 1 << 32);
    }
}
