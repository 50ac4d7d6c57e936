//! Every file the command and xtask create is created here, by one rule.
//!
//! They run as root (`sudo -E`), and a path they are given may pass
//! through a directory others can write, such as /tmp. So:
//!
//! - Under sudo (root, with `SUDO_UID`/`SUDO_GID`), a file is created as the
//!   invoking user would create it: by a thread whose file-system ids and
//!   groups are the user's. The kernel checks the user's permissions, not
//!   root's, and the file is the user's.
//! - A symbolic link on the way is followed by hand, and only when it can
//!   be trusted: under sudo, a link of root's or the user's own; otherwise
//!   by the kernel's rule for sticky directories anyone may write
//!   (fs.protected_symlinks: a link there is followed only when it is the
//!   follower's or the directory owner's), whatever the sysctl says.
//!   Following by hand keeps a trusted link a link: the file it names is
//!   replaced, not the link.
//! - Every directory on the way is opened without following links
//!   (`openat`, `O_NOFOLLOW`), and the file is made inside the directory so
//!   opened: a link swapped in after the check is refused, not followed.
//! - A file is written whole or not at all: a new file beside it, synced,
//!   renamed over it. Nothing is left behind when that fails.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io::{self, Write as _};
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Component, Path, PathBuf};

mod at;
use at::{become_user, fstat, fstatat, group_list, mkdirat, open_path, openat, readlinkat};
use at::{user_name, Temp};

/// Why a file was not written. Each is one line, said after the target's
/// name ("cannot save to X: ...").
#[derive(Debug)]
pub enum Error {
    /// A link that is not followed, by the rule above: bad input.
    Refused(String),
    /// The file is there already, and was not to be replaced.
    Exists(PathBuf),
    /// The system refused or failed (no directory, no permission, a full
    /// disk): what and why.
    Failed(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Refused(why) | Error::Failed(why) => f.write_str(why),
            Error::Exists(path) => write!(f, "{} is there already", path.display()),
        }
    }
}

impl std::error::Error for Error {}

type Result<T> = std::result::Result<T, Error>;

/// Whether an existing file may be replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replace {
    Yes,
    No,
}

/// The user files are written for under sudo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub uid: u32,
    pub gid: u32,
    /// Their groups, as login gives them (their primary group at least).
    groups: Vec<libc::gid_t>,
}

impl User {
    /// The user `uid` with primary group `gid`, and the groups the system
    /// gives them.
    pub fn new(uid: u32, gid: u32) -> Self {
        let groups = user_name(uid)
            .and_then(|name| group_list(&name, gid))
            .unwrap_or_else(|| vec![gid]);
        Self { uid, gid, groups }
    }
}

/// Who writes: the process, or under sudo the invoking user.
#[derive(Clone, Debug)]
pub struct Writer {
    /// The user under sudo; `None` writes as the process.
    pub user: Option<User>,
    /// The process's effective uid, the follower of the kernel's rule.
    euid: u32,
}

/// The kind of file a path names, once its links are followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Missing,
    File,
    Dir,
    /// A device, FIFO or socket: never written.
    Other,
}

/// What [`Writer::probe`] found.
#[derive(Clone, Debug)]
pub struct Probe {
    /// The path with its links followed (the file a link names).
    pub path: PathBuf,
    pub kind: Kind,
    /// Its device and inode, when it is there.
    pub id: Option<(u64, u64)>,
}

impl Writer {
    /// The writer for this process: under sudo (effective uid 0 and
    /// numeric `SUDO_UID`, `SUDO_GID` naming another user), that user.
    pub fn from_env() -> Self {
        // SAFETY: geteuid cannot fail.
        let euid = unsafe { libc::geteuid() };
        let id = |var| std::env::var(var).ok()?.trim().parse::<u32>().ok();
        let user = match (id("SUDO_UID"), id("SUDO_GID")) {
            (Some(uid), Some(gid)) if euid == 0 && uid != 0 => Some(User::new(uid, gid)),
            _ => None,
        };
        Self { user, euid }
    }

