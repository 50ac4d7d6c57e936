//! `cargo xtask ci` (to come: .ci/run still runs CI).

pub fn main(_c: crate::args::CiArgs) -> i32 {
    eprintln!("ci: not implemented yet: run .ci/run");
    2
}
