//! A kernel's configuration (`.config` text): its options, a digest of the
//! whole, the options that change what a mechanism costs, and how two
//! kernels differ in those. Also the IKCONFIG block of a kernel image and a
//! config fragment's needs (ci/vmtest.config). Pure functions of text and
//! bytes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::Digest as _;

/// The options that change what attaching or running a BPF program costs,
/// without the `CONFIG_` prefix: lock and RCU debugging, the sanitizers,
/// the preemption model, the speculation mitigations (old and 6.9+ names),
/// the tracers and the JIT. Two kernels that differ in any of them are not
/// compared like with like.
pub const COST_OPTIONS: &[&str] = &[
    "LOCKDEP",
    "PROVE_LOCKING",
    "PROVE_RCU",
    "DEBUG_LOCK_ALLOC",
    "DEBUG_SPINLOCK",
    "DEBUG_MUTEXES",
    "DEBUG_RWSEMS",
    "DEBUG_ATOMIC_SLEEP",
    "DEBUG_PREEMPT",
    "LOCK_STAT",
    "TRACE_IRQFLAGS",
    "DEBUG_OBJECTS",
    "DEBUG_VM",
    "KASAN",
    "KCSAN",
    "KMSAN",
    "UBSAN",
    "KCOV",
    "PREEMPT_NONE",
    "PREEMPT_VOLUNTARY",
    "PREEMPT",
    "PREEMPT_RT",
    "PREEMPT_DYNAMIC",
    "PREEMPT_LAZY",
    "CPU_MITIGATIONS",
    "SPECULATION_MITIGATIONS",
    "RETPOLINE",
    "MITIGATION_RETPOLINE",
    "RETHUNK",
    "MITIGATION_RETHUNK",
    "PAGE_TABLE_ISOLATION",
    "MITIGATION_PAGE_TABLE_ISOLATION",
    "CPU_IBRS_ENTRY",
    "MITIGATION_IBRS_ENTRY",
    "CPU_UNRET_ENTRY",
    "MITIGATION_UNRET_ENTRY",
    "CALL_DEPTH_TRACKING",
    "MITIGATION_CALL_DEPTH_TRACKING",
    "CPU_SRSO",
    "MITIGATION_SRSO",
    "SLS",
    "MITIGATION_SLS",
    "CFI_CLANG",
    "FTRACE",
    "FUNCTION_TRACER",
    "FUNCTION_GRAPH_TRACER",
    "DYNAMIC_FTRACE",
    "DYNAMIC_FTRACE_WITH_DIRECT_CALLS",
    "KPROBES",
    "KPROBES_ON_FTRACE",
    "FPROBE",
    "UPROBES",
    "BPF_JIT",
    "BPF_JIT_ALWAYS_ON",
];

/// A kernel configuration: each option set, without its `CONFIG_` prefix,
/// and its value as written (`y`, `m`, `"text"`, `1000`). An option
/// `# ... is not set`, or absent, is not in it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    set: BTreeMap<String, String>,
}

impl Config {
    /// Parses `.config` text; comments and other lines are ignored.
    pub fn parse(text: &str) -> Config {
        let set = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("CONFIG_")?.split_once('='))
            .filter(|(_, v)| !v.is_empty() && *v != "n")
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Config { set }
    }

    /// No option set: not a kernel configuration.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// The value of `name` (without `CONFIG_`), if set.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.set.get(name).map(String::as_str)
    }

    /// SHA-256, in hex, of every option set, one `CONFIG_NAME=value` line
    /// each in name order: the same for two builds of the same config,
    /// whatever its comments and order.
    pub fn digest(&self) -> String {
        let mut h = sha2::Sha256::new();
        for (k, v) in &self.set {
            h.update(format!("CONFIG_{k}={v}\n").as_bytes());
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The [`COST_OPTIONS`] it sets, as `CONFIG_NAME=value`, in that order.
    pub fn cost_options(&self) -> Vec<String> {
        COST_OPTIONS
            .iter()
            .filter_map(|n| Some(format!("CONFIG_{n}={}", self.value(n)?)))
            .collect()
    }

    /// What a run records of it, read from `source`.
    pub fn record(&self, source: &str) -> KernelConfig {
        KernelConfig {
            source: source.to_owned(),
            sha256: self.digest(),
            cost_options: self.cost_options(),
        }
    }
}

/// A kernel's configuration as a result records it (`kernel_config`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelConfig {
    /// Where it was read: `/proc/config.gz`, `/boot/config-<release>`, the
    /// file vmtest gave, or (vmtest) the image's embedded config.
    pub source: String,
    /// [`Config::digest`].
    pub sha256: String,
    /// [`Config::cost_options`]: the cost-changing options it sets.
    pub cost_options: Vec<String>,
}

