//! Optional DNS check of source hosts (`SOURCE_URL_DNS_CHECK`): every address a
//! name resolves to must be public. Advisory only: the worker must enforce the
//! same rule at egress, since DNS answers can change between now and then.

use std::net::SocketAddr;
use std::time::Duration;

use hickory_resolver::config::{
    LookupIpStrategy, NameServerConfig, NameServerConfigGroup, ResolverConfig, ResolverOpts,
};
use hickory_resolver::name_server::TokioConnectionProvider;
use hickory_resolver::proto::xfer::Protocol;
use hickory_resolver::TokioResolver;

use crate::domain::ip;

pub struct DnsChecker {
    resolver: TokioResolver,
}

#[derive(Debug, PartialEq, Eq)]
pub enum DnsCheckError {
    /// The name does not resolve (NXDOMAIN, no records, or no answer in time).
    Unresolvable,
    /// One of its addresses is not public.
    NonPublic(&'static str),
}

impl DnsChecker {
    /// Uses `nameservers` when given, else the system configuration.
    pub fn new(nameservers: &[SocketAddr]) -> anyhow::Result<Self> {
        let mut opts = ResolverOpts::default();
        opts.ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
        opts.timeout = Duration::from_secs(2);
        opts.attempts = 1;
        let builder = if nameservers.is_empty() {
            TokioResolver::builder_tokio()?
        } else {
            let mut group = NameServerConfigGroup::new();
            for addr in nameservers {
                group.push(NameServerConfig::new(*addr, Protocol::Udp));
                group.push(NameServerConfig::new(*addr, Protocol::Tcp));
            }
            let config = ResolverConfig::from_parts(None, vec![], group);
            TokioResolver::builder_with_config(config, TokioConnectionProvider::default())
        };
        Ok(Self {
            resolver: builder.with_options(opts).build(),
        })
    }

    pub async fn check(&self, host: &str) -> Result<(), DnsCheckError> {
        // A fully qualified name: no search-domain expansion.
        let lookup = self
            .resolver
            .lookup_ip(format!("{host}."))
            .await
            .map_err(|_| DnsCheckError::Unresolvable)?;
        let mut any = false;
        for addr in lookup.iter() {
            any = true;
            ip::check_public(addr).map_err(|e| DnsCheckError::NonPublic(e.0))?;
        }
        if any {
            Ok(())
        } else {
            Err(DnsCheckError::Unresolvable)
        }
    }
}
