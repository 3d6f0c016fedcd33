//! A TCP proxy on loopback that can be switched off: while down it closes
//! every new connection at once and cuts the open ones, so the SDK sees a
//! real network failure.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct FaultyProxy {
    pub addr: SocketAddr,
    up: Arc<watch::Sender<bool>>,
    connections: Arc<AtomicUsize>,
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
                tokio::spawn(async move {
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

    pub fn set_up(&self, up: bool) {
        self.up.send_replace(up);
    }
}

impl Drop for FaultyProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