/// Mitigations that 6.9 renamed (old name, new name): one option to
/// compare, whatever the kernel's age calls it.
const RENAMED: &[(&str, &str)] = &[
    ("SPECULATION_MITIGATIONS", "CPU_MITIGATIONS"),
    ("RETPOLINE", "MITIGATION_RETPOLINE"),
    ("RETHUNK", "MITIGATION_RETHUNK"),
    ("PAGE_TABLE_ISOLATION", "MITIGATION_PAGE_TABLE_ISOLATION"),
    ("CPU_IBRS_ENTRY", "MITIGATION_IBRS_ENTRY"),
    ("CPU_UNRET_ENTRY", "MITIGATION_UNRET_ENTRY"),
    ("CALL_DEPTH_TRACKING", "MITIGATION_CALL_DEPTH_TRACKING"),
    ("CPU_SRSO", "MITIGATION_SRSO"),
    ("SLS", "MITIGATION_SLS"),
];

/// The cost-changing options `a` and `b` set differently, each as
/// `NAME (A's value vs B's)`, `not set` for one unset: empty when alike.
/// A mitigation is compared under its 6.9+ name ([`RENAMED`]).
pub fn cost_differences(a: &KernelConfig, b: &KernelConfig) -> Vec<String> {
    let values = |c: &KernelConfig| -> BTreeMap<String, String> {
        let mut set = Config::parse(&c.cost_options.join("\n")).set;
        for (old, new) in RENAMED {
            if let Some(v) = set.remove(*old) {
                set.entry((*new).to_owned()).or_insert(v);
            }
        }
        set
    };
    let (va, vb) = (values(a), values(b));
    COST_OPTIONS
        .iter()
        .filter(|n| !RENAMED.iter().any(|(old, _)| old == *n))
        .filter_map(|n| {
            let (x, y) = (va.get(*n), vb.get(*n));
            let shown = |v: Option<&String>| v.map_or("not set".to_owned(), |v| v.clone());
            (x != y).then(|| format!("{n} ({} vs {})", shown(x), shown(y)))
        })
        .collect()
}

/// The one line that says two kernels differ in cost-changing options
/// (`None` when they do not).
pub fn differences_line(a: &KernelConfig, b: &KernelConfig) -> Option<String> {
    let d = cost_differences(a, b);
    (!d.is_empty()).then(|| {
        format!(
            "kernels differ in cost-changing options (A vs B): {}",
            d.join(", ")
        )
    })
}

/// The gzip-compressed config that CONFIG_IKCONFIG embeds in a kernel,
/// between the `IKCFG_ST` and `IKCFG_ED` markers, found as
/// scripts/extract-ikconfig finds it: the start marker followed by the gzip
/// magic.
pub fn ikconfig_gz(image: &[u8]) -> Option<&[u8]> {
    const START: &[u8] = b"IKCFG_ST\x1f\x8b\x08";
    const END: &[u8] = b"IKCFG_ED";
    let at = find(image, START)? + 8;
    let len = find(&image[at..], END)?;
    Some(&image[at..at + len])
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// One option a config fragment asks for (ci/vmtest.config).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Want {
    /// Without `CONFIG_`.
    pub name: String,
    pub value: String,
    /// Needed (a kernel without it is refused), else recommended.
    pub needed: bool,
}

/// A fragment's options. The comment just above an option says why it is
/// there; one that starts `# recommended` marks it recommended, any other
/// needed.
pub fn fragment(text: &str) -> Vec<Want> {
    let mut wants = Vec::new();
    let mut comment = "";
    for l in text.lines().map(str::trim) {
        if l.starts_with('#') {
            comment = l;
        } else if let Some((k, v)) = l.strip_prefix("CONFIG_").and_then(|l| l.split_once('=')) {
            wants.push(Want {
                name: k.to_owned(),
                value: v.to_owned(),
                needed: !comment.starts_with("# recommended"),
            });
        }
    }
    wants
}