    /// A writer that writes as `user`, or as the process.
    pub fn new(user: Option<User>) -> Self {
        // SAFETY: geteuid cannot fail.
        Self {
            user,
            euid: unsafe { libc::geteuid() },
        }
    }

    /// What `path` names, and whether a file can be created where it would
    /// be written: in the directory it names, or beside the file (tried
    /// with a new file, removed at once). Devices and the like are
    /// reported, not tried.
    pub fn probe(&self, path: &Path) -> Result<Probe> {
        self.as_user(|| {
            let t = self.walk(path, false)?;
            match t.kind {
                Kind::Dir => {
                    let dir = t.open_dir()?;
                    check_create(&dir, &t.path)?;
                }
                Kind::Missing | Kind::File => check_create(&t.dir, &t.dir_path)?,
                Kind::Other => {}
            }
            Ok(Probe {
                path: t.path,
                kind: t.kind,
                id: t.id,
            })
        })
    }

    /// Writes `data` to `path` whole, and returns the path written (the
    /// file a link names): a new file beside it, synced, then renamed
    /// over it (with [`Replace::No`], only where no file is).
    pub fn write(&self, path: &Path, data: &[u8], replace: Replace) -> Result<PathBuf> {
        self.as_user(|| {
            let t = self.walk(path, false)?;
            let name = t.file_name()?;
            match t.kind {
                Kind::Missing => {}
                Kind::File if replace == Replace::Yes => {}
                Kind::File => return Err(Error::Exists(t.path)),
                Kind::Dir => return Err(fail_is(&t.path, "a directory")),
                Kind::Other => return Err(fail_is(&t.path, "not a regular file")),
            }
            let tmp = Temp::create(&t.dir, name, &t.dir_path)?;
            let mut file = &tmp.file;
            if let Err(e) = file.write_all(data).and_then(|()| file.sync_all()) {
                return Err(Error::Failed(format!(
                    "cannot write {}: {e}",
                    t.path.display()
                )));
            }
            tmp.rename_to(name, replace, &t.path)?;
            Ok(t.path)
        })
    }

