//! Runs the HTTP server and background tasks until shutdown is requested.

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
            let stop = shutdown.clone();
            let app = metrics_router(state.clone());
            Some(tokio::spawn(async move {
                axum::serve(listener, app)
                    .with_graceful_shutdown(async move { stop.cancelled().await })
                    .await
            }))
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
    let app = router(state);
    let stop = shutdown.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await?;
    shutdown.cancel();
    if let Some(metrics) = metrics {
        metrics.await??;
    }
    for task in background {
        let _ = task.await;
    }
    Ok(())
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
