//! A TCP proxy on loopback that can be switched off: while down it closes
//! every new connection at once and cuts the open ones, so the SDK sees a
//! real network failure.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct FaultyProxy {
    pub addr: SocketAddr,
    up: Arc<watch::Sender<bool>>,
    connections: Arc<AtomicUsize>,
    delay_ms: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl FaultyProxy {
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (up, _) = watch::channel(true);
        let up = Arc::new(up);
        let state = up.clone();
        let connections = Arc::new(AtomicUsize::new(0));
        let accepted = connections.clone();
        let delay_ms = Arc::new(AtomicU64::new(0));
        let delay = delay_ms.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                accepted.fetch_add(1, Ordering::SeqCst);
                if !*state.borrow() {
                    drop(inbound);
                    continue;
                }
                let mut down = state.subscribe();
                let stall = std::time::Duration::from_millis(delay.load(Ordering::SeqCst));
                tokio::spawn(async move {
                    tokio::time::sleep(stall).await;
                    let Ok(mut outbound) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = down.wait_for(|up| !*up) => {}
                    }
                });
            }
        });
        Self {
            addr,
            up,
            connections,
            delay_ms,
            task,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Connections accepted so far, up or down.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// New connections wait this long before anything is forwarded: a slow endpoint.
    pub fn set_delay(&self, delay: std::time::Duration) {
        self.delay_ms.store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    pub fn set_up(&self, up: bool) {
        self.up.send_replace(up);
    }
}

impl Drop for FaultyProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