    /// Creates (or truncates) `path` for writing bit by bit (a log), and
    /// returns it open: a regular file only.
    pub fn create(&self, path: &Path) -> Result<File> {
        self.as_user(|| {
            let t = self.walk(path, false)?;
            let name = t.file_name()?;
            if !matches!(t.kind, Kind::Missing | Kind::File) {
                return Err(fail_is(&t.path, "not a regular file"));
            }
            let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_NOFOLLOW;
            // O_NONBLOCK: a FIFO swapped in cannot make the open wait.
            let fd = openat(&t.dir, name, flags | libc::O_NONBLOCK, 0o666)
                .map_err(|e| Error::Failed(format!("cannot create {}: {e}", t.path.display())))?;
            let file = File::from(fd);
            let meta = file.metadata().map_err(|e| failed(&t.path, e))?;
            if !meta.is_file() {
                return Err(fail_is(&t.path, "not a regular file"));
            }
            // SAFETY: fcntl on an fd we own.
            unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, 0) };
            Ok(file)
        })
    }

    /// Creates directory `path` and those above it where missing (as
    /// `fs::create_dir_all`), and returns it with its links followed.
    pub fn create_dir_all(&self, path: &Path) -> Result<PathBuf> {
        self.as_user(|| {
            let t = self.walk(path, true)?;
            match (t.kind, &t.name) {
                (Kind::Dir, _) => Ok(t.path),
                (Kind::Missing, Some(name)) => {
                    mkdirat(&t.dir, name).or_else(|e| match e.raw_os_error() {
                        // Made meanwhile by another run: if a directory, fine.
                        Some(libc::EEXIST) => self.walk(path, false).and_then(|again| {
                            if again.kind == Kind::Dir {
                                Ok(())
                            } else {
                                Err(fail_is(&t.path, "not a directory"))
                            }
                        }),
                        _ => Err(Error::Failed(format!(
                            "cannot create directory {}: {e}",
                            t.path.display()
                        ))),
                    })?;
                    Ok(t.path)
                }
                _ => Err(fail_is(&t.path, "not a directory")),
            }
        })
    }

    /// Runs `f` as the user: on a thread of its own whose file-system ids
    /// and groups are theirs. Credentials are per thread in Linux, and the
    /// raw system calls change only the calling thread's (glibc's
    /// setgroups would change every thread's).
    fn as_user<R: Send>(&self, f: impl FnOnce() -> Result<R> + Send) -> Result<R> {
        let Some(user) = &self.user else {
            return f();
        };
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    become_user(user).map_err(|e| {
                        Error::Failed(format!("cannot act as uid {}: {e}", user.uid))
                    })?;
                    f()
                })
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e))
        })
    }

    /// Follows `path` to the directory its file goes in, opened, and the
    /// file's name: each directory opened without following links, each
    /// link followed by hand if [`Writer::trusts`] it. With `mkdir`,
    /// missing directories on the way are created.
    fn walk(&self, path: &Path, mkdir: bool) -> Result<Walked> {
        if path.as_os_str().is_empty() {
            return Err(Error::Failed("an empty path names no file".into()));
        }
        let mut todo: VecDeque<Step> = steps(path);
        let (mut dir, mut at) = start(path)?;
        let mut links = 0;
        while let Some(step) = todo.pop_front() {
            let name = match step {
                Step::Root => {
                    dir = open_path(c"/").map_err(|e| failed(Path::new("/"), e))?;
                    at = PathBuf::from("/");
                    continue;
                }
                Step::Up => {
                    dir = openat(&dir, OsStr::new(".."), O_DIR, 0).map_err(|e| failed(&at, e))?;
                    up(&mut at);
                    continue;
                }
                Step::Name(name) => name,
            };
            let here = at.join(&name);
            let st = match fstatat(&dir, &name) {
                Ok(st) => st,
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                    if todo.is_empty() {
                        return Ok(Walked::new(dir, at, Some(name), None));
                    }
                    if !mkdir {
                        let missing = missing_dir(here, &todo);
                        return Err(Error::Failed(format!("no directory {}", missing.display())));
                    }
                    mkdir_on_the_way(&dir, &name, &here)?;
                    // Looked at again: what is there now, even a link.
                    todo.push_front(Step::Name(name));
                    continue;
                }
                Err(e) => return Err(failed(&here, e)),
            };
            if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
                links += 1;
                if links > 40 {
                    return Err(Error::Failed(format!(
                        "{}: too many levels of symbolic links",
                        path.display()
                    )));
                }
                let mut spliced = self.follow(&dir, &at, &name, &here, &st)?;
                spliced.extend(todo);
                todo = spliced;
                continue;
            }
            if todo.is_empty() {
                return Ok(Walked::new(dir, at, Some(name), Some(st)));
            }
            if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
                return Err(fail_is(&here, "not a directory"));
            }
            // O_NOFOLLOW: a link swapped in since the fstatat is refused.
            dir = openat(&dir, &name, O_DIR, 0).map_err(|e| failed(&here, e))?;
            at = here;
        }
        // The path ends in ".." or is "/": the directory walked to.
        let st = fstat(&dir).map_err(|e| failed(&at, e))?;
        Ok(Walked::new(dir, at, None, Some(st)))
    }

    /// The steps the link `name` in `dir` points to, if [`Writer::trusts`]
    /// it: `st` is the link's, `at` the directory's path and `here` its.
    fn follow(
        &self,
        dir: &OwnedFd,
        at: &Path,
        name: &OsStr,
        here: &Path,
        st: &libc::stat,
    ) -> Result<VecDeque<Step>> {
        let parent = fstat(dir).map_err(|e| failed(at, e))?;
        self.trusts(st, &parent, here, at)?;
        let to = readlinkat(dir, name).map_err(|e| failed(here, e))?;
        Ok(steps(&to))
    }

    /// Whether the link `st` in the directory `dir` may be followed: under
    /// sudo, root's or the user's; otherwise the kernel's rule (in a
    /// sticky directory anyone may write, the follower's or the
    /// directory owner's). A refusal says what to do.
    fn trusts(&self, st: &libc::stat, dir: &libc::stat, link: &Path, at: &Path) -> Result<()> {
        let owner = st.st_uid;
        let who = || match user_name(owner) {
            Some(name) => format!("uid {owner} ({name})"),
            None => format!("uid {owner}"),
        };
        match &self.user {
            Some(user) if owner == 0 || owner == user.uid => Ok(()),
            Some(user) => Err(Error::Refused(format!(
                "{} is a symbolic link of {}, neither yours (uid {}) nor root's: not \
                 followed; name the file it points to, or a path of your own",
                link.display(),
                who(),
                user.uid
            ))),
            None => {
                let shared = dir.st_mode & libc::S_ISVTX != 0 && dir.st_mode & libc::S_IWOTH != 0;
                if !shared || owner == self.euid || owner == dir.st_uid {
                    return Ok(());
                }
                Err(Error::Refused(format!(
                    "{} is a symbolic link of {} in {}, a sticky directory anyone may write: \
                     not followed (the kernel's fs.protected_symlinks rule); name the file it \
                     points to, or a path of your own",
                    link.display(),
                    who(),
                    if at.as_os_str().is_empty() {
                        Path::new(".")
                    } else {
                        at
                    }
                    .display()
                )))
            }
        }
    }
}

