//! Summaries of HTTP access logs written by the edge proxy.
//!
//! Each line has the form `<client-ip> <method> <path> <status> <bytes> <duration-ms>`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub client: IpAddr,
    pub method: String,
    pub path: String,
    pub status: u16,
    pub bytes: u64,
    pub duration_ms: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub reason: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for ParseError {}

impl FromStr for Entry {
    type Err = &'static str;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.split_whitespace();
        let client = parts
            .next()
            .ok_or("missing client")?
            .parse()
            .map_err(|_| "bad client address")?;
        let method = parts.next().ok_or("missing method")?.to_string();
        let path = parts.next().ok_or("missing path")?.to_string();
        let status = parts
            .next()
            .ok_or("missing status")?
            .parse()
            .map_err(|_| "bad status")?;
        let bytes = parts
            .next()
            .ok_or("missing byte count")?
            .parse()
            .map_err(|_| "bad byte count")?;
        let duration_ms = parts
            .next()
            .ok_or("missing duration")?
            .parse()
            .map_err(|_| "bad duration")?;
        if parts.next().is_some() {
            return Err("trailing fields");
        }
        Ok(Entry {
            client,
            method,
            path,
            status,
            bytes,
            duration_ms,
        })
    }
}

/// Parses every non-empty line, collecting the lines that fail separately.
pub fn parse_log(text: &str) -> (Vec<Entry>, Vec<ParseError>) {
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    for (idx, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.parse::<Entry>() {
            Ok(entry) => entries.push(entry),
            Err(reason) => errors.push(ParseError {
                line: idx + 1,
                reason,
            }),
        }
    }
    (entries, errors)
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Summary {
    pub requests: usize,
    pub unique_clients: usize,
    pub total_bytes: u64,
    pub error_rate: f64,
    pub status_counts: BTreeMap<u16, usize>,
    pub top_paths: Vec<(String, usize)>,
    pub slowest: Vec<(String, u32)>,
}

/// Aggregates the entries; `top_n` bounds the `top_paths` and `slowest` lists.
pub fn summarize(entries: &[Entry], top_n: usize) -> Summary {
    let mut clients = HashSet::new();
    for e in entries {
        clients.insert(e.client);
    }
    let mut total_bytes = 0;
    for e in entries {
        total_bytes += e.bytes;
    }
    let mut errors = 0;
    for e in entries {
        if e.status >= 500 {
            errors += 1;
        }
    }
    let mut status_counts = BTreeMap::new();
    for e in entries {
        *status_counts.entry(e.status).or_insert(0) += 1;
    }
    let mut path_counts: HashMap<&str, usize> = HashMap::new();
    for e in entries {
        *path_counts.entry(e.path.as_str()).or_insert(0) += 1;
    }
    let mut top_paths = Vec::new();
    for (path, count) in path_counts {
        top_paths.push((path.to_string(), count));
    }
    top_paths.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top_paths.truncate(top_n);
    let mut slowest = Vec::new();
    for e in entries {
        slowest.push((e.path.clone(), e.duration_ms));
    }
    slowest.sort_by(|a, b| b.1.cmp(&a.1));
    slowest.truncate(top_n);
    Summary {
        requests: entries.len(),
        unique_clients: clients.len(),
        total_bytes,
        error_rate: if entries.is_empty() {
            0.0
        } else {
            errors as f64 / entries.len() as f64
        },
        status_counts,
        top_paths,
        slowest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
10.0.0.1 GET /health 200 12 1
10.0.0.2 GET /api/orders 200 5120 87
10.0.0.1 POST /api/orders 503 64 1200
# rotated
10.0.0.3 GET /api/orders 200 4096 45
not a valid line
";

    #[test]
    fn parses_and_reports_bad_lines() {
        let (entries, errors) = parse_log(SAMPLE);
        assert_eq!(entries.len(), 4);
        assert_eq!(
            errors,
            vec![ParseError {
                line: 6,
                reason: "bad client address"
            }]
        );
    }

    #[test]
    fn summarizes() {
        let (entries, _) = parse_log(SAMPLE);
        let summary = summarize(&entries, 2);
        assert_eq!(summary.requests, 4);
        assert_eq!(summary.unique_clients, 3);
        assert_eq!(summary.total_bytes, 12 + 5120 + 64 + 4096);
        assert!((summary.error_rate - 0.25).abs() < f64::EPSILON);
        assert_eq!(summary.status_counts.get(&200), Some(&3));
        assert_eq!(summary.top_paths[0], ("/api/orders".to_string(), 3));
        assert_eq!(summary.slowest[0], ("/api/orders".to_string(), 1200));
        assert_eq!(summary.slowest.len(), 2);
    }
}
