//! What one span costs the process that makes it (bench T): the CPU time
//! (all threads: the batch exporter's included) of making, ending and,
//! with `OTEL_EXPORTER_OTLP_ENDPOINT` set, exporting spans shaped like a
//! request's, per span. Run once without the endpoint and once with it;
//! the difference is the export's cost, free of the load phases' noise.
//!
//!     span_cost [--spans N]

use std::time::Instant;

use page_import_platform::config::LogFormat;
use page_import_platform::telemetry;

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(usage.ru_utime) + t(usage.ru_stime)
}

fn main() {
    let mut spans: u64 = 200_000;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--spans" {
            spans = args.next().and_then(|v| v.parse().ok()).expect("--spans N");
        }
    }
    // Log lines off (RUST_LOG=off); spans are made at info whatever it says.
    std::env::set_var("RUST_LOG", "off");
    let telemetry = telemetry::init(LogFormat::Json, "span-cost");
    let request_id = "0193a0b1-7c2d-7e3f-8a4b-5c6d7e8f9a0b";
    let started = Instant::now();
    let cpu = cpu_seconds();
    for _ in 0..spans {
        let span = tracing::info_span!("request", method = "GET", path = "/page-imports/0193a0b1", request_id);
        let _entered = span.enter();
    }
    // What is still queued is exported (and paid for) here.
    telemetry.shutdown();
    let cpu = cpu_seconds() - cpu;
    println!(
        "{{\"spans\": {spans}, \"cpu_us_per_span\": {:.3}, \"wall_s\": {:.2}}}",
        cpu * 1e6 / spans as f64,
        started.elapsed().as_secs_f64()
    );
}
