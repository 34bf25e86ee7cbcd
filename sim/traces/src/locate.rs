//! Where a value sits in a JSON text, by its path: the one locator every loader's error
//! uses to name the line of a bad value (issue #21).
//!
//! A path is what `serde_path_to_error` reports and what the range checks name:
//! object keys joined by `.`, array indices as `[n]`, e.g. `cluster.groups[2].count`.
//! Keys may hold dots themselves (a sweep's `scenario_params` key
//! `faults.pod_failure_per_day`): at each object the longest key that the rest of the
//! path starts with is taken. A key given twice resolves to its last occurrence, the one
//! a map keeps. The scanner is iterative (no recursion, so no depth to exhaust) and reads
//! only as far as the path needs.

/// A 1-based line and column (in characters) of a JSON text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// The position of the value at `path` in the JSON `text`. When the value itself is
/// missing (a required key left out, an index past the end), the position of its deepest
/// ancestor that is there, except the whole document: `None` when not even the path's
/// first step is found, or when `text` is not JSON as far as the path goes. An empty path
/// (or `.`) is the document itself.
pub fn locate(text: &str, path: &str) -> Option<Position> {
    let bytes = text.as_bytes();
    let mut at = skip_ws(bytes, 0);
    let mut rest = path.strip_prefix('.').unwrap_or(path);
    let mut found_any = rest.is_empty();
    while !rest.is_empty() {
        let next = match bytes.get(at)? {
            b'{' => member(bytes, at, rest),
            b'[' => element(bytes, at, rest),
            _ => None,
        };
        match next {
            Some((value_at, after)) => {
                at = value_at;
                rest = after.strip_prefix('.').unwrap_or(after);
                found_any = true;
            }
            None => break,
        }
    }
    found_any.then(|| position(text, at))
}

/// Within the object at `at`, the value of the longest key that `path` starts with (as a
/// whole step: followed by nothing, `.` or `[`), and the rest of the path after it.
fn member<'p>(b: &[u8], at: usize, path: &'p str) -> Option<(usize, &'p str)> {
    let mut i = skip_ws(b, at + 1);
    let mut best: Option<(usize, usize)> = None; // (key length, value start)
    if b.get(i) == Some(&b'}') {
        return None;
    }
    loop {
        let (key, after_key) = string(b, i)?;
        i = skip_ws(b, after_key);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let value_at = skip_ws(b, i + 1);
        if is_step(path, &key) && best.is_none_or(|(len, _)| key.len() >= len) {
            best = Some((key.len(), value_at));
        }
        i = skip_ws(b, skip_value(b, value_at)?);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => break,
            _ => return None,
        }
    }
    best.map(|(len, value_at)| (value_at, &path[len..]))
}

/// Whether `key` is `path`'s first step.
fn is_step(path: &str, key: &str) -> bool {
    path.strip_prefix(key)
        .is_some_and(|r| r.is_empty() || r.starts_with('.') || r.starts_with('['))
}

/// Within the array at `at`, the element `path` starts with (`[n]`) and the rest.
fn element<'p>(b: &[u8], at: usize, path: &'p str) -> Option<(usize, &'p str)> {
    let inner = path.strip_prefix('[')?;
    let close = inner.find(']')?;
    let index: usize = inner[..close].parse().ok()?;
    let rest = &inner[close + 1..];
    let mut i = skip_ws(b, at + 1);
    if b.get(i) == Some(&b']') {
        return None;
    }
    for n in 0.. {
        if n == index {
            return Some((i, rest));
        }
        i = skip_ws(b, skip_value(b, i)?);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            _ => return None,
        }
    }
    None
}

/// The index just past the JSON value starting at `at`: scalars, strings (escapes
/// included) and nested containers, the nesting counted rather than recursed into.
fn skip_value(b: &[u8], at: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = at;
    loop {
        match *b.get(i)? {
            b'"' => i = string_end(b, i)?,
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                i += 1;
            }
            _ => {
                // A scalar or a separator inside a container: up to the next structural byte.
                let start = i;
                while i < b.len() && !matches!(b[i], b'"' | b'{' | b'[' | b'}' | b']') {
                    if depth == 0 && matches!(b[i], b',' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    i += 1;
                }
                if depth == 0 {
                    return (i > start).then_some(i);
                }
            }
        }
        if depth == 0 {
            return Some(i);
        }
    }
}

/// The index just past the string starting at `at` (its opening quote).
fn string_end(b: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        match *b.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

/// The string starting at `at`, unescaped, and the index just past it.
fn string(b: &[u8], at: usize) -> Option<(String, usize)> {
    if b.get(at) != Some(&b'"') {
        return None;
    }
    let end = string_end(b, at)?;
    let raw = std::str::from_utf8(&b[at + 1..end - 1]).ok()?;
    if !raw.contains('\\') {
        return Some((raw.to_string(), end));
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            '"' => '"',
            '\\' => '\\',
            '/' => '/',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'u' => unicode_escape(&mut chars)?,
            _ => return None,
        });
    }
    Some((out, end))
}

