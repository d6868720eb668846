//! The process metrics every Prometheus client library exports (`process_*`, read from Linux's `/proc/self`, so
//! dashboards built for any exporter work), and `namesrv_build_info`. On other systems only the build is shown:
//! a wrong number is worse than none.

use std::fmt::Write as _;

use super::metric;

/// Linux reports CPU and start times in USER_HZ ticks, fixed at 100 per second for user space on every
/// architecture (the kernel's own HZ may differ; `/proc` converts).
#[cfg(target_os = "linux")]
const TICKS_PER_SECOND: f64 = 100.0;

pub(super) fn render(o: &mut String) {
    let _ = writeln!(
        o,
        "# HELP namesrv_build_info The running build.\n# TYPE namesrv_build_info gauge\n\
         namesrv_build_info{{version=\"{}\",commit=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION"),
        env!("NAMESRV_COMMIT")
    );
    #[cfg(target_os = "linux")]
    linux(o);
}

#[cfg(target_os = "linux")]
fn linux(o: &mut String) {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    if let Some(stat) = read("/proc/self/stat").as_deref().and_then(Stat::parse) {
        let cpu = (stat.utime + stat.stime) as f64 / TICKS_PER_SECOND;
        metric(o, "process_cpu_seconds_total", "counter", "User and system CPU time spent in seconds.", cpu);
        metric(o, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", stat.vsize);
        // Start = boot time + ticks since boot; whole seconds, as btime is.
        if let Some(btime) = read("/proc/stat").as_deref().and_then(boot_time) {
            let start = btime as f64 + stat.starttime as f64 / TICKS_PER_SECOND;
            let help = "Start time of the process since unix epoch in seconds.";
            metric(o, "process_start_time_seconds", "gauge", help, start);
        }
    }
    // VmRSS in kB: /proc/self/stat counts RSS in pages, whose size would need libc to know.
    if let Some(kib) = read("/proc/self/status").as_deref().and_then(|s| kib_field(s, "VmRSS:")) {
        metric(o, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", kib * 1024);
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        metric(o, "process_open_fds", "gauge", "Number of open file descriptors.", fds.count());
    }
    if let Some(max) = read("/proc/self/limits").as_deref().and_then(max_open_files) {
        metric(o, "process_max_fds", "gauge", "Maximum number of open file descriptors.", max);
    }
}

/// The fields of `/proc/self/stat` used here (proc(5): utime 14, stime 15, starttime 22, vsize 23).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug, PartialEq)]
struct Stat {
    utime: u64,
    stime: u64,
    starttime: u64,
    vsize: u64,
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
impl Stat {
    fn parse(text: &str) -> Option<Stat> {
        // The command name (field 2) is in parentheses and may hold spaces and ')': split after the last one,
        // so index 0 is field 3.
        let rest: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
        let field = |n: usize| rest.get(n - 3)?.parse::<u64>().ok();
        Some(Stat { utime: field(14)?, stime: field(15)?, starttime: field(22)?, vsize: field(23)? })
    }
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn boot_time(proc_stat: &str) -> Option<u64> {
    proc_stat.lines().find_map(|l| l.strip_prefix("btime ")?.trim().parse().ok())
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn kib_field(status: &str, key: &str) -> Option<u64> {
    status.lines().find_map(|l| l.strip_prefix(key)?.trim().strip_suffix("kB")?.trim().parse().ok())
}

/// The soft limit (what `open` runs into) of "Max open files"; none when it is "unlimited".
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn max_open_files(limits: &str) -> Option<u64> {
    limits.lines().find_map(|l| l.strip_prefix("Max open files")?.split_whitespace().next()?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_a_command_name_with_spaces_and_parens() {
        let text = "4242 (a b) c) S 1 4242 4242 0 -1 4194560 900 0 0 0 731 52 0 0 20 0 9 0 123456 2215424000 3057 \
                    18446744073709551615 1 1 0 0 0 0 0 4096 1260 0 0 0 17 1 0 0 0 0 0";
        assert_eq!(Stat::parse(text), Some(Stat { utime: 731, stime: 52, starttime: 123456, vsize: 2215424000 }));
        assert_eq!(Stat::parse("4242 (cut short) S 1"), None);
    }

    #[test]
    fn boot_time_rss_and_fd_limit() {
        assert_eq!(boot_time("cpu  1 2 3\nintr 5\nbtime 1764600000\nprocesses 9\n"), Some(1764600000));
        assert_eq!(kib_field("VmPeak:\t  20000 kB\nVmRSS:\t    8192 kB\n", "VmRSS:"), Some(8192));
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max open files            1024                 1048576              files     \n";
        assert_eq!(max_open_files(limits), Some(1024));
        assert_eq!(max_open_files("Max open files            unlimited            unlimited            files"), None);
    }
}
