//! The value parsers of xtask's options.

use super::CI_STEPS;
use crate::arch::Arch;

// Value parsers: their message follows the option's name and precedes the
// value (`--timeout wants a positive number of seconds, not '0'`).

pub(super) fn secs(v: &str) -> Result<u64, String> {
    match v.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("wants a positive number of seconds".into()),
    }
}

pub(super) fn positive(v: &str) -> Result<u32, String> {
    match v.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("wants a positive number".into()),
    }
}

pub(super) fn percent(v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(p) if p > 0.0 && p < 100.0 => Ok(p),
        _ => Err("wants a percentage between 0 and 100".into()),
    }
}

pub(super) fn positive_usize(v: &str) -> Result<usize, String> {
    positive(v).map(|n| n as usize)
}

pub(super) fn env_pair(v: &str) -> Result<(String, String), String> {
    match v.split_once('=') {
        Some((k, val))
            if !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
        {
            Ok((k.to_owned(), val.to_owned()))
        }
        _ => Err("wants NAME=VALUE".into()),
    }
}

pub(super) fn arch(v: &str) -> Result<Arch, String> {
    Arch::parse(v).map_err(|e| e.to_string())
}

pub(super) fn directory(v: &str) -> Result<String, String> {
    if v.is_empty() {
        Err("wants a directory".into())
    } else {
        Ok(v.to_owned())
    }
}

pub(super) fn step_name(v: &str) -> Result<String, String> {
    if CI_STEPS.contains(&v) {
        Ok(v.to_owned())
    } else {
        Err(format!("wants one of {}", CI_STEPS.join(", ")))
    }
}
