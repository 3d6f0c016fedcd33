//! AWS SDK clients over one rustls (ring) HTTP client, with operation timeouts
//! so a dead endpoint costs seconds, not minutes.

use std::time::Duration;

use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region};
use aws_smithy_http_client::{tls, Builder};

pub struct AwsClients {
    pub sqs: aws_sdk_sqs::Client,
    pub s3: aws_sdk_s3::Client,
}

/// `endpoint` overrides `AWS_ENDPOINT_URL` (tests point it at a fault-injecting proxy).
pub async fn clients(force_path_style: bool, endpoint: Option<&str>) -> AwsClients {
    let http_client = Builder::new()
        .tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring))
        .build_https();
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(2))
        .operation_attempt_timeout(Duration::from_secs(5))
        .operation_timeout(Duration::from_secs(15))
        .build();
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(http_client)
        .timeout_config(timeouts);
    if let Some(endpoint) = endpoint {
        loader = loader.endpoint_url(endpoint);
    }
    let shared = loader.load().await;
    let shared = if shared.region().is_none() {
        shared.into_builder().region(Region::new("us-east-1")).build()
    } else {
        shared
    };
    let s3_config = aws_sdk_s3::config::Builder::from(&shared)
        .force_path_style(force_path_style)
        .build();
    AwsClients {
        sqs: aws_sdk_sqs::Client::new(&shared),
        s3: aws_sdk_s3::Client::from_conf(s3_config),
    }
}
