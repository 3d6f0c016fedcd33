use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use page_import::config::{Config, EraseConfig, LogFormat, MigrateConfig};
use page_import::service::erasure;
use page_import::state::AppState;
use page_import::{auth, server, telemetry, MIGRATOR};
use secrecy::ExposeSecret;

/// glibc's malloc and free were 17 % of the service's CPU under read load
/// (`perf`, 256 connections); mimalloc is the allocator (bench/results/P-create-and-read.md, P3; docs/decisions/0006-mimalloc-without-thp.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "page-import", version, about = "Page Import service")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP API and its background tasks (the default).
    Serve,
    /// Apply database migrations and exit.
    Migrate,
    /// Erase the artifacts of imports that have no row and no pending
    /// erasure: a bucket written before the deletion ledger (SPEC §13).
    EraseOrphans {
        /// Print one line per orphaned prefix and delete nothing.
        #[arg(long)]
        dry_run: bool,
        /// Spare a prefix whose newest object is younger than this.
        #[arg(long, default_value_t = 86_400)]
        older_than_secs: u64,
    },
    /// Print a JWT signed with the local development key (dev/dev-jwt-private.pem).
    DevToken {
        #[arg(long, default_value = "dev-user")]
        sub: String,
        #[arg(long, env = "AUTH_ISSUER", default_value = "http://127.0.0.1/dev-issuer")]
        issuer: String,
        #[arg(long, env = "AUTH_AUDIENCE", default_value = "page-import-dev")]
        audience: String,
        #[arg(long, default_value = "dev/dev-jwt-private.pem")]
        key: PathBuf,
        #[arg(long, default_value_t = 3600)]
        ttl_secs: u64,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match &cli.command {
        Some(Command::DevToken {
            sub,
            issuer,
            audience,
            key,
            ttl_secs,
        }) => return dev_token(sub, issuer, audience, key, Duration::from_secs(*ttl_secs)),
        // Migrating needs the database and nothing else; erasing orphans, the
        // database and the bucket.
        Some(Command::Migrate) => {
            return one_off("migration", |config: MigrateConfig| async move {
                migrate(config.database_url.expose_secret()).await
            })
            .await;
        }
        Some(Command::EraseOrphans {
            dry_run,
            older_than_secs,
        }) => {
            let (dry_run, older_than) = (*dry_run, Duration::from_secs(*older_than_secs));
            return one_off("erase-orphans", |config: EraseConfig| {
                erase_orphans(config, dry_run, older_than)
            })
            .await;
        }
        _ => {}
    }

    let config = match Config::from_env() {
        Ok(config) => config,
        Err(err) => {
            eprintln!("{err}");
            return ExitCode::from(2);
        }
    };
    let telemetry = telemetry::init(config.shared.log_format, telemetry::SERVICE_NAME);
    let code = match serve(config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!(error = format!("{err:#}"), "exiting");
            ExitCode::FAILURE
        }
    };
    // The last spans, with a bound: a collector that is down does not hold
    // up the exit.
    let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
    code
}

/// Prints a development token signed with the key at `key`.
fn dev_token(sub: &str, issuer: &str, audience: &str, key: &std::path::Path, ttl: Duration) -> ExitCode {
    let token = std::fs::read(key)
        .map_err(anyhow::Error::from)
        .and_then(|pem| auth::mint_token(&pem, "page-import-dev", sub, issuer, audience, ttl));
    match token {
        Ok(token) => {
            println!("{token}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("dev-token: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a one-off command with the configuration `C` it needs: exit 2 with
/// one line naming the variable when it is missing or malformed, 1 when the
/// command fails (logged as JSON), 0 when it succeeds.
async fn one_off<C, F, Fut>(what: &str, run: F) -> ExitCode
where
    C: clap::Parser,
    F: FnOnce(C) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let _telemetry = telemetry::init(LogFormat::Json, telemetry::SERVICE_NAME);
    let config = match page_import_platform::config::from_env::<C>() {
        Ok(config) => config,
        Err(err) => {
            eprintln!("{err}");
            return ExitCode::from(2);
        }
    };
    match run(config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!(error = format!("{err:#}"), "{what} failed");
            ExitCode::FAILURE
        }
    }
}

async fn migrate(database_url: &str) -> anyhow::Result<()> {
    let pool = sqlx::PgPool::connect(database_url).await?;
    MIGRATOR.run(&pool).await?;
    tracing::info!("migrations applied");
    Ok(())
}

async fn erase_orphans(config: EraseConfig, dry_run: bool, older_than: Duration) -> anyhow::Result<()> {
    let pool = sqlx::PgPool::connect(config.database_url.expose_secret()).await?;
    let aws = page_import::aws::clients(config.s3_force_path_style, None).await;
    let mut out = std::io::stdout().lock();
    erasure::erase_orphans(&pool, &aws.s3, &config.artifact_bucket, older_than, dry_run, &mut out).await?;
    Ok(())
}

async fn serve(config: Config) -> anyhow::Result<()> {
    if config.allow_private_source_urls {
        tracing::warn!(
            "ALLOW_PRIVATE_SOURCE_URLS is on: loopback and private source URLs are accepted. Development only!"
        );
    }
    let listener = tokio::net::TcpListener::bind(config.listen_addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "listening");
    let state = AppState::new(config).await?;
    state.auth.warm_up().await;
    let shutdown = CancellationToken::new();
    tokio::spawn(server::shutdown_on_signal(shutdown.clone()));
    server::serve(state, listener, shutdown).await?;
    tracing::info!("stopped cleanly");
    Ok(())
}
