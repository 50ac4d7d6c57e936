//! A host's calibration (`bpf-overhead calibrate --save`): its prices for
//! the counts of exact mode, fitted from its own timed run, and the host
//! they belong to. The command writes it and prices with it; xtask's
//! `--calibration` reads it to judge a changed path.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The `schema` a calibration carries.
pub const SCHEMA: &str = "bpf-overhead-calibration";

/// What makes a host's prices its own: its CPU, its kernel and how that
/// kernel mitigates the CPU's flaws (the return thunks and barriers that
/// make a trap or a return dear).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    pub cpu_model: String,
    pub kernel_release: String,
    /// /sys/devices/system/cpu/vulnerabilities: each file's line.
    pub mitigations: BTreeMap<String, String>,
}

/// One mechanism priced by a fit made without it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeftOut {
    pub mechanism: String,
    pub ns: f64,
    pub priced_ns: f64,
    /// (priced − ns) / ns.
    pub error: f64,
}

/// A saved calibration.
#[derive(Debug, Serialize, Deserialize)]
pub struct Calibration {
    pub schema: String,
    pub host: Identity,
    /// The guest whose counts the fit used: its kernel, QEMU's version.
    pub guest_kernel: String,
    pub emulator: String,
    /// ns per instruction and per event of each kind (`price::FEATURES`),
    /// fitted over every mechanism.
    pub weights: BTreeMap<String, f64>,
    /// Each mechanism priced by a fit without it.
    pub left_out: Vec<LeftOut>,
    /// The median of the left-out errors' sizes.
    pub fit_error: f64,
    /// Kinds timed alone here, ns per round trip (`syscall`: getppid's
    /// entry and return), beside the fit's prices. Absent from older files.
    #[serde(default)]
    pub round_trips: BTreeMap<String, f64>,
}

impl Calibration {
    /// The calibration in `path`, whose prices are each a finite ns at
    /// least 0, one of them per instruction. The error says why not, in
    /// words that name no file.
    pub fn read(path: &Path) -> Result<Calibration, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
        let cal: Calibration = serde_json::from_str(&text).map_err(|e| {
            format!("not a calibration (bpf-overhead calibrate --save writes one): {e}")
        })?;
        if cal.schema != SCHEMA {
            return Err(format!("schema {:?}, not {SCHEMA:?}", cal.schema));
        }
        if let Some((k, w)) = cal
            .weights
            .iter()
            .find(|(_, w)| !(w.is_finite() && **w >= 0.0))
        {
            return Err(format!("its price of {k}, {w}, is no price"));
        }
        if !cal.weights.contains_key("instructions") {
            return Err("no price of an instruction in it".into());
        }
        Ok(cal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    fn calibration(weights: &str) -> String {
        format!(
            r#"{{"schema":"{SCHEMA}","host":{{"cpu_model":"AMD EPYC","kernel_release":"6.18",
            "mitigations":{{}}}},"guest_kernel":"6.18.15","emulator":"qemu 7.2",
            "weights":{weights},"left_out":[],"fit_error":0.05}}"#
        )
    }

    #[test]
    fn a_calibration_reads_without_the_round_trips_of_later_files() {
        let f = write(&calibration(r#"{"instructions":0.2,"int3":300}"#));
        let cal = Calibration::read(f.path()).unwrap();
        assert_eq!(cal.weights["int3"], 300.0);
        assert!(cal.round_trips.is_empty());
    }

    #[test]
    fn a_calibration_without_sound_prices_is_refused() {
        for (weights, why) in [
            (r#"{"int3":300}"#, "no price of an instruction"),
            (r#"{"instructions":-1}"#, "is no price"),
        ] {
            let f = write(&calibration(weights));
            let e = Calibration::read(f.path()).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        let f = write(&calibration("{}").replace(SCHEMA, "other"));
        assert!(Calibration::read(f.path()).unwrap_err().contains("schema"));
        let f = write("{}");
        assert!(Calibration::read(f.path())
            .unwrap_err()
            .contains("not a calibration"));
    }
}
