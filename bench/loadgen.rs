//! Load generator for `bench/run`: closed-loop throughput, open-loop latency
//! (measured from each request's scheduled start, so queueing is counted —
//! no coordinated omission), a plain SendMessageBatch client as the relay's
//! baseline, and commit-to-queue lag. Prints one JSON object per run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use serde_json::json;

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    command: Mode,
}

#[derive(clap::Args, Clone)]
struct Target {
    /// URL; `{n}` is replaced by a zero-padded number in 1..=ids
    #[arg(long)]
    url: String,
    #[arg(long, default_value = "GET")]
    method: String,
    /// Request body (sent as application/json)
    #[arg(long)]
    body: Option<String>,
    #[arg(long)]
    token: Option<String>,
    /// Range of `{n}` in the URL
    #[arg(long, default_value_t = 1)]
    ids: u64,
}

#[derive(Subcommand)]
enum Mode {
    /// As many requests as `connections` workers can do in `seconds`.
    Closed {
        #[command(flatten)]
        target: Target,
        #[arg(long, default_value_t = 16)]
        connections: usize,
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
    },
    /// A fixed arrival rate over a fixed set of connections (like wrk2 -R);
    /// latency from each request's scheduled start.
    Open {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        rate: f64,
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        #[arg(long, default_value_t = 32)]
        connections: usize,
        /// Also write "scheduled_ms latency_ms" per request to this file
        #[arg(long)]
        trace: Option<String>,
    },
    /// SendMessageBatch of `messages` bodies, ten per call, one call at a time.
    SqsBaseline {
        #[arg(long)]
        queue_url: String,
        #[arg(long)]
        messages: usize,
        #[arg(long)]
        body: String,
    },
    /// POSTs at `rate` while receiving from the queue; lag = received − answered.
    Lag {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        queue_url: String,
        #[arg(long)]
        rate: f64,
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
    },
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn summary(mut latencies_ms: Vec<f64>) -> serde_json::Value {
    latencies_ms.sort_by(|a, b| a.total_cmp(b));
    json!({
        "p50_ms": percentile(&latencies_ms, 50.0),
        "p90_ms": percentile(&latencies_ms, 90.0),
        "p99_ms": percentile(&latencies_ms, 99.0),
        "max_ms": latencies_ms.last().copied().unwrap_or(f64::NAN),
    })
}

fn request(client: &reqwest::Client, target: &Target, n: u64) -> reqwest::RequestBuilder {
    let url = target.url.replace("{n}", &format!("{n:08}"));
    let method = reqwest::Method::from_bytes(target.method.as_bytes()).expect("HTTP method");
    let mut builder = client.request(method, url);
    if let Some(token) = &target.token {
        builder = builder.bearer_auth(token);
    }
    if let Some(body) = &target.body {
        builder = builder.header("content-type", "application/json").body(body.clone());
    }
    builder
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().pool_max_idle_per_host(1024).build().unwrap()
}

/// One keep-alive HTTP/1.1 connection with pre-built request bytes: the
/// throughput modes measure the service, so the client's own cost per request
/// is kept to a write, a read and a header parse (reqwest cost about as much
/// CPU per request as the service's database did on these 2 cores).
struct Conn {
    addr: String,
    stream: Option<tokio::net::TcpStream>,
    buf: Vec<u8>,
    request: Vec<u8>,
}

impl Conn {
    fn new(target: &Target) -> Self {
        let url = url::Url::parse(&target.url).expect("URL");
        let addr = format!("{}:{}", url.host_str().unwrap(), url.port_or_known_default().unwrap());
        Self {
            addr,
            stream: None,
            buf: Vec::with_capacity(16 * 1024),
            request: Vec::with_capacity(2048),
        }
    }