/// The character of a `\uXXXX` escape (the `\u` already read), joining a surrogate pair.
fn unicode_escape(chars: &mut std::str::Chars<'_>) -> Option<char> {
    let hex = |chars: &mut std::str::Chars<'_>| {
        let digits: String = chars.by_ref().take(4).collect();
        (digits.len() == 4)
            .then(|| u32::from_str_radix(&digits, 16).ok())
            .flatten()
    };
    let first = hex(chars)?;
    if (0xD800..0xDC00).contains(&first) {
        if chars.next()? != '\\' || chars.next()? != 'u' {
            return None;
        }
        let low = hex(chars)?;
        let code = 0x10000 + ((first - 0xD800) << 10) + low.checked_sub(0xDC00)?;
        return char::from_u32(code);
    }
    Some(char::from_u32(first).unwrap_or(char::REPLACEMENT_CHARACTER))
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// The line and column of byte `at` of `text`.
fn position(text: &str, at: usize) -> Position {
    let before = &text.as_bytes()[..at.min(text.len())];
    let line_start = before
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    Position {
        line: before.iter().filter(|&&c| c == b'\n').count() + 1,
        column,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str, path: &str) -> Option<usize> {
        locate(text, path).map(|p| p.line)
    }

    const NESTED: &str = r#"{
  "seed": 1,
  "cluster": {
    "groups": [
      {"name": "a", "count": 2},
      {"name": "b",
       "count": 3}
    ]
  },
  "faults": {"seed": 9, "colocation": {"seed": 4}},
  "count": 7
}"#;

    #[test]
    fn a_nested_key_is_found_under_its_parents_not_at_its_first_occurrence() {
        assert_eq!(line(NESTED, "count"), Some(11));
        assert_eq!(line(NESTED, "cluster.groups[0].count"), Some(5));
        assert_eq!(line(NESTED, "cluster.groups[1].count"), Some(7));
        assert_eq!(line(NESTED, "cluster.groups[1]"), Some(6));
        assert_eq!(line(NESTED, "seed"), Some(2));
        assert_eq!(line(NESTED, "faults.colocation.seed"), Some(10));
    }

    #[test]
    fn the_column_is_that_of_the_value() {
        let p = locate(NESTED, "cluster.groups[0].count").unwrap();
        assert_eq!(p.column, 30);
        assert_eq!(locate("{\"é\": 1, \"x\": 2}", "x").unwrap().column, 15);
    }

    #[test]
    fn a_missing_value_points_at_its_deepest_ancestor() {
        assert_eq!(line(NESTED, "cluster.groups[5].count"), Some(4));
        assert_eq!(line(NESTED, "cluster.groups[1].cores"), Some(6));
        assert_eq!(line(NESTED, "nothing.here"), None);
        assert_eq!(line(NESTED, ""), Some(1));
    }

    #[test]
    fn strings_with_escapes_and_brackets_do_not_confuse_it() {
        let text =
            "{\n\"a\": \"x\\\"}],{\\\\\",\n\"b\\u0020c\": [\"[\", {\"k\": \"}\"}],\n\"d\": 1}";
        assert_eq!(line(text, "b c[1].k"), Some(3));
        assert_eq!(line(text, "d"), Some(4));
        assert_eq!(line("{\"\\ud83d\\ude00\": [1,\n2]}", "😀[1]"), Some(2));
    }

    #[test]
    fn a_dotted_key_and_a_repeated_key() {
        let text =
            "{\"scenario_params\": {\n\"faults\": 1,\n\"faults.x\": [0.1]}, \"k\": 1,\n\"k\": 2}";
        assert_eq!(line(text, "scenario_params.faults.x[0]"), Some(3));
        assert_eq!(line(text, "scenario_params.faults"), Some(2));
        assert_eq!(line(text, "k"), Some(4));
    }

    #[test]
    fn broken_or_odd_text_gives_none_or_stops_without_panicking() {
        for text in [
            "",
            "{",
            "{\"a\"",
            "{\"a\": [1, 2",
            "[}",
            "\"",
            "{\"a\":}",
            "{]",
        ] {
            let _ = locate(text, "a[1].b");
            let _ = locate(text, "[0]");
        }
        assert_eq!(line("[1, [2,\n3]]", "[1][1]"), Some(2));
        assert_eq!(line("{\"a\": 1}", "a[0]"), Some(1));
        assert_eq!(line("{\"a\": 1}", "a.[x]"), Some(1));
    }
}
