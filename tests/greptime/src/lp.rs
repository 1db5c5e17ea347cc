// SPDX-License-Identifier: GPL-2.0
//! InfluxDB line protocol as GreptimeDB reads it: influxdb_iox's
//! influxdb_line_protocol (the evenyag fork GreptimeDB's Cargo.lock pins),
//! `parse_lines`: the Go scanLine split (a newline inside a quoted string
//! field or after a backslash does not end a line), leading ' ', '\t', '\n'
//! and `#` comment lines trimmed, and every remaining line parsed whole.
//! One row per parsed line; one line that does not parse fails the request.
//! Written from the grammar, not ported: exact for lines that parse, and
//! for the malformations the suite sends (no field set, trailing bytes such
//! as a CR, bad values); rarer nom backtracking corners are not claimed.

use std::collections::BTreeMap;

fn is_boundary(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\n'
}

/// Go's scanLine: the byte ranges of the lines of `input`.
fn split_lines(input: &str) -> Vec<&str> {
    let (mut quoted, mut fields, mut in_escape) = (false, false, false);
    let (mut equals, mut commas) = (0u32, 0u32);
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in input.char_indices() {
        if in_escape {
            in_escape = false;
            continue;
        }
        match c {
            '\\' => in_escape = true,
            ' ' => fields = true,
            '=' if fields && !quoted => equals += 1,
            ',' if fields && !quoted => commas += 1,
            '"' if fields && equals > commas => quoted = !quoted,
            '\n' if !quoted => {
                out.push(&input[start..i]);
                start = i + 1;
                fields = false;
                equals = 0;
                commas = 0;
            }
            _ => {}
        }
    }
    out.push(&input[start..]);
    out
}

/// Leading blanks and whole comment lines (to the next '\n').
fn trim_leading(mut s: &str) -> &str {
    loop {
        s = s.trim_start_matches(is_boundary);
        if s.starts_with('#') {
            s = &s[s.find('\n').unwrap_or(s.len())..];
        } else {
            return s;
        }
    }
}

/// A parse that failed: `Soft` lets an alternative or an optional part be
/// tried (nom's Error), `Hard` fails the line (nom's Failure).
enum Fail {
    Soft,
    Hard(&'static str),
}

type Res<'a, T> = Result<(&'a str, T), Fail>;

/// Escaped text: runs of characters that are not blanks, not a stop
/// character and not '\\', and '\\' followed by any character (an unknown
/// escape keeps both).  Empty text is a soft failure; unescaped text ending
/// in '\\' is a hard one.
fn escaped<'a>(s: &'a str, stop: &[char], escapes: &[char]) -> Res<'a, String> {
    let mut out = String::new();
    let mut rest = s;
    loop {
        let n = rest
            .find(|c: char| is_boundary(c) || c == '\\' || stop.contains(&c))
            .unwrap_or(rest.len());
        if n > 0 {
            out.push_str(&rest[..n]);
            rest = &rest[n..];
            continue;
        }
        if let Some(after) = rest.strip_prefix('\\') {
            match after.chars().next() {
                Some(c) if escapes.contains(&c) => out.push(c),
                Some(c) => {
                    out.push('\\');
                    out.push(c);
                }
                None => out.push('\\'),
            }
            rest = &after[after.chars().next().map_or(0, char::len_utf8)..];
            continue;
        }
        break;
    }
    if rest.len() == s.len() {
        return Err(Fail::Soft);
    }
    if out.ends_with('\\') {
        return Err(Fail::Hard("ends with a backslash"));
    }
    Ok((rest, out))
}

fn measurement(s: &str) -> Res<'_, String> {
    escaped(s, &[','], &[' ', ',', '\\'])
}

const VALUE_ESCAPES: &[char] = &['\\', ',', '=', ' '];

fn digits(s: &str) -> Option<(&str, &str)> {
    let n = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if n == 0 {
        None
    } else {
        Some((&s[n..], &s[..n]))
    }
}

/// -?[0-9]+, returning the rest and the text.
fn signed(s: &str) -> Option<(&str, &str)> {
    let body = s.strip_prefix('-').unwrap_or(s);
    let (rest, _) = digits(body)?;
    Some((rest, &s[..s.len() - rest.len()]))
}

/// [0-9]+[eE][-+]?[0-9]+
fn exponent(s: &str) -> Option<&str> {
    let (rest, _) = digits(s)?;
    let rest = rest.strip_prefix(|c| c == 'e' || c == 'E')?;
    let rest = rest.strip_prefix(|c| c == '-' || c == '+').unwrap_or(rest);
    Some(digits(rest)?.0)
}