    fn build(&mut self, target: &Target, n: u64) {
        use std::io::Write;
        let after_scheme = target.url.find("://").map_or(0, |i| i + 3);
        let path = target.url[after_scheme..]
            .find('/')
            .map_or("/", |i| &target.url[after_scheme + i..]);
        let path = path.replace("{n}", &format!("{n:08}"));
        let r = &mut self.request;
        r.clear();
        write!(r, "{} {path} HTTP/1.1\r\nhost: {}\r\n", target.method, self.addr).unwrap();
        if let Some(token) = &target.token {
            write!(r, "authorization: Bearer {token}\r\n").unwrap();
        }
        if let Some(body) = &target.body {
            write!(
                r,
                "content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
        } else {
            r.extend_from_slice(b"\r\n");
        }
    }

    /// Sends the built request and reads the whole response; the status code.
    async fn send(&mut self) -> std::io::Result<u16> {
        let result = self.exchange().await;
        if result.is_err() {
            self.stream = None;
        }
        result
    }

    async fn exchange(&mut self) -> std::io::Result<u16> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        if self.stream.is_none() {
            let s = tokio::net::TcpStream::connect(&self.addr).await?;
            s.set_nodelay(true)?;
            self.stream = Some(s);
            self.buf.clear();
        }
        let stream = self.stream.as_mut().unwrap();
        stream.write_all(&self.request).await?;
        let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_owned());
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut response = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(head) = response.parse(&self.buf).map_err(|e| bad(&e.to_string()))? {
                let status = response.code.unwrap_or(0);
                let mut length = None;
                let mut close = false;
                for h in response.headers.iter() {
                    if h.name.eq_ignore_ascii_case("content-length") {
                        length = std::str::from_utf8(h.value)
                            .ok()
                            .and_then(|v| v.trim().parse::<usize>().ok());
                    } else if h.name.eq_ignore_ascii_case("connection") {
                        close = h.value.eq_ignore_ascii_case(b"close");
                    }
                }
                let total = head + length.ok_or_else(|| bad("response without content-length"))?;
                while self.buf.len() < total {
                    if stream.read_buf(&mut self.buf).await? == 0 {
                        return Err(bad("connection closed mid-body"));
                    }
                }
                self.buf.drain(..total);
                if close {
                    self.stream = None;
                }
                return Ok(status);
            }
            if stream.read_buf(&mut self.buf).await? == 0 {
                return Err(bad("connection closed"));
            }
        }
    }
}

fn success(status: u16) -> bool {
    (200..400).contains(&status)
}

async fn closed(target: Target, connections: usize, seconds: f64) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let counter = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..connections {
        let (target, counter) = (target.clone(), counter.clone());
        workers.push(tokio::spawn(async move {
            let (mut ok, mut failed, mut latencies) = (0u64, 0u64, Vec::new());
            let mut conn = Conn::new(&target);
            while Instant::now() < deadline {
                let n = counter.fetch_add(1, Ordering::Relaxed) % target.ids + 1;
                conn.build(&target, n);
                let t = Instant::now();
                match conn.send().await {
                    Ok(status) if success(status) => {
                        ok += 1;
                        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                    }
                    _ => failed += 1,
                }
            }
            (ok, failed, latencies)
        }));
    }
    let (mut ok, mut failed, mut latencies) = (0, 0, Vec::new());
    for w in workers {
        let (o, f, l) = w.await.unwrap();
        ok += o;
        failed += f;
        latencies.extend(l);
    }
    let elapsed = started.elapsed().as_secs_f64();
    let mut out = summary(latencies);
    out["ok"] = json!(ok);
    out["failed"] = json!(failed);
    out["rps"] = json!(ok as f64 / elapsed);
    out
}

async fn open(target: Target, rate: f64, seconds: f64, connections: usize, trace: Option<String>) -> serde_json::Value {
    let total = (rate * seconds) as u64;
    let interval = Duration::from_secs_f64(1.0 / rate);
    let start = Instant::now() + Duration::from_millis(100);
    let next = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    for _ in 0..connections {
        let (target, next) = (target.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let (mut ok, mut latencies) = (0u64, Vec::new());
            let mut conn = Conn::new(&target);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    return (ok, latencies);
                }
                conn.build(&target, i % target.ids + 1);
                // A late worker sends at once (a timer, even one already
                // due, would wait for the next 1 ms tick); the wait it
                // caused is counted.
                let scheduled = start + interval * i as u32;
                if scheduled > Instant::now() {
                    tokio::time::sleep_until(scheduled.into()).await;
                }
                if let Ok(status) = conn.send().await {
                    ok += u64::from(success(status));
                }
                latencies.push((i, scheduled.elapsed().as_secs_f64() * 1000.0));
            }
        }));
    }
    let (mut ok, mut timed) = (0u64, Vec::new());
    for w in workers {
        let (o, l) = w.await.unwrap();
        ok += o;
        timed.extend(l);
    }
    if let Some(path) = trace {
        timed.sort_by_key(|(i, _)| *i);
        let lines: String = timed
            .iter()
            .map(|(i, ms)| format!("{:.3} {ms:.3}\n", interval.as_secs_f64() * 1000.0 * *i as f64))
            .collect();
        std::fs::write(path, lines).expect("trace file");
    }
    let latencies = timed.into_iter().map(|(_, ms)| ms).collect();
    let mut out = summary(latencies);
    out["ok"] = json!(ok);
    out["sent"] = json!(total);
    out["rate"] = json!(rate);
    out
}

async fn sqs_client() -> aws_sdk_sqs::Client {
    page_import::aws::clients(true, None).await.sqs
}

