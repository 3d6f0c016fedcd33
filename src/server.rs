//! Runs the HTTP server and background tasks until shutdown is requested.

use std::io;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::background;
use crate::router::{metrics_router, router};
use crate::state::AppState;

/// Serves until `shutdown` is cancelled: stops accepting, lets in-flight
/// requests finish, then stops the background tasks and waits for them.
pub async fn serve(state: AppState, listener: TcpListener, shutdown: CancellationToken) -> anyhow::Result<()> {
    let metrics = match state.config.metrics_addr {
        Some(addr) => {
            let listener = TcpListener::bind(addr).await?;
            tracing::info!(addr = %listener.local_addr()?, "metrics listening");
            Some(tokio::spawn(serve_http(
                listener,
                metrics_router(state.clone()),
                shutdown.clone(),
            )))
        }
        None => None,
    };
    let background = background::spawn_all(&state, shutdown.child_token());
    // Open event streams end when shutdown starts; graceful shutdown would
    // otherwise wait for them forever.
    let closing = state.changes.closing.clone();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        stop.cancelled().await;
        closing.cancel();
    });
    serve_http(listener, router(state), shutdown.clone()).await;
    shutdown.cancel();
    if let Some(metrics) = metrics {
        metrics.await?;
    }
    for task in background {
        let _ = task.await;
    }
    Ok(())
}

/// HTTP/1.1 on `listener` until `stop` is cancelled, then a graceful
/// shutdown: no new connection, each open one closed after its response in
/// flight, and returns when the last one has closed.
///
/// This is `axum::serve` with less per connection (bench E, "where an idle
/// connection's memory goes"): every connection shares the one router,
/// where `axum::serve` deep-copies its routes (~9 KiB per connection), and
/// hyper's HTTP/1 connection is served directly, where `axum::serve`'s
/// protocol-detecting one hands it the first bytes separately, which doubles
/// its read buffer to 16 KiB. `TCP_NODELAY`: an event is written as soon as
/// it is ready, not held back behind an unacknowledged one.
async fn serve_http(listener: TcpListener, app: Router, stop: CancellationToken) {
    let http = http1::Builder::new();
    let graceful = GracefulShutdown::new();
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(err) => {
                    pause_after_accept_error(err).await;
                    continue;
                }
            },
        };
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(error = %err, "TCP_NODELAY not set");
        }
        let connection = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!(error = %err, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// A connection that failed before it was accepted concerns that client
/// only. Anything else (out of file descriptors, say) would fail again at
/// once, so the loop waits a second, as `axum::serve` does.
async fn pause_after_accept_error(err: io::Error) {
    if matches!(
        err.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %err, "accepting a connection failed");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// Cancels the token on SIGTERM or Ctrl-C.
pub async fn shutdown_on_signal(token: CancellationToken) {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut sig) => {
                sig.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutdown requested");
    token.cancel();
}
