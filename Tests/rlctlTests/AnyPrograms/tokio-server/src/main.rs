// A TCP server on tokio's multi-threaded runtime (two workers sharing one epoll descriptor, as `#[tokio::main]`
// builds it), for `rlctl record --any`: each connection sends one line and gets one back; the line "burn" burns 40 ms
// of CPU time in its task (the worker's own CPU clock: on a loaded machine the burn lasts longer, and its CPU time
// stays 40 ms; a tokio task is never moved to another worker while it runs). After SECONDS a plain thread writes each thread's CPU time from
// the scheduler (/proc/self/task/TID/schedstat, ns) to REPORT as JSON and ends the process.
//
//     tokio-server PORT SECONDS REPORT
use std::time::Duration;

/// The calling thread's CPU time, in ns.
fn thread_cpu_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

fn thread_cpu_times() -> String {
    let mut entries = Vec::new();
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            let tid = task.file_name().to_string_lossy().to_string();
            let schedstat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
            if let Some(ns) = schedstat.split_whitespace().next() {
                entries.push(format!("\"{}\": {}", tid, ns));
            }
        }
    }
    format!("{{\"pid\": {}, \"cpu_ns\": {{{}}}}}\n", std::process::id(), entries.join(", "))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: tokio-server PORT SECONDS REPORT");
        std::process::exit(2);
    }
    let port: u16 = args[1].parse().expect("PORT");
    let seconds: u64 = args[2].parse().expect("SECONDS");
    let report = args[3].clone();
    // The end comes from a plain thread: it writes the report and ends the process, whatever the workers do.
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(seconds));
        std::fs::write(&report, thread_cpu_times()).expect("report");
        std::process::exit(0);
    });
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    runtime.block_on(async move {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
        println!("listening on 127.0.0.1:{}", port);
        loop {
            let (socket, _) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(_) => continue,
            };
            tokio::spawn(async move {
                let (reader, mut writer) = socket.into_split();
                let mut line = String::new();
                if BufReader::new(reader).read_line(&mut line).await.is_err() {
                    return;
                }
                if line.trim() == "burn" {
                    let start = thread_cpu_ns();
                    while thread_cpu_ns() - start < 40_000_000 {}
                }
                let _ = writer.write_all(b"done\n").await;
            });
        }
    });
}