/// Writes `data` to `path` whole, as [`Writer::from_env`]'s writer.
pub fn write(path: &Path, data: impl AsRef<[u8]>) -> Result<PathBuf> {
    Writer::from_env().write(path, data.as_ref(), Replace::Yes)
}

/// Creates directory `path` and its parents, as [`Writer::from_env`]'s writer.
pub fn create_dir_all(path: &Path) -> Result<PathBuf> {
    Writer::from_env().create_dir_all(path)
}

/// Creates file `path` for writing, as [`Writer::from_env`]'s writer.
pub fn create(path: &Path) -> Result<File> {
    Writer::from_env().create(path)
}

/// A directory, opened only to name things in (`O_PATH`), never through
/// a link.
const O_DIR: libc::c_int = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;

enum Step {
    Root,
    Up,
    Name(OsString),
}

fn steps(path: &Path) -> VecDeque<Step> {
    path.components()
        .filter_map(|c| match c {
            Component::RootDir => Some(Step::Root),
            Component::ParentDir => Some(Step::Up),
            Component::Normal(n) => Some(Step::Name(n.to_owned())),
            Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// `at` one directory up, as a path to show.
fn up(at: &mut PathBuf) {
    let relative_up = at.as_os_str().is_empty() || at.ends_with("..");
    if relative_up {
        at.push("..");
    } else if at != Path::new("/") {
        at.pop();
    }
}

/// Where a walk of `path` starts, opened, and its path as shown: `/`, or
/// the working directory.
fn start(path: &Path) -> Result<(OwnedFd, PathBuf)> {
    // The working directory is shown as nothing: paths stay relative.
    let (start, shown, at) = if path.is_absolute() {
        (c"/", "/", "/")
    } else {
        (c".", ".", "")
    };
    let dir = open_path(start).map_err(|e| failed(Path::new(shown), e))?;
    Ok((dir, PathBuf::from(at)))
}

/// The whole directory a file was to go in, where the walk found `here`
/// missing with `todo` still to go (the file's own name last).
fn missing_dir(mut missing: PathBuf, todo: &VecDeque<Step>) -> PathBuf {
    for step in todo.iter().take(todo.len() - 1) {
        match step {
            Step::Root => missing = PathBuf::from("/"),
            Step::Up => up(&mut missing),
            Step::Name(n) => missing.push(n),
        }
    }
    missing
}

/// Creates the directory `name` in `dir` (`here`), where a walk found
/// none; one made meanwhile will do.
fn mkdir_on_the_way(dir: &OwnedFd, name: &OsStr, here: &Path) -> Result<()> {
    match mkdirat(dir, name) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
        Err(e) => Err(Error::Failed(format!(
            "cannot create directory {}: {e}",
            here.display()
        ))),
    }
}

/// Where a walk ended: the directory, opened, and the name in it.
struct Walked {
    dir: OwnedFd,
    dir_path: PathBuf,
    /// `None` when the path names the directory itself (`/`, `..`).
    name: Option<OsString>,
    path: PathBuf,
    kind: Kind,
    id: Option<(u64, u64)>,
}

impl Walked {
    fn new(dir: OwnedFd, at: PathBuf, name: Option<OsString>, st: Option<libc::stat>) -> Self {
        let kind = match st.map(|s| s.st_mode & libc::S_IFMT) {
            None => Kind::Missing,
            Some(libc::S_IFREG) => Kind::File,
            Some(libc::S_IFDIR) => Kind::Dir,
            Some(_) => Kind::Other,
        };
        let path = match &name {
            Some(n) => at.join(n),
            None if at.as_os_str().is_empty() => PathBuf::from("."),
            None => at.clone(),
        };
        let dir_path = if at.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            at
        };
        Self {
            dir,
            dir_path,
            name,
            path,
            kind,
            id: st.map(|s| (s.st_dev, s.st_ino)),
        }
    }

    fn file_name(&self) -> Result<&OsStr> {
        self.name
            .as_deref()
            .ok_or_else(|| fail_is(&self.path, "a directory"))
    }

    /// The directory the walk ended on, opened.
    fn open_dir(&self) -> Result<OwnedFd> {
        match &self.name {
            Some(name) => openat(&self.dir, name, O_DIR, 0).map_err(|e| failed(&self.path, e)),
            None => openat(&self.dir, OsStr::new("."), O_DIR, 0).map_err(|e| failed(&self.path, e)),
        }
    }
}

/// That a file can be created in `dir`: one is, and removed at once.
fn check_create(dir: &OwnedFd, dir_path: &Path) -> Result<()> {
    Temp::create(dir, OsStr::new("bpf-overhead"), dir_path).map(drop)
}

fn failed(path: &Path, e: io::Error) -> Error {
    let shown = if path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        path
    };
    Error::Failed(format!("{}: {e}", shown.display()))
}

