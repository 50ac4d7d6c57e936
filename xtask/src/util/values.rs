//! The value parsers of xtask's options.

// Value parsers: their message follows the option's name and precedes the
// value (`--timeout wants a positive number of seconds, not '0'`).

pub fn secs(v: &str) -> Result<u64, String> {
    match v.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("wants a positive number of seconds".into()),
    }
}

pub fn positive(v: &str) -> Result<u32, String> {
    match v.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("wants a positive number".into()),
    }
}

pub fn percent(v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(p) if p > 0.0 && p < 100.0 => Ok(p),
        _ => Err("wants a percentage between 0 and 100".into()),
    }
}

pub fn positive_usize(v: &str) -> Result<usize, String> {
    positive(v).map(|n| n as usize)
}

pub fn env_pair(v: &str) -> Result<(String, String), String> {
    match v.split_once('=') {
        Some((k, val))
            if !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
        {
            Ok((k.to_owned(), val.to_owned()))
        }
        _ => Err("wants NAME=VALUE".into()),
    }
}

pub fn directory(v: &str) -> Result<String, String> {
    if v.is_empty() {
        Err("wants a directory".into())
    } else {
        Ok(v.to_owned())
    }
}
