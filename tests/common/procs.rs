//! What another bpf-overhead process is doing, seen from /proc: for the
//! tests that run the command beside themselves.

/// Whether `pid` holds a BPF program: a `prog_id:` in the fdinfo of any of
/// its threads (the measuring thread has a file table of its own), so it
/// is measuring.
pub fn holds_a_program(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|task| {
        std::fs::read_dir(task.path().join("fdinfo")).is_ok_and(|fds| {
            fds.flatten().any(|fd| {
                std::fs::read_to_string(fd.path()).is_ok_and(|i| i.contains("\nprog_id:"))
            })
        })
    })
}
