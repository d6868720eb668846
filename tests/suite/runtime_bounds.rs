//! The numbers UPDATE_NAMESRV_CONFIG (318) may set, bounded (docs/security.md, "Runtime numbers are bounded"):
//! Java takes any value, so an unsigned 318 could make every route query wait for years.

use crate::support;

use std::fs;

use namesrv::config::Config;
use namesrv::protocol::{RemotingCommand, RequestCode, ResponseCode};
use support::client::Client;
use support::inproc::InProc;
use support::registration::new_cmd;

fn update_config(c: &mut Client, props: &str) -> RemotingCommand {
    c.request(new_cmd(RequestCode::UPDATE_NAMESRV_CONFIG).with_body(props.as_bytes().to_vec()))
}

/// A runtime number outside its range (`needWaitForService` with a wait of ten years, say) is refused whole with a
/// remark naming it: nothing applied, the config file untouched. A `-c` file's value outside is clamped at start.
#[test]
fn config_update_refuses_runtime_numbers_outside_their_range() {
    let fx = InProc::start(|_| {});
    let mut c = fx.client();
    assert_eq!(update_config(&mut c, "orderMessageEnable=true\n").code, ResponseCode::SUCCESS);
    let file = fx.dir.path().join("namesrv.properties");
    let written = fs::read_to_string(&file).unwrap();
    let before = fx.snapshot().config.clone();
    for body in [
        "needWaitForService=true\nwaitSecondsForService=315360000\n",
        "enableShutdownGracefully=true\nshutdownWaitTimeSeconds=86400\n",
        "defaultThreadPoolNums=0\n",
        "clientRequestThreadPoolQueueCapacity=2147483647\n",
    ] {
        let r = update_config(&mut c, body);
        assert_eq!(r.code, ResponseCode::NO_PERMISSION, "{body}: {r:?}");
        let remark = r.remark.unwrap_or_default();
        assert!(remark.starts_with("Value out of range, nothing applied: ") && remark.contains("allowed"), "{remark}");
    }
    assert_eq!(fx.snapshot().config, before, "nothing applied");
    assert!(!fx.snapshot().config.need_wait_for_service);
    assert_eq!(fs::read_to_string(&file).unwrap(), written, "the file untouched");
    let r = update_config(&mut c, "needWaitForService=false\nwaitSecondsForService=3600\n");
    assert_eq!(r.code, ResponseCode::SUCCESS, "{r:?}");
    assert_eq!(fx.snapshot().config.wait_seconds_for_service, 3600);

    let start = fx.dir.path().join("start.properties");
    fs::write(&start, "needWaitForService=true\nwaitSecondsForService=315360000\n").unwrap();
    let (config, warnings) = Config::from_file(&start).unwrap();
    assert_eq!(config.wait_seconds_for_service, 3600);
    assert!(warnings.iter().any(|w| w.contains("waitSecondsForService=315360000")), "{warnings:?}");
}
