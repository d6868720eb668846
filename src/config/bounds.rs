//! Bounds of the numeric keys UPDATE_NAMESRV_CONFIG (318) may set. Java bounds none of them; here an unsigned 318
//! could otherwise make every route query wait for years (`needWaitForService` with `waitSecondsForService` of
//! years, persisted) or hold a stop for as long. Each range holds Java's default and every value that behaves
//! differently in Java: the time keys up to an hour (a negative one waits nothing, as in Java, and is kept) (a minute-scale value is what deployments use; a pod's
//! termination grace is minutes), Java's thread-pool and queue sizes from 1 (Java's executors refuse 0) to sizes no
//! deployment needs (they mean nothing here: there are no such pools).
//!
//! 318 refuses a value outside (NO_PERMISSION with a remark, nothing applied, the file untouched,
//! `Config::screen_update`). A `-c` file's value outside is clamped into the range with a warning at start, so that
//! a file a Java name server starts with starts this one too (docs/security.md).

use super::Config;

/// Key, least and greatest value allowed.
pub(crate) const BOUNDS: &[(&str, i64, i64)] = &[
    ("clientRequestThreadPoolNums", 1, 1024),
    ("defaultThreadPoolNums", 1, 1024),
    ("clientRequestThreadPoolQueueCapacity", 1, 10_000_000),
    ("defaultThreadPoolQueueCapacity", 1, 10_000_000),
    ("unRegisterBrokerQueueCapacity", 1, 10_000_000),
    // A negative wait waits nothing in Java, as 0 does: kept as Java takes it (the differential sends one).
    ("waitSecondsForService", NO_LEAST, 3600),
    ("shutdownWaitTimeSeconds", NO_LEAST, 3600),
];

/// The least value of a key bounded only from above (the keys are Java `int`s).
const NO_LEAST: i64 = i32::MIN as i64;

/// The range of a bounded key.
pub(crate) fn bounds(key: &str) -> Option<(i64, i64)> {
    BOUNDS.iter().find(|(name, _, _)| *name == key).map(|(_, lo, hi)| (*lo, *hi))
}

/// A value outside its key's range, for a remark: `waitSecondsForService=31536000 (allowed at most 3600)`. `None` when
/// the key is not bounded or the value is not a number (Java ignores an unparsable value, and so does 318).
pub(crate) fn out_of_range(key: &str, value: &str) -> Option<String> {
    let (lo, hi) = bounds(key)?;
    let v: i64 = value.trim().parse().ok()?;
    (v < lo || v > hi).then(|| format!("{key}={v} (allowed {})", range_text(lo, hi)))
}

fn range_text(lo: i64, hi: i64) -> String {
    if lo == NO_LEAST {
        format!("at most {hi}")
    } else {
        format!("{lo}..={hi}")
    }
}

impl Config {
    /// Clamps every bounded key into its range; a warning per key changed. For the `-c` file at start.
    pub(crate) fn clamp_bounded(&mut self) -> Vec<String> {
        let mut warnings = Vec::new();
        for (key, lo, hi) in BOUNDS {
            let Some(v) = self.get(key).and_then(|v| v.parse::<i64>().ok()) else { continue };
            let clamped = v.clamp(*lo, *hi);
            if clamped != v {
                // Within the range of every bounded key's type (all i32), so this cannot fail to parse.
                let _ = self.set(key, &clamped.to_string());
                warnings.push(format!("{key}={v} is not {}; using {clamped}", range_text(*lo, *hi)));
            }
        }
        warnings
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Update, KEYS};

    /// Every numeric key 318 may set has a range, holding its default; a new runtime number without one fails here.
    #[test]
    fn every_numeric_runtime_key_is_bounded() {
        let defaults = Config::default();
        for (key, _, update) in KEYS.iter().filter(|(_, _, u)| *u == Update::Runtime) {
            let ty = Config::type_name(key).unwrap();
            if ty == "bool" || ty == "String" {
                assert!(bounds(key).is_none(), "{key}");
                continue;
            }
            let (lo, hi) = bounds(key).unwrap_or_else(|| panic!("{key} ({ty}) is runtime-updatable: give it bounds"));
            let d: i64 = defaults.get(key).unwrap().parse().unwrap();
            assert!(lo <= d && d <= hi, "{key}: default {d} outside {lo}..={hi}");
            assert_eq!(*update, Update::Runtime);
        }
        for (key, _, _) in BOUNDS {
            assert!(KEYS.iter().any(|(k, _, u)| k == key && *u == Update::Runtime), "{key} is not a runtime key");
        }
    }

    #[test]
    fn out_of_range_names_the_key_and_the_range() {
        assert_eq!(
            out_of_range("waitSecondsForService", "31536000").as_deref(),
            Some("waitSecondsForService=31536000 (allowed at most 3600)")
        );
        assert_eq!(out_of_range("waitSecondsForService", " 3600 "), None);
        assert_eq!(out_of_range("waitSecondsForService", "-5"), None, "waits nothing, as in Java");
        assert_eq!(
            out_of_range("defaultThreadPoolNums", "2000").as_deref(),
            Some("defaultThreadPoolNums=2000 (allowed 1..=1024)")
        );
        assert!(out_of_range("defaultThreadPoolNums", "0").is_some());
        assert_eq!(out_of_range("waitSecondsForService", "x"), None, "unparsable: ignored as Java does");
        assert_eq!(out_of_range("productEnvName", "1000000000"), None);
    }

    #[test]
    fn start_values_outside_are_clamped_with_a_warning() {
        let mut c = Config::default();
        c.set("waitSecondsForService", "2000000000").unwrap();
        c.set("shutdownWaitTimeSeconds", "-5").unwrap();
        c.set("defaultThreadPoolNums", "0").unwrap();
        let warnings = c.clamp_bounded();
        assert_eq!((c.wait_seconds_for_service, c.shutdown_wait_time_seconds), (3600, -5), "a negative wait as Java");
        assert_eq!(c.default_thread_pool_nums, 1);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings.iter().any(|w| w == "waitSecondsForService=2000000000 is not at most 3600; using 3600"),
            "{warnings:?}"
        );
    }
}