fn field_value(s: &str) -> Res<'_, ()> {
    // integer: -?[0-9]+i, checked as i64
    if let Some((rest, text)) = signed(s) {
        if let Some(rest) = rest.strip_prefix('i') {
            return match text.parse::<i64>() {
                Ok(_) => Ok((rest, ())),
                Err(_) => Err(Fail::Hard("integer out of range")),
            };
        }
    }
    // unsigned: [0-9]+u, checked as u64
    if let Some((rest, text)) = digits(s) {
        if let Some(rest) = rest.strip_prefix('u') {
            return match text.parse::<u64>() {
                Ok(_) => Ok((rest, ())),
                Err(_) => Err(Fail::Hard("unsigned out of range")),
            };
        }
    }
    // float, in the parser's order of alternatives
    if let Some((rest, _)) = signed(s) {
        if let Some(frac) = rest.strip_prefix('.') {
            if let Some(r) = exponent(frac) {
                return Ok((r, ()));
            }
        }
        let unsigned = s.strip_prefix('-').unwrap_or(s);
        if let Some(r) = exponent(unsigned) {
            return Ok((r, ()));
        }
        if let Some(frac) = rest.strip_prefix('.') {
            if let Some((r, _)) = digits(frac) {
                return Ok((r, ()));
            }
        }
        return Ok((rest, ()));
    }
    // string: "..." where \" and \\ are escapes and a lone \ is literal
    if let Some(mut rest) = s.strip_prefix('"') {
        loop {
            if let Some(r) = rest.strip_prefix("\\\"").or_else(|| rest.strip_prefix("\\\\")) {
                rest = r;
            } else if let Some(r) = rest.strip_prefix('"') {
                return Ok((r, ()));
            } else if let Some(c) = rest.chars().next() {
                rest = &rest[c.len_utf8()..];
            } else {
                break;
            }
        }
    }
    for b in ["true", "True", "TRUE", "t", "T", "false", "False", "FALSE", "f", "F"] {
        if let Some(r) = s.strip_prefix(b) {
            return Ok((r, ()));
        }
    }
    Err(Fail::Soft)
}

/// key=value; a key with no '=' or a missing value is a soft failure.
fn pair<'a>(
    s: &'a str,
    key_stop: &[char],
    value: impl Fn(&'a str) -> Res<'a, ()>,
) -> Res<'a, ()> {
    let (rest, _) = escaped(s, key_stop, VALUE_ESCAPES)?;
    let rest = rest.strip_prefix('=').ok_or(Fail::Soft)?;
    value(rest)
}

/// sep-separated items; after a separator an item that fails softly ends
/// the list before the separator (nom's separated_list).
fn list<'a>(s: &'a str, item: impl Fn(&'a str) -> Res<'a, ()>) -> Res<'a, usize> {
    let mut s = match item(s) {
        Ok((rest, ())) => rest,
        Err(Fail::Soft) => return Ok((s, 0)),
        Err(hard) => return Err(hard),
    };
    let mut n = 1;
    while let Some(after) = s.strip_prefix(',') {
        match item(after) {
            Ok((rest, ())) => {
                n += 1;
                s = rest;
            }
            Err(Fail::Soft) => break,
            Err(hard) => return Err(hard),
        }
    }
    Ok((s, n))
}

fn tag_value(s: &str) -> Res<'_, ()> {
    escaped(s, &[','], VALUE_ESCAPES).map(|(r, _)| (r, ()))
}

fn spaces(s: &str) -> Option<&str> {
    let r = s.trim_start_matches(' ');
    if r.len() == s.len() {
        None
    } else {
        Some(r)
    }
}

/// One trimmed, non-empty line: its measurement, or why it fails.
fn parse_line(line: &str) -> Result<String, &'static str> {
    let hard = |f: Fail, soft: &'static str| match f {
        Fail::Soft => soft,
        Fail::Hard(m) => m,
    };
    let (mut rest, name) = measurement(line).map_err(|f| hard(f, "no measurement"))?;
    if let Some(after) = rest.strip_prefix(',') {
        rest = list(after, |s| pair(s, &['='], tag_value))
            .map_err(|f| hard(f, "bad tag set"))?
            .0;
    }
    rest = spaces(rest).ok_or("no field set")?;
    let (r, n) = list(rest, |s| pair(s, &['='], field_value)).map_err(|f| hard(f, "bad field"))?;
    if n == 0 {
        return Err("no field set");
    }
    rest = r;
    if let Some((r, text)) = spaces(rest).and_then(signed) {
        if text.parse::<i64>().is_err() {
            return Err("timestamp out of range");
        }
        rest = r.trim_start_matches(' ');
    }
    if !rest.is_empty() {
        return Err("cannot parse the entire line");
    }
    Ok(name)
}

/// Rows per measurement of a request body, or why GreptimeDB refuses it.
pub fn rows_by_measurement(body: &str) -> Result<BTreeMap<String, u64>, String> {
    let mut out = BTreeMap::new();
    for line in split_lines(body) {
        let line = trim_leading(line);
        if line.is_empty() {
            continue;
        }
        let name = parse_line(line).map_err(|e| format!("{}: {:?}", e, line))?;
        *out.entry(name).or_insert(0) += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::rows_by_measurement as rows;

    fn count(s: &str) -> Option<u64> {
        rows(s).ok().map(|m| m.values().sum())
    }

    #[test]
    fn lines() {
        assert_eq!(count("m,k=1 v=1\nm v=2i 123\n"), Some(2));
        assert_eq!(count("\n  # c\n\t\nm v=1"), Some(1));
        assert_eq!(count("m v=\"a\nb\"\nm v=1\n"), Some(2));
        assert_eq!(count("m, v=1\n"), Some(1));
        assert_eq!(count("m v=1,w=t,x=1.5e3,y=\"\",z=3u\n"), Some(1));
        assert_eq!(count(""), Some(0));
    }

    #[test]
    fn refused() {
        assert_eq!(count("m v=1\r\n"), None);
        assert_eq!(count("m\n"), None);
        assert_eq!(count("m v=1 \n"), None);
        assert_eq!(count("m v=1 x\n"), None);
        assert_eq!(count("m v=99999999999999999999i\n"), None);
        assert_eq!(count("m\\ v=1\n"), None);
        assert_eq!(count("m v=1,\n"), None);
    }
}
