//! Loading of the relay daemon's configuration file.
//!
//! The file is a list of `key = value` lines grouped under `[section]`
//! headers; keys are addressed as `section.key` once parsed.

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

#[derive(Debug)]
pub enum ConfigError {
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    Syntax {
        line: usize,
        message: String,
    },
    Missing(&'static str),
    Invalid {
        key: String,
        value: String,
        reason: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Io { path, source } => {
                write!(f, "cannot read {}: {}", path.display(), source)
            }
            ConfigError::Syntax { line, message } => write!(f, "line {line}: {message}"),
            ConfigError::Missing(key) => write!(f, "missing required key `{key}`"),
            ConfigError::Invalid { key, value, reason } => {
                write!(f, "invalid value {value:?} for `{key}`: {reason}")
            }
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl FromStr for LogLevel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "error" => Ok(LogLevel::Error),
            "warn" | "warning" => Ok(LogLevel::Warn),
            "info" => Ok(LogLevel::Info),
            "debug" => Ok(LogLevel::Debug),
            "trace" => Ok(LogLevel::Trace),
            other => Err(format!("unknown log level `{other}`")),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    pub name: String,
    pub addr: SocketAddr,
    pub weight: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub listen: SocketAddr,
    pub workers: usize,
    pub idle_timeout: Duration,
    pub log_level: LogLevel,
    pub upstreams: Vec<Upstream>,
    pub tls_cert: Option<PathBuf>,
}

/// Parses durations such as `250ms`, `30s`, `5m` or `1h`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("missing unit in `{s}`"))?;
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits.parse().map_err(|_| format!("bad number in `{s}`"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        "h" => Ok(Duration::from_secs(n * 3600)),
        _ => Err(format!("unknown unit `{unit}`")),
    }
}

/// Splits the file into `section.key -> value` pairs.
pub fn parse_pairs(text: &str) -> Result<HashMap<String, String>, ConfigError> {
    let mut pairs = HashMap::new();
    let mut section = String::new();
    for (idx, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_string();
            continue;
        }
        let (key, value) = line.split_once('=').ok_or_else(|| ConfigError::Syntax {
            line: idx + 1,
            message: "expected `key = value`".to_string(),
        })?;
        let key = if section.is_empty() {
            key.trim().to_string()
        } else {
            format!("{}.{}", section, key.trim())
        };
        let value = value.trim().trim_matches('"').to_string();
        if pairs.insert(key.clone(), value).is_some() {
            return Err(ConfigError::Syntax {
                line: idx + 1,
                message: format!("duplicate key `{key}`"),
            });
        }
    }
    Ok(pairs)
}

/// Builds a [`Config`] from parsed pairs, applying defaults.
pub fn from_pairs(pairs: &HashMap<String, String>) -> Config {
    let listen = pairs
        .get("server.listen")
        .expect("server.listen is required")
        .parse()
        .unwrap();
    let workers = pairs
        .get("server.workers")
        .map(|v| v.parse().unwrap())
        .unwrap_or(4);
    let idle_timeout = parse_duration(
        pairs
            .get("server.idle_timeout")
            .map(String::as_str)
            .unwrap_or("60s"),
    )
    .unwrap();
    let log_level = pairs
        .get("log.level")
        .map(|v| v.parse().unwrap())
        .unwrap_or(LogLevel::Info);
    let mut addr_keys: Vec<&String> = pairs
        .keys()
        .filter(|k| k.starts_with("upstream.") && k.ends_with(".addr"))
        .collect();
    addr_keys.sort();
    let mut upstreams = Vec::new();
    for key in addr_keys {
        let name = &key["upstream.".len()..key.len() - ".addr".len()];
        let addr = pairs[key].parse().unwrap();
        let weight = pairs
            .get(&format!("upstream.{name}.weight"))
            .map(|v| v.parse().unwrap())
            .unwrap_or(1);
        upstreams.push(Upstream {
            name: name.to_string(),
            addr,
            weight,
        });
    }
    if upstreams.is_empty() {
        panic!("at least one upstream is required");
    }
    Config {
        listen,
        workers,
        idle_timeout,
        log_level,
        upstreams,
        tls_cert: pairs.get("server.tls_cert").map(PathBuf::from),
    }
}

/// Reads and parses the configuration file at `path`.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = fs::read_to_string(path).map_err(|source| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let pairs = parse_pairs(&text)?;
    Ok(from_pairs(&pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5y").is_err());
    }

    #[test]
    fn sections_prefix_keys() {
        let pairs = parse_pairs("[server]\nlisten = \"0.0.0.0:8080\" # public\n").unwrap();
        assert_eq!(pairs["server.listen"], "0.0.0.0:8080");
    }

    #[test]
    fn duplicate_keys_are_rejected() {
        let err = parse_pairs("a = 1\na = 2\n").unwrap_err();
        assert_eq!(err.to_string(), "line 2: duplicate key `a`");
    }
}
