//! A tiny authoritative DNS responder on loopback UDP for the source-URL DNS
//! check: it answers A and AAAA from a fixed table and NXDOMAIN otherwise.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use hickory_proto::op::{Message, MessageType, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use tokio::net::UdpSocket;

pub struct DnsResponder {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl DnsResponder {
    /// `records`: fully qualified name (without the final dot) → addresses.
    pub async fn start(records: &[(&str, &[&str])]) -> Self {
        let table: HashMap<String, Vec<IpAddr>> = records
            .iter()
            .map(|(name, ips)| (format!("{name}."), ips.iter().map(|ip| ip.parse().unwrap()).collect()))
            .collect();
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = socket.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            loop {
                let Ok((len, peer)) = socket.recv_from(&mut buf).await else {
                    return;
                };
                let Ok(query) = Message::from_vec(&buf[..len]) else {
                    continue;
                };
                let mut response = Message::new();
                response.set_id(query.id());
                response.set_message_type(MessageType::Response);
                response.set_op_code(query.op_code());
                response.set_recursion_desired(query.recursion_desired());
                response.set_recursion_available(true);
                response.set_authoritative(true);
                for q in query.queries() {
                    response.add_query(q.clone());
                    let name = q.name().to_ascii().to_lowercase();
                    match table.get(&name) {
                        None => {
                            response.set_response_code(ResponseCode::NXDomain);
                        }
                        Some(ips) => {
                            for ip in ips {
                                let rdata = match (ip, q.query_type()) {
                                    (IpAddr::V4(v4), RecordType::A) => RData::A(A(*v4)),
                                    (IpAddr::V6(v6), RecordType::AAAA) => RData::AAAA(AAAA(*v6)),
                                    _ => continue,
                                };
                                response.add_answer(Record::from_rdata(Name::from_ascii(&name).unwrap(), 60, rdata));
                            }
                        }
                    }
                }
                if let Ok(bytes) = response.to_vec() {
                    let _ = socket.send_to(&bytes, peer).await;
                }
            }
        });
        Self { addr, task }
    }
}

impl Drop for DnsResponder {
    fn drop(&mut self) {
        self.task.abort();
    }
}
