//! `bench-rust MODE N`: N calls of a `debug!` that vlog does not keep (or
//! with no logger at all), for callgrind (bench-c/rust.sh), which takes
//! the difference between two N so that start-up cancels. Modes:
//! log-none, log-vlog, tracing-none, tracing-vlog. vlog's levels come from
//! the environment (its default, warn, unless the script says otherwise).

use std::hint::black_box;

use tracing_subscriber::prelude::*;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<u64>().ok()))
    else {
        eprintln!("usage: bench-rust log-none|log-vlog|tracing-none|tracing-vlog N");
        std::process::exit(2);
    };
    match mode.as_str() {
        "log-none" => {}
        "log-vlog" => vlog_bridge::log::init().expect("the log backend"),
        "tracing-none" => {}
        "tracing-vlog" => tracing_subscriber::registry()
            .with(vlog_bridge::tracing::layer().expect("the tracing layer"))
            .init(),
        _ => {
            eprintln!("bench-rust: unknown mode {mode}");
            std::process::exit(2);
        }
    }
    let log = mode.starts_with("log");
    for i in 0..n {
        if log {
            log::debug!(target: "bench::disabled", "value {}", black_box(i));
        } else {
            tracing::debug!(target: "bench::disabled", value = black_box(i), "a value");
        }
    }
    // The calls were not kept: vlog recorded nothing of them (the first
    // two of vlog_stats: the ring's size and its records).
    let mut stats = [0u64; 2];
    // SAFETY: a buffer of the size passed.
    let got = unsafe { vlog_get_stats_sized(stats.as_mut_ptr(), std::mem::size_of_val(&stats)) };
    if got != 0 || stats[1] != 0 {
        eprintln!(
            "bench-rust: {} records kept; the calls were meant to be disabled",
            stats[1]
        );
        std::process::exit(1);
    }
}

extern "C" {
    fn vlog_get_stats_sized(stats: *mut u64, size: usize) -> std::ffi::c_int;
}