/// What `config` lacks of `wants`: the needed options, then the
/// recommended ones, each `NAME` (or `NAME=value`). An option asked `=y`
/// may be `=m` when `modules` (the runner loads its modules).
pub fn missing(config: &Config, wants: &[Want], modules: bool) -> (Vec<String>, Vec<String>) {
    let (mut needed, mut recommended) = (Vec::new(), Vec::new());
    for w in wants {
        let ok = match config.value(&w.name) {
            Some(v) => v == w.value || (modules && w.value == "y" && v == "m"),
            None => false,
        };
        if !ok {
            let shown = match w.value.as_str() {
                "y" => w.name.clone(),
                v => format!("{}={v}", w.name),
            };
            match w.needed {
                true => needed.push(shown),
                false => recommended.push(shown),
            }
        }
    }
    (needed, recommended)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEBUG: &str = "#\n# Linux/x86 6.1.192 Kernel Configuration\n#\n\
        CONFIG_CC_VERSION_TEXT=\"gcc (Debian 12.2.0-14) 12.2.0\"\n\
        CONFIG_PREEMPT_VOLUNTARY=y\n# CONFIG_PREEMPT is not set\n\
        CONFIG_LOCKDEP=y\nCONFIG_PROVE_LOCKING=y\nCONFIG_HZ=250\n\
        CONFIG_9P_FS=m\nCONFIG_KPROBES=y\nCONFIG_BPF_JIT=y\n";
    const RELEASE: &str = "CONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_KPROBES=y\nCONFIG_BPF_JIT=y\n\
        # CONFIG_LOCKDEP is not set\nCONFIG_HZ=250\nCONFIG_FPROBE=y\n";

    #[test]
    fn options_values_and_digest() {
        let c = Config::parse(DEBUG);
        assert_eq!(c.value("LOCKDEP"), Some("y"));
        assert_eq!(c.value("HZ"), Some("250"));
        assert_eq!(c.value("PREEMPT"), None, "not set");
        assert_eq!(c.value("9P_FS"), Some("m"));
        assert_eq!(
            c.cost_options(),
            [
                "CONFIG_LOCKDEP=y",
                "CONFIG_PROVE_LOCKING=y",
                "CONFIG_PREEMPT_VOLUNTARY=y",
                "CONFIG_KPROBES=y",
                "CONFIG_BPF_JIT=y"
            ]
        );
        // Comments and order do not change the digest; a value does.
        let mut lines: Vec<&str> = DEBUG.lines().filter(|l| !l.starts_with('#')).collect();
        lines.reverse();
        assert_eq!(Config::parse(&lines.join("\n")).digest(), c.digest());
        assert_ne!(Config::parse(RELEASE).digest(), c.digest());
        assert_eq!(c.digest().len(), 64);
        assert!(Config::parse("hello\n").is_empty());
    }

    #[test]
    fn differences_are_named_a_vs_b() {
        let (a, b) = (
            Config::parse(DEBUG).record("a"),
            Config::parse(RELEASE).record("b"),
        );
        assert_eq!(
            cost_differences(&a, &b),
            [
                "LOCKDEP (y vs not set)",
                "PROVE_LOCKING (y vs not set)",
                "FPROBE (not set vs y)"
            ]
        );
        assert_eq!(
            differences_line(&a, &b).unwrap(),
            "kernels differ in cost-changing options (A vs B): LOCKDEP (y vs not set), \
             PROVE_LOCKING (y vs not set), FPROBE (not set vs y)"
        );
        // Two builds of one config, whatever else differs: nothing to say.
        let other = Config::parse(&DEBUG.replace("HZ=250", "HZ=1000")).record("c");
        assert_eq!(differences_line(&a, &other), None);
    }

    #[test]
    fn the_embedded_config_is_found_by_its_markers() {
        let mut image = b"\x7fELF junk IKCFG_ST not gzip ".to_vec();
        image.extend_from_slice(b"IKCFG_ST\x1f\x8b\x08\x00abc");
        image.extend_from_slice(b"IKCFG_ED more");
        assert_eq!(ikconfig_gz(&image), Some(&b"\x1f\x8b\x08\x00abc"[..]));
        assert_eq!(ikconfig_gz(b"no config here"), None);
        assert_eq!(ikconfig_gz(b"IKCFG_ST\x1f\x8b\x08 but no end"), None);
    }

    #[test]
    fn a_fragment_says_what_is_needed() {
        let wants = fragment(
            "# needed: the root over 9p\nCONFIG_9P_FS=y\n\
             # recommended: else a read-only root\nCONFIG_OVERLAY_FS=y\n\
             # needed: a number\nCONFIG_HZ=1000\n",
        );
        assert_eq!(wants.len(), 3);
        assert!(wants[0].needed && !wants[1].needed && wants[2].needed);
        let c = Config::parse(DEBUG);
        assert_eq!(
            missing(&c, &wants, false),
            (
                vec!["9P_FS".to_owned(), "HZ=1000".to_owned()],
                vec!["OVERLAY_FS".to_owned()]
            )
        );
        // A module is as good when the runner loads the kernel's modules.
        assert_eq!(missing(&c, &wants, true).0, ["HZ=1000"]);
    }

    /// 6.1's RETPOLINE is 6.12's MITIGATION_RETPOLINE: alike, not two
    /// differences; a mitigation one kernel lacks is still named once.
    #[test]
    fn renamed_mitigations_compare_as_one() {
        let old = Config::parse("CONFIG_RETPOLINE=y\nCONFIG_SLS=y\n").record("a");
        let new = Config::parse(
            "CONFIG_MITIGATION_RETPOLINE=y\nCONFIG_MITIGATION_CALL_DEPTH_TRACKING=y\n",
        )
        .record("b");
        assert_eq!(
            cost_differences(&old, &new),
            [
                "MITIGATION_CALL_DEPTH_TRACKING (not set vs y)",
                "MITIGATION_SLS (y vs not set)"
            ]
        );
    }
}
