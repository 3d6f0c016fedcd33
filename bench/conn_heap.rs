//! The service (`page-import serve`, the same `server::serve` the binary
//! runs) under a counting allocator, for benchmark E's question: where does
//! an idle connection's memory go?
//!
//! Every allocation still goes to mimalloc, as in the binary; the wrapper
//! only counts the live bytes and the live blocks of each size. Each line
//! read on stdin is answered on stdout with one JSON object:
//! `{"live_bytes": …, "live_blocks": …, "blocks": {"<size>": <count>, …}}`,
//! so `bench/events.py` can take the difference before and after opening
//! 1 000 connections and attribute it by block size. Sizes above 64 KiB are
//! counted together under `65536`.
//!
//! `CONN_HEAP_TRACE=<size>` prints to stderr a backtrace of the first
//! allocations of exactly that many bytes made after the first report: who
//! allocates them.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::io::BufRead;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};

use page_import::config::Config;
use page_import::state::AppState;
use page_import::{server, telemetry};
use tokio_util::sync::CancellationToken;

const LARGEST: usize = 65_536;

struct Counting;

static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);
static BLOCKS: [AtomicI64; LARGEST + 1] = [const { AtomicI64::new(0) }; LARGEST + 1];

static TRACE_SIZE: AtomicUsize = AtomicUsize::new(0);
static TRACE_ARMED: AtomicBool = AtomicBool::new(false);
static TRACES_LEFT: AtomicI64 = AtomicI64::new(3);

thread_local! {
    static TRACING: Cell<bool> = const { Cell::new(false) };
}

fn count(size: usize, delta: i64) {
    LIVE_BYTES.fetch_add(delta * size as i64, Ordering::Relaxed);
    BLOCKS[size.min(LARGEST)].fetch_add(delta, Ordering::Relaxed);
    if delta > 0 && size == TRACE_SIZE.load(Ordering::Relaxed) && TRACE_ARMED.load(Ordering::Relaxed) {
        trace(size);
    }
}

fn trace(size: usize) {
    // The backtrace allocates: not again from inside it.
    if TRACING.with(|t| t.replace(true)) {
        return;
    }
    if TRACES_LEFT.fetch_sub(1, Ordering::Relaxed) > 0 {
        eprintln!(
            "allocation of {size} bytes:\n{}",
            std::backtrace::Backtrace::force_capture()
        );
    }
    TRACING.with(|t| t.set(false));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size(), 1);
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size(), 1);
        unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(layout.size(), -1);
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(layout.size(), -1);
        count(new_size, 1);
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn report() -> String {
    let mut blocks = serde_json::Map::new();
    let mut live_blocks = 0;
    for (size, n) in BLOCKS.iter().enumerate() {
        let n = n.load(Ordering::Relaxed);
        if n != 0 {
            live_blocks += n;
            blocks.insert(size.to_string(), n.into());
        }
    }
    serde_json::json!({
        "live_bytes": LIVE_BYTES.load(Ordering::Relaxed),
        "live_blocks": live_blocks,
        "blocks": blocks,
    })
    .to_string()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if let Some(size) = std::env::var("CONN_HEAP_TRACE").ok().and_then(|s| s.parse().ok()) {
        TRACE_SIZE.store(size, Ordering::Relaxed);
    }
    let config = Config::from_env().map_err(|err| anyhow::anyhow!("{err}"))?;
    let _telemetry = telemetry::init(config.shared.log_format, telemetry::SERVICE_NAME);
    let listener = tokio::net::TcpListener::bind(config.listen_addr).await?;
    let state = AppState::new(config).await?;
    state.auth.warm_up().await;
    std::thread::spawn(|| {
        for line in std::io::stdin().lock().lines() {
            if line.is_err() {
                break;
            }
            println!("{}", report());
            TRACE_ARMED.store(true, Ordering::Relaxed);
        }
    });
    let shutdown = CancellationToken::new();
    tokio::spawn(server::shutdown_on_signal(shutdown.clone()));
    server::serve(state, listener, shutdown).await
}
