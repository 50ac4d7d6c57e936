//! Where root writes: never through a link another user planted in a
//! directory anyone may write, and under sudo only where the user may,
//! as the user's files (common/src/safe_write.rs). The suite runs as root;
//! `nobody` plants the links and stands for the user of sudo.

use std::fs;
use std::path::Path;
use std::time::Duration;

mod common;
use common::cli::*;
use common::system::root_or_skip;
use common::users::{as_sudo, names, nobodys_dir, owner, plant_link, sticky_dir, NOBODY};

const REFUSED: &str = "is a symbolic link of uid 65534";

/// A file only root may write, with what it holds.
fn precious() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("precious");
    fs::write(&file, "precious").unwrap();
    (dir, file)
}

/// `report`'s two result files, for its --svg.
fn two_results(dir: &Path) -> [String; 2] {
    ["a.json", "b.json"].map(|name| {
        let path = dir.join(name);
        fs::write(&path, fixture().to_string()).unwrap();
        path.to_str().unwrap().to_owned()
    })
}

/// `report a b --svg OUT` and its answer, within 20 s.
fn report_svg(results: &[String; 2], out: &Path, sudo: bool) -> Output {
    let mut cmd = command(&[
        "report",
        &results[0],
        &results[1],
        "--svg",
        out.to_str().unwrap(),
    ]);
    if sudo {
        as_sudo(&mut cmd);
    }
    output_within(cmd, Duration::from_secs(20))
}

#[test]
fn save_through_a_planted_link_is_refused() {
    if !root_or_skip("planting a link as nobody needs root") {
        return;
    }
    let (_root_only, target) = precious();
    let sticky = sticky_dir();
    let link = sticky.path().join("evil.json");
    plant_link(&target, &link);
    refused_early(&["--save", link.to_str().unwrap()], REFUSED);
    assert_eq!(fs::read_to_string(&target).unwrap(), "precious");
    assert_eq!(names(sticky.path()), ["evil.json"], "left behind");
    assert_eq!(names(target.parent().unwrap()), ["precious"], "left behind");
}

#[test]
fn save_into_a_planted_link_to_a_directory_is_refused() {
    if !root_or_skip("planting a link as nobody needs root") {
        return;
    }
    let set = tempfile::tempdir().unwrap();
    let sticky = sticky_dir();
    let link = sticky.path().join("baselines");
    plant_link(set.path(), &link);
    let l = link.to_str().unwrap();
    // The set itself, and a file in it through the link.
    for save in [l, &format!("{l}/"), &format!("{l}/r.json")] {
        refused_early(&["--save", save], REFUSED);
    }
    assert!(names(set.path()).is_empty(), "written into the set");
    assert_eq!(names(sticky.path()), ["baselines"], "left behind");
}

#[test]
fn report_svg_through_a_planted_link_is_refused() {
    if !root_or_skip("planting a link as nobody needs root") {
        return;
    }
    let (_root_only, target) = precious();
    let inputs = tempfile::tempdir().unwrap();
    let results = two_results(inputs.path());
    let sticky = sticky_dir();
    let link = sticky.path().join("chart.svg");
    plant_link(&target, &link);
    let out = report_svg(&results, &link, false);
    assert_refused(&out, REFUSED, "report --svg through a planted link");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert_eq!(fs::read_to_string(&target).unwrap(), "precious");
    assert_eq!(names(sticky.path()), ["chart.svg"], "left behind");
}

/// Under sudo the link of another user is refused wherever it is, and
/// the user's own is followed (the link stays a link).
#[test]
fn under_sudo_only_the_users_own_links_are_followed() {
    if !root_or_skip("files of another user need root") {
        return;
    }
    let home = nobodys_dir();
    let inputs = tempfile::tempdir().unwrap();
    let results = two_results(inputs.path());
    let theirs = home.path().join("mine.svg");
    plant_link(Path::new("chart.svg"), &theirs);
    let out = report_svg(&results, &theirs, true);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(owner(&theirs) == (NOBODY, NOBODY) && theirs.is_symlink());
    assert_eq!(owner(&home.path().join("chart.svg")), (NOBODY, NOBODY));
    // Root's tests' own link, in the user's directory: not the user's.
    let other = home.path().join("other.svg");
    std::os::unix::fs::symlink("other-target.svg", &other).unwrap();
    std::os::unix::fs::lchown(&other, Some(1), Some(1)).unwrap();
    let out = report_svg(&results, &other, true);
    assert_refused(&out, "is a symbolic link of uid 1", "another user's link");
    assert!(!home.path().join("other-target.svg").exists());
}

/// Under sudo a file is created as the user would: where they may not
/// write (a directory of root's), it is refused before the run.
#[test]
fn under_sudo_save_is_refused_where_the_user_may_not_write() {
    if !root_or_skip("files of another user need root") {
        return;
    }
    let roots = tempfile::tempdir().unwrap();
    let save = roots.path().join("r.json");
    let mut cmd = command(&[
        "-m",
        "raw_tp",
        "--iterations",
        "100000000",
        "--save",
        save.to_str().unwrap(),
    ]);
    as_sudo(&mut cmd);
    let out = output_within(cmd, Duration::from_secs(20));
    assert_refused(&out, "Permission denied", "--save into root's directory");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(names(roots.path()).is_empty(), "left behind");
}

/// Files written under sudo in the user's directory are the user's: a
/// result, a run added to a baseline set, a chart.
#[test]
#[serial_test::serial]
fn under_sudo_the_files_written_are_the_users() {
    if !root_or_skip("a run needs root") {
        return;
    }
    let home = nobodys_dir();
    let set = home.path().join("set");
    fs::create_dir(&set).unwrap();
    std::os::unix::fs::chown(&set, Some(NOBODY), Some(NOBODY)).unwrap();
    let result = home.path().join("r.json");
    for save in [&result, &set] {
        let mut cmd = command(&raw_tp_run("2", &["--save", save.to_str().unwrap()]));
        as_sudo(&mut cmd);
        let out = output(cmd);
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let in_set = fs::read_dir(&set).unwrap().next().unwrap().unwrap().path();
    let inputs = tempfile::tempdir().unwrap();
    let chart = home.path().join("chart.svg");
    let out = report_svg(&two_results(inputs.path()), &chart, true);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for file in [&result, &in_set, &chart] {
        assert_eq!(owner(file), (NOBODY, NOBODY), "{}", file.display());
    }
    assert_eq!(names(home.path()), ["chart.svg", "r.json", "set"]);
}
