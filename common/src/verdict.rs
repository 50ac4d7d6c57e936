//! What a comparison found for one mechanism: the one list of verdicts,
//! of the command's gate (a run against a baseline, B against A in one
//! run, two kernels at once) and of xtask's exact comparisons (B's counts
//! against A's, `cargo xtask vmtest --exact --against` and `history`).

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Costs more than before (or B more than A) beyond the threshold.
    #[serde(rename = "REGRESSED")]
    Regressed,
    /// Measured in the baseline, skipped or failed now. A regression.
    #[serde(rename = "MISSING")]
    Missing,
    /// Costs less beyond the threshold.
    Improved,
    /// Within the threshold, and the runs were precise enough to say so
    /// (for the statistical gate: the 90% confidence interval of the change
    /// lies within ± the threshold).
    Unchanged,
    /// The runs were too noisy to tell: neither a change beyond the
    /// threshold beyond the noise, nor an interval within it.
    #[serde(rename = "UNSURE")]
    Inconclusive,
    /// Measured now (or by B), not in the baseline (or by A).
    New,
    /// In the baseline, not selected in this run.
    #[serde(rename = "not run")]
    NotRun,
    /// Exact: A counted it, B's kernel lacks it (skipped): not compared.
    Absent,
    /// Exact: A counted it and B failed to: fails the run.
    #[serde(rename = "LOST")]
    Lost,
    /// Exact, not judged: a link on every function catches the kernel's
    /// other work, and its rounds spread beyond the threshold.
    Spread,
    /// Exact, not judged: its kinds of events changed (a trap or a system
    /// call more or fewer), and no host's prices were given to weigh them.
    #[serde(rename = "path changed")]
    PathChanged,
}

impl Verdict {
    /// Whether it fails a gate.
    pub fn is_regression(self) -> bool {
        matches!(self, Verdict::Regressed | Verdict::Missing | Verdict::Lost)
    }

    /// The gate's word: capitals for what needs a look.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Regressed => "REGRESSED",
            Verdict::Missing => "MISSING",
            Verdict::Improved => "improved",
            Verdict::Unchanged => "ok",
            Verdict::Inconclusive => "UNSURE",
            Verdict::New => "new",
            Verdict::NotRun => "not run",
            Verdict::Absent => "absent in B",
            Verdict::Lost => "LOST",
            Verdict::Spread => "spread: not judged",
            Verdict::PathChanged => "path changed: not judged",
        }
    }

    /// The word of an exact comparison's table (docs/exact.md): a count is
    /// `unchanged`, where the gate's runs are `ok`.
    pub fn exact_word(self) -> &'static str {
        match self {
            Verdict::Unchanged => "unchanged",
            other => other.label(),
        }
    }
}