fn fail_is(path: &Path, what: &str) -> Error {
    Error::Failed(format!("{} is {what}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{lchown, symlink, MetadataExt as _, PermissionsExt as _};

    const NOBODY: u32 = 65534;

    fn root() -> bool {
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        if !root {
            println!("SKIP: needs root, to own files as another user");
        }
        root
    }

    /// A sticky directory anyone may write, as /tmp, with a link in it
    /// of `owner`'s to `target`.
    fn planted(owner: u32, target: &Path) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o1777)).unwrap();
        let link = dir.path().join("evil.json");
        symlink(target, &link).unwrap();
        lchown(&link, Some(owner), Some(owner)).unwrap();
        (dir, link)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn writes_whole_through_an_own_link_which_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file.json");
        let link = dir.path().join("link.json");
        symlink("file.json", &link).unwrap();
        let w = Writer::new(None);
        assert_eq!(w.write(&link, b"one", Replace::Yes).unwrap(), file);
        assert_eq!(w.write(&link, b"two", Replace::Yes).unwrap(), file);
        assert_eq!(fs::read_to_string(&file).unwrap(), "two");
        assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(names(dir.path()), ["file.json", "link.json"]);
        assert!(matches!(
            w.write(&link, b"three", Replace::No),
            Err(Error::Exists(_))
        ));
        assert_eq!(names(dir.path()), ["file.json", "link.json"]);
    }

    #[test]
    fn another_users_link_in_a_sticky_directory_is_refused() {
        if !root() {
            return;
        }
        let target = tempfile::NamedTempFile::new().unwrap();
        fs::write(target.path(), "precious").unwrap();
        let (dir, link) = planted(NOBODY, target.path());
        let w = Writer::new(None);
        for e in [
            w.write(&link, b"x", Replace::Yes).unwrap_err(),
            w.probe(&link).unwrap_err(),
            w.create(&link).unwrap_err(),
            // On the way to the file, too.
            w.write(&link.join("x"), b"x", Replace::Yes).unwrap_err(),
        ] {
            assert!(matches!(e, Error::Refused(_)), "{e}");
            assert!(e.to_string().contains("uid 65534"), "{e}");
        }
        assert_eq!(fs::read_to_string(target.path()).unwrap(), "precious");
        assert_eq!(names(dir.path()), ["evil.json"]);
    }

    #[test]
    fn the_directory_owners_link_is_followed_in_a_sticky_directory() {
        if !root() {
            return;
        }
        let out = tempfile::tempdir().unwrap();
        let target = out.path().join("r.json");
        let (_dir, link) = planted(0, &target);
        Writer::new(None).write(&link, b"ok", Replace::Yes).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "ok");
    }

    #[test]
    fn under_sudo_files_are_the_users_and_only_where_they_may_write() {
        if !root() {
            return;
        }
        let home = tempfile::tempdir().unwrap();
        lchown(home.path(), Some(NOBODY), Some(NOBODY)).unwrap();
        let w = Writer::new(Some(User::new(NOBODY, NOBODY)));
        let file = home.path().join("sub/dir/r.json");
        w.create_dir_all(file.parent().unwrap()).unwrap();
        w.write(&file, b"x", Replace::Yes).unwrap();
        for p in [&file, &home.path().join("sub")] {
            let meta = fs::metadata(p).unwrap();
            assert_eq!(
                (meta.uid(), meta.gid()),
                (NOBODY, NOBODY),
                "{}",
                p.display()
            );
        }
        // Root's directory: root may write there, the user may not.
        let roots = tempfile::tempdir().unwrap();
        let e = w
            .write(&roots.path().join("r.json"), b"x", Replace::Yes)
            .unwrap_err();
        assert!(e.to_string().contains("Permission denied"), "{e}");
        assert!(names(roots.path()).is_empty());
        // The user's own link in a sticky directory is theirs to follow;
        // another user's (uid 1, daemon) is not.
        let (_d, own) = planted(NOBODY, &home.path().join("own.json"));
        w.write(&own, b"x", Replace::Yes).unwrap();
        let (_d, other) = planted(1, &home.path().join("other.json"));
        let e = w.write(&other, b"x", Replace::Yes).unwrap_err();
        assert!(matches!(e, Error::Refused(_)), "{e}");
        assert!(!home.path().join("other.json").exists());
    }

    #[test]
    fn paths_are_said_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let w = Writer::new(None);
        let e = w.write(&dir.path().join("no/r.json"), b"", Replace::Yes);
        let e = e.unwrap_err().to_string();
        assert_eq!(
            e,
            format!("no directory {}", dir.path().join("no").display())
        );
        let probe = w.probe(&dir.path().join("a/../x")).unwrap_err().to_string();
        assert!(probe.starts_with("no directory "), "{probe}");
        let probe = w.probe(dir.path()).unwrap();
        assert_eq!((probe.path.as_path(), probe.kind), (dir.path(), Kind::Dir));
        assert!(names(dir.path()).is_empty(), "the probe's file stayed");
    }
}
