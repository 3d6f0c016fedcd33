//! Optional `/healthz` and `/metrics` on `WORKER_HEALTH_ADDR`.

use std::net::SocketAddr;

use axum::routing::get;
use axum::Router;
use metrics_exporter_prometheus::PrometheusHandle;
use tokio_util::sync::CancellationToken;

pub async fn serve(addr: SocketAddr, metrics: PrometheusHandle, shutdown: CancellationToken) -> std::io::Result<()> {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(move || async move { metrics.render() }));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, "worker health and metrics listening");
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}
