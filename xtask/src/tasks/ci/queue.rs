//! The order CI's VMs run in, `--jobs` at a time: longest first, by the
//! walls the last run on this machine took (kept in the cache), else by
//! those of [`WALLS_HINT`], so that the longest does not start last and
//! run alone. A job neither has seen goes first: it may be the longest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::tasks::ci::kernels::CiKernel;

/// What a VM lane runs: a kernel of ci/kernels, or the exact comparison
/// of two kernels (two VMs, one after the other).
#[derive(Debug, Clone, PartialEq)]
pub enum Job {
    Kernel(CiKernel),
    Against,
}

impl Job {
    pub fn name(&self) -> String {
        match self {
            Job::Kernel(k) => k.name(),
            Job::Against => "against".into(),
        }
    }
}

/// The walls' file in the cache: `NAME<TAB>SECONDS` a line.
pub const WALLS_FILE: &str = "ci-walls.tsv";

/// The walls a fresh clone starts from, in the repository: a CI run's.
pub const WALLS_HINT: &str = "ci/walls.tsv";

/// `jobs` longest first by `walls`, the unknown ones first of all; ties
/// keep their order.
pub fn order(mut jobs: Vec<Job>, walls: &BTreeMap<String, f64>) -> Vec<Job> {
    jobs.sort_by(|a, b| {
        let w = |j: &Job| walls.get(&j.name()).copied().unwrap_or(f64::INFINITY);
        w(b).total_cmp(&w(a))
    });
    jobs
}

/// The walls in a file's text; a line that does not read is left out (the
/// file is a hint: at worst the order is ci/kernels').
pub fn read_walls(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (name, secs) = l.split_once('\t')?;
            let secs: f64 = secs.trim().parse().ok()?;
            (secs.is_finite() && secs >= 0.0).then(|| (name.to_owned(), secs))
        })
        .collect()
}

/// The walls the queue is ordered by, and where this machine keeps its own.
pub struct Walls {
    /// [`WALLS_HINT`]'s, overridden by the cache's.
    pub known: BTreeMap<String, f64>,
    /// The cache's alone: what the next run keeps, with this run's.
    cached: BTreeMap<String, f64>,
    file: anyhow::Result<PathBuf>,
}

impl Walls {
    /// Both files, as they read (a missing one is none).
    pub fn load() -> Self {
        let read = |f: &Path| read_walls(&std::fs::read_to_string(f).unwrap_or_default());
        let file = crate::util::cache_dir().map(|d| d.join(WALLS_FILE));
        let cached = file.as_deref().map(read).unwrap_or_default();
        let mut known = read(&crate::util::repo_root().join(WALLS_HINT));
        known.extend(cached.clone());
        Walls {
            known,
            cached,
            file,
        }
    }

    /// Keeps this run's walls in the cache for the next run's order.
    pub fn keep(mut self, run: impl IntoIterator<Item = (String, f64)>) -> anyhow::Result<()> {
        self.cached.extend(run);
        // No cache (neither it nor HOME named): nothing to keep.
        let Ok(file) = self.file else { return Ok(()) };
        crate::util::write_whole(&file, walls_text(&self.cached).as_bytes())
    }
}

pub fn walls_text(walls: &BTreeMap<String, f64>) -> String {
    walls
        .iter()
        .map(|(name, secs)| format!("{name}\t{secs:.1}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(line: &str) -> Job {
        Job::Kernel(CiKernel::from_line(line).unwrap())
    }

    #[test]
    fn longest_first_and_the_unknown_before_them() {
        let jobs = vec![
            kernel("5.10"),
            kernel("newest"),
            kernel("6.12 --exact"),
            Job::Against,
            kernel("6.12 --arch arm64"),
        ];
        // The walls of CI's run of 2026-12-07 (2 at a time).
        let walls = read_walls("5.10\t44.5\nnewest\t337.3\n6.12-exact\t247.3\n6.12-arm64\t47.8\n");
        let names: Vec<String> = order(jobs, &walls).iter().map(Job::name).collect();
        assert_eq!(
            names,
            ["against", "newest", "6.12-exact", "6.12-arm64", "5.10"]
        );
    }

    #[test]
    fn without_walls_the_order_is_the_files() {
        let jobs = vec![kernel("5.10"), kernel("6.1"), Job::Against];
        assert_eq!(order(jobs.clone(), &BTreeMap::new()), jobs);
    }

    /// The repository's hint, its text, and CI's kernels as jobs.
    fn hint_and_kernels() -> (String, Vec<Job>) {
        let repo = crate::util::repo_root();
        let text = std::fs::read_to_string(repo.join(WALLS_HINT)).unwrap();
        let kernels = std::fs::read_to_string(repo.join(crate::tasks::ci::KERNELS_FILE)).unwrap();
        let jobs = crate::tasks::ci::read_kernels(&kernels)
            .unwrap()
            .into_iter()
            .map(Job::Kernel)
            .collect();
        (text, jobs)
    }

    #[test]
    fn the_hint_names_only_ci_jobs() {
        let (text, kernels) = hint_and_kernels();
        let hint = read_walls(&text);
        let mut jobs: Vec<String> = kernels.iter().map(Job::name).collect();
        jobs.push(Job::Against.name());
        let lines = text.lines().filter(|l| !l.starts_with('#')).count();
        assert_eq!(hint.len(), lines, "every line reads");
        let stale: Vec<&String> = hint.keys().filter(|n| !jobs.contains(n)).collect();
        assert!(
            stale.is_empty(),
            "{WALLS_HINT} names no such job: {stale:?}"
        );
    }

    /// When the last of `jobs` ends, `lanes` at a time in that order.
    fn makespan(jobs: &[Job], walls: &BTreeMap<String, f64>, lanes: usize) -> f64 {
        let mut free = vec![0.0_f64; lanes];
        for j in jobs {
            let lane = (0..lanes)
                .min_by(|&a, &b| free[a].total_cmp(&free[b]))
                .unwrap();
            free[lane] += walls[&j.name()];
        }
        free.into_iter().fold(0.0, f64::max)
    }

    #[test]
    fn longest_first_ends_ci_sooner_than_the_files_order() {
        let (text, mut jobs) = hint_and_kernels();
        let walls = read_walls(&text);
        // Before: the kernels in the file's order, then the comparison alone.
        let before = makespan(&jobs, &walls, 2) + walls["against"];
        jobs.push(Job::Against);
        let after = makespan(&order(jobs, &walls), &walls, 2);
        assert!(after < before, "{after:.0} s against {before:.0} s");
        eprintln!("the hint's VMs, 2 at a time: {before:.0} s in the file's order, {after:.0} s longest first");
    }

    #[test]
    fn walls_read_back_and_bad_lines_are_left_out() {
        let walls = read_walls("6.1\t56.3\nnewest\tNaN\n6.12 86\n5.10\t-1\nagainst\t120\n");
        assert_eq!(walls_text(&walls), "6.1\t56.3\nagainst\t120.0\n");
        assert_eq!(read_walls(&walls_text(&walls)), walls);
    }
}