async fn sqs_baseline(queue_url: String, messages: usize, body: String) -> serde_json::Value {
    use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
    let sqs = sqs_client().await;
    let started = Instant::now();
    let mut sent = 0;
    for chunk in (0..messages).collect::<Vec<_>>().chunks(10) {
        let entries = chunk
            .iter()
            .map(|i| {
                SendMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .message_body(&body)
                    .build()
                    .unwrap()
            })
            .collect();
        let out = sqs
            .send_message_batch()
            .queue_url(&queue_url)
            .set_entries(Some(entries))
            .send()
            .await
            .unwrap();
        sent += out.successful().len();
    }
    let elapsed = started.elapsed().as_secs_f64();
    json!({"sent": sent, "seconds": elapsed, "msgs_per_s": sent as f64 / elapsed})
}

const LAG_RECEIVERS: usize = 4;

async fn lag(target: Target, queue_url: String, rate: f64, seconds: f64) -> serde_json::Value {
    let answered = Arc::new(std::sync::Mutex::new(
        std::collections::HashMap::<String, Instant>::new(),
    ));
    let received = Arc::new(std::sync::Mutex::new(
        std::collections::HashMap::<String, Instant>::new(),
    ));
    let total = (rate * seconds) as usize;
    // Several receivers: moto's ReceiveMessage walks every message of the
    // queue (in-flight ones included) and deep-copies each one it returns, so
    // one receiver (receive, then delete, in turn) topped out near 150/s.
    // Once it fell behind the queue grew, every moto call got slower, and the
    // probe measured itself.
    let sqs = sqs_client().await;
    let consumers: Vec<_> = (0..LAG_RECEIVERS)
        .map(|_| {
            let received = received.clone();
            let sqs = sqs.clone();
            let queue_url = queue_url.clone();
            tokio::spawn(async move {
                let deadline = Instant::now() + Duration::from_secs_f64(seconds + 15.0);
                while Instant::now() < deadline && received.lock().unwrap().len() < total {
                    let Ok(out) = sqs
                        .receive_message()
                        .queue_url(&queue_url)
                        .max_number_of_messages(10)
                        .wait_time_seconds(1)
                        .send()
                        .await
                    else {
                        continue;
                    };
                    let now = Instant::now();
                    let mut entries = Vec::new();
                    for m in out.messages() {
                        if let Ok(v) = serde_json::from_str::<serde_json::Value>(m.body().unwrap_or("")) {
                            if let Some(id) = v["pageImportId"].as_str() {
                                received.lock().unwrap().entry(id.to_owned()).or_insert(now);
                            }
                        }
                        entries.push(
                            aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                                .id(entries.len().to_string())
                                .receipt_handle(m.receipt_handle().unwrap())
                                .build()
                                .unwrap(),
                        );
                    }
                    if !entries.is_empty() {
                        let _ = sqs
                            .delete_message_batch()
                            .queue_url(&queue_url)
                            .set_entries(Some(entries))
                            .send()
                            .await;
                    }
                }
            })
        })
        .collect();
    let client = client();
    let interval = Duration::from_secs_f64(1.0 / rate);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..total {
        tokio::time::sleep_until((start + interval * i as u32).into()).await;
        let (client, target, answered) = (client.clone(), target.clone(), answered.clone());
        tasks.push(tokio::spawn(async move {
            if let Ok(r) = request(&client, &target, 1).send().await {
                if let Ok(v) = r.json::<serde_json::Value>().await {
                    if let Some(id) = v["id"].as_str() {
                        answered.lock().unwrap().insert(id.to_owned(), Instant::now());
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    for consumer in consumers {
        consumer.await.unwrap();
    }
    let answered = answered.lock().unwrap();
    let received = received.lock().unwrap();
    let lags: Vec<f64> = answered
        .iter()
        .filter_map(|(id, t)| {
            received
                .get(id)
                .map(|r| r.saturating_duration_since(*t).as_secs_f64() * 1000.0)
        })
        .collect();
    let mut out = summary(lags);
    out["answered"] = json!(answered.len());
    out["received"] = json!(received.len());
    out
}

#[tokio::main]
async fn main() {
    let out = match Cli::parse().command {
        Mode::Closed {
            target,
            connections,
            seconds,
        } => closed(target, connections, seconds).await,
        Mode::Open {
            target,
            rate,
            seconds,
            connections,
            trace,
        } => open(target, rate, seconds, connections, trace).await,
        Mode::SqsBaseline {
            queue_url,
            messages,
            body,
        } => sqs_baseline(queue_url, messages, body).await,
        Mode::Lag {
            target,
            queue_url,
            rate,
            seconds,
        } => lag(target, queue_url, rate, seconds).await,
    };
    println!("{out}");
}
