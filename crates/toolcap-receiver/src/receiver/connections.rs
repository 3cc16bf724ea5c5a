//! Every connection the receiver holds, and the limits that keep slow or idle clients from
//! starving the others: a cap on connections with fair admission, a deadline for request
//! headers, an idle keep-alive timeout, and a way for a handler to drop its own connection (the
//! feed does this to a reader that stopped reading).
//!
//! Admission: a connection that is idle, sending its request head, or sending a request body
//! can be closed to make room; one whose request is being handled or answered never is. When a
//! peer address already holds its share of such connections, its own least productive one
//! makes room; when the listener is full, the least productive one of the peer holding the
//! most does. "Least productive" is the furthest behind the minimum body rate: bytes received
//! since its request (or its idleness) began, less what that rate would have delivered. A
//! flood of slow bodies therefore evicts itself, and an exporter that sends its request at
//! once is the last to go.
//!
//! Deadlines are enforced by one reaper task per listener that looks at every connection once
//! a second, rather than a timer per connection; the IO wrapper notices the verdict on its
//! next poll (it holds the wakers, so a connection parked on a read or write is woken).

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::Limits;

/// How often deadlines are checked; a deadline is therefore enforced within this much.
const REAP_EVERY: Duration = Duration::from_secs(1);

/// Which protocol a listener speaks decides what "idle" means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// HTTP/1.1: idle between requests, reading headers, or busy with a request.
    Http1,
    /// HTTP/2 (gRPC): idle when no byte has arrived for a while.
    Http2,
}

/// A connection's phase; `at` is the connection's byte count when the request's first byte
/// came, so its progress is `received - at`.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for the first byte of a request (a new connection or a kept-alive one).
    Idle { since: Instant },
    /// Some bytes of a request head have arrived, not yet all of it.
    Head { since: Instant, at: u64 },
    /// The handler is reading the request's body.
    Body { since: Instant, at: u64 },
    /// A request is being handled or its response is being sent.
    Busy { since: Instant, at: u64 },
}

/// Whom the per-peer share is counted for: an IPv4 address, or an IPv6 /64 (one host's
/// usual allocation, where any address is its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct PeerKey(u128);

impl PeerKey {
    fn of(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V4(v4) => PeerKey(u128::from(u32::from(v4))),
            IpAddr::V6(v6) => PeerKey((u128::from(v6) >> 64) | (1 << 64)),
        }
    }
}

/// One accepted connection, shared by its IO wrapper, the registry and request handlers.
pub(crate) struct Connection {
    id: u64,
    pub peer: SocketAddr,
    key: PeerKey,
    protocol: Protocol,
    phase: Mutex<Phase>,
    /// Bytes read from the client so far.
    received: AtomicU64,
    killed: AtomicBool,
    reason: Mutex<String>,
    read_waker: AtomicWaker,
    write_waker: AtomicWaker,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Connection {
    /// Closes the connection at its next read or write (waking it if it is parked).
    pub fn kill(&self, reason: String) {
        *lock(&self.reason) = reason;
        self.killed.store(true, Ordering::Release);
        self.read_waker.wake();
        self.write_waker.wake();
    }

    fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    fn on_bytes_read(&self, count: usize) {
        let before = self.received.fetch_add(count as u64, Ordering::Relaxed);
        let mut phase = lock(&self.phase);
        match (self.protocol, *phase) {
            (Protocol::Http1, Phase::Idle { .. }) => {
                *phase = Phase::Head {
                    since: Instant::now(),
                    at: before,
                }
            }
            (Protocol::Http2, _) => {
                *phase = Phase::Idle {
                    since: Instant::now(),
                }
            }
            _ => {}
        }
    }

    /// Marks the connection busy until the returned guard is dropped (with the response).
    pub fn begin_request(self: &Arc<Self>) -> BusyGuard {
        let mut phase = lock(&self.phase);
        *phase = match *phase {
            Phase::Head { since, at } | Phase::Body { since, at } | Phase::Busy { since, at } => {
                Phase::Busy { since, at }
            }
            Phase::Idle { .. } => Phase::Busy {
                since: Instant::now(),
                at: self.received.load(Ordering::Relaxed),
            },
        };
        BusyGuard(self.clone())
    }

    /// The handler starts reading the request body: until [`Connection::body_read`], the
    /// connection may be closed to make room if it is the least productive.
    pub fn reading_body(&self) {
        let mut phase = lock(&self.phase);
        if let Phase::Busy { since, at } = *phase {
            *phase = Phase::Body { since, at };
        }
    }

    /// The body has arrived whole: the request is handled from here on.
    pub fn body_read(&self) {
        let mut phase = lock(&self.phase);
        if let Phase::Body { since, at } = *phase {
            *phase = Phase::Busy { since, at };
        }
    }

    /// Why the connection should be closed now, if it should.
    fn overdue(&self, now: Instant, limits: &Limits) -> Option<String> {
        match *lock(&self.phase) {
            Phase::Idle { since } if now.duration_since(since) >= limits.idle_timeout => {
                Some(format!(
                    "idle for {} s (--idle-timeout)",
                    limits.idle_timeout.as_secs()
                ))
            }
            Phase::Head { since, .. } if now.duration_since(since) >= limits.header_timeout => {
                Some(format!(
                    "request headers not complete after {} s (--header-timeout)",
                    limits.header_timeout.as_secs()
                ))
            }
            _ => None,
        }
    }

    /// How far ahead of `bytes_per_sec` the connection's current request (or idleness) is, in
    /// bytes: lower is less productive. `None` while a request is handled or answered.
    fn surplus(&self, now: Instant, bytes_per_sec: f64) -> Option<f64> {
        let (since, at) = match *lock(&self.phase) {
            Phase::Idle { since } => (since, None),
            Phase::Head { since, at } | Phase::Body { since, at } => (since, Some(at)),
            Phase::Busy { .. } => return None,
        };
        let received = at.map_or(0, |at| {
            self.received.load(Ordering::Relaxed).saturating_sub(at)
        });
        Some(received as f64 - bytes_per_sec * now.duration_since(since).as_secs_f64())
    }
}

/// Returns the connection to idle when the request (and its response body) is done.
pub(crate) struct BusyGuard(Arc<Connection>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        *lock(&self.0.phase) = Phase::Idle {
            since: Instant::now(),
        };
    }
}

/// What a request handler can do with its own connection.
#[derive(Clone)]
pub(crate) struct ConnectionHandle(pub Arc<Connection>);

/// Counters a test or the health endpoint can read.
#[derive(Debug, Default)]
pub struct ConnectionStats {
    pub evicted: AtomicU64,
    pub timed_out: AtomicU64,
    pub refused: AtomicU64,
}

/// The open connections of a listener, and how many each peer holds.
#[derive(Default)]
struct Open {
    by_id: HashMap<u64, Arc<Connection>>,
    per_peer: HashMap<PeerKey, usize>,
}

impl Open {
    fn insert(&mut self, conn: Arc<Connection>) {
        *self.per_peer.entry(conn.key).or_default() += 1;
        self.by_id.insert(conn.id, conn);
    }

    fn remove(&mut self, id: u64) -> Option<Arc<Connection>> {
        let conn = self.by_id.remove(&id)?;
        if let Some(count) = self.per_peer.get_mut(&conn.key) {
            *count -= 1;
            if *count == 0 {
                self.per_peer.remove(&conn.key);
            }
        }
        Some(conn)
    }

    /// The connection to close to make room for a newcomer from `key`, or `None` when nobody
    /// needs to make room. `Err` when room is needed and every connection is busy.
    fn make_room_for(&self, key: PeerKey, limits: &Limits) -> Result<Option<u64>, ()> {
        let now = Instant::now();
        let rate = limits.min_body_bytes_per_sec as f64;
        let peer_holds = self.per_peer.get(&key).copied().unwrap_or(0);
        if peer_holds >= limits.max_connections_per_peer {
            let own = self.by_id.values().filter(|conn| conn.key == key);
            let scored: Vec<(f64, u64)> = own
                .filter_map(|conn| conn.surplus(now, rate).map(|s| (s, conn.id)))
                .collect();
            if scored.len() >= limits.max_connections_per_peer {
                return Ok(least(scored.into_iter()));
            }
        }
        if self.by_id.len() < limits.max_connections {
            return Ok(None);
        }
        let scored: Vec<(PeerKey, f64, u64)> = self
            .by_id
            .values()
            .filter_map(|conn| conn.surplus(now, rate).map(|s| (conn.key, s, conn.id)))
            .collect();
        let mut evictable: HashMap<PeerKey, usize> = HashMap::new();
        for (peer, _, _) in &scored {
            *evictable.entry(*peer).or_default() += 1;
        }
        let most = evictable.values().copied().max().ok_or(())?;
        let of_most = scored
            .into_iter()
            .filter(|(peer, _, _)| evictable.get(peer) == Some(&most))
            .map(|(_, surplus, id)| (surplus, id));
        Ok(least(of_most))
    }
}

/// The id with the lowest surplus (the oldest id among equals).
fn least(scored: impl Iterator<Item = (f64, u64)>) -> Option<u64> {
    scored
        .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
        .map(|(_, id)| id)
}

/// All open connections of one listener.
pub(crate) struct Registry {
    protocol: Protocol,
    limits: Limits,
    open: Mutex<Open>,
    next_id: AtomicU64,
    pub stats: Arc<ConnectionStats>,
}

impl Registry {
    pub fn new(protocol: Protocol, limits: Limits, stats: Arc<ConnectionStats>) -> Arc<Self> {
        Arc::new(Self {
            protocol,
            limits,
            open: Mutex::new(Open::default()),
            next_id: AtomicU64::new(1),
            stats,
        })
    }

    /// Takes a newly accepted stream in, making room (see the module's note) when its peer's
    /// share or the listener's cap is reached. `Err` when every connection is busy with a
    /// request: the caller refuses the new one (a retryable answer), nobody whose request is
    /// being handled is cut off.
    pub fn admit(
        self: &Arc<Self>,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> Result<TrackedIo, TcpStream> {
        let key = PeerKey::of(peer.ip());
        let mut open = lock(&self.open);
        match open.make_room_for(key, &self.limits) {
            Ok(None) => {}
            Ok(Some(id)) => {
                if let Some(conn) = open.remove(id) {
                    self.stats.evicted.fetch_add(1, Ordering::Relaxed);
                    conn.kill("closed to make room: connection limit reached".into());
                }
            }
            Err(()) => {
                self.stats.refused.fetch_add(1, Ordering::Relaxed);
                return Err(stream);
            }
        }
        let conn = Arc::new(Connection {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            peer,
            key,
            protocol: self.protocol,
            phase: Mutex::new(Phase::Idle {
                since: Instant::now(),
            }),
            received: AtomicU64::new(0),
            killed: AtomicBool::new(false),
            reason: Mutex::new(String::new()),
            read_waker: AtomicWaker::new(),
            write_waker: AtomicWaker::new(),
        });
        open.insert(conn.clone());
        Ok(TrackedIo {
            inner: stream,
            conn,
            registry: self.clone(),
        })
    }

    /// Closes every connection past its header or idle deadline.
    pub fn reap(&self) {
        let now = Instant::now();
        let mut open = lock(&self.open);
        let overdue: Vec<(u64, String)> = open
            .by_id
            .values()
            .filter_map(|conn| conn.overdue(now, &self.limits).map(|why| (conn.id, why)))
            .collect();
        for (id, reason) in overdue {
            if let Some(conn) = open.remove(id) {
                self.stats.timed_out.fetch_add(1, Ordering::Relaxed);
                conn.kill(reason);
            }
        }
    }

    /// Runs [`Registry::reap`] every second until `stopped`.
    pub async fn reap_until(self: Arc<Self>, stopped: tokio::sync::watch::Receiver<bool>) {
        let mut tick = tokio::time::interval(REAP_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let stop = super::wait_for_stop(stopped);
        tokio::pin!(stop);
        loop {
            tokio::select! {
                _ = tick.tick() => self.reap(),
                () = &mut stop => return,
            }
        }
    }

    /// Closes every connection still open (the end of a graceful shutdown's grace).
    pub fn kill_all(&self, reason: &str) {
        let mut open = lock(&self.open);
        open.per_peer.clear();
        for (_, conn) in open.by_id.drain() {
            conn.kill(reason.to_string());
        }
    }

    fn forget(&self, id: u64) {
        lock(&self.open).remove(id);
    }
}

/// A TCP stream that reports reads to its [`Connection`] and fails every read and write once the
/// connection is killed, which makes hyper drop it.
pub(crate) struct TrackedIo {
    inner: TcpStream,
    pub conn: Arc<Connection>,
    registry: Arc<Registry>,
}

impl Drop for TrackedIo {
    fn drop(&mut self) {
        self.registry.forget(self.conn.id);
    }
}

impl TrackedIo {
    fn killed_error(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::ConnectionAborted,
            lock(&self.conn.reason).clone(),
        )
    }
}

impl AsyncRead for TrackedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.conn.read_waker.register(cx.waker());
        if self.conn.is_killed() {
            return Poll::Ready(Err(self.killed_error()));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = buf.filled().len() - before;
        if matches!(polled, Poll::Ready(Ok(()))) && read > 0 {
            self.conn.on_bytes_read(read);
        }
        polled
    }
}

impl AsyncWrite for TrackedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.conn.write_waker.register(cx.waker());
        if self.conn.is_killed() {
            return Poll::Ready(Err(self.killed_error()));
        }
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.conn.write_waker.register(cx.waker());
        if self.conn.is_killed() {
            return Poll::Ready(Err(self.killed_error()));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.conn.write_waker.register(cx.waker());
        if self.conn.is_killed() {
            return Poll::Ready(Err(self.killed_error()));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for TrackedIo {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn connected_pair(listener: &tokio::net::TcpListener) -> (TcpStream, SocketAddr) {
        let addr = listener.local_addr().unwrap();
        let client = TcpStream::connect(addr).await.unwrap();
        let (server, peer) = listener.accept().await.unwrap();
        std::mem::forget(client); // keep the client end open for the test's life
        (server, peer)
    }

    #[tokio::test]
    async fn at_the_cap_the_longest_idle_connection_makes_room_and_busy_ones_never_do() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let limits = Limits {
            max_connections: 2,
            ..Limits::default()
        };
        let stats = Arc::new(ConnectionStats::default());
        let registry = Registry::new(Protocol::Http1, limits, stats.clone());
        let (stream, peer) = connected_pair(&listener).await;
        let oldest = registry.admit(stream, peer).ok().unwrap();
        let (stream, peer) = connected_pair(&listener).await;
        let busy = registry.admit(stream, peer).ok().unwrap();
        let _request = busy.conn.begin_request();

        let (stream, peer) = connected_pair(&listener).await;
        let newest = registry.admit(stream, peer).ok().unwrap();
        assert!(oldest.conn.is_killed(), "the idle one made room");
        assert!(!busy.conn.is_killed() && !newest.conn.is_killed());
        assert_eq!(stats.evicted.load(Ordering::Relaxed), 1);

        let _second_request = newest.conn.begin_request();
        let (stream, peer) = connected_pair(&listener).await;
        assert!(
            registry.admit(stream, peer).is_err(),
            "everyone is mid-request: the newcomer is refused"
        );
        assert_eq!(stats.refused.load(Ordering::Relaxed), 1);
    }

    /// A client connected from `source`, accepted by `listener`.
    async fn pair_from(
        listener: &tokio::net::TcpListener,
        source: &str,
    ) -> (TcpStream, SocketAddr) {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
        let client = socket
            .connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, peer) = listener.accept().await.unwrap();
        std::mem::forget(client);
        (server, peer)
    }

    #[tokio::test]
    async fn the_slowest_body_of_the_peer_holding_most_makes_room() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let limits = Limits {
            max_connections: 3,
            max_connections_per_peer: 2,
            ..Limits::default()
        };
        let stats = Arc::new(ConnectionStats::default());
        let registry = Registry::new(Protocol::Http1, limits, stats.clone());
        let admit = |(stream, peer)| registry.admit(stream, peer).ok().unwrap();
        let sending_body = |io: &TrackedIo, bytes: usize| {
            io.conn.on_bytes_read(100);
            let busy = io.conn.begin_request();
            io.conn.reading_body();
            io.conn.on_bytes_read(bytes);
            busy
        };
        let fast = admit(pair_from(&listener, "127.0.0.1").await);
        let _fast_request = sending_body(&fast, 1 << 20);
        let slow = admit(pair_from(&listener, "127.0.0.1").await);
        let _slow_request = sending_body(&slow, 1);
        // The peer's share is full: its slowest body makes room, not its fast one.
        let newcomer = admit(pair_from(&listener, "127.0.0.1").await);
        assert!(slow.conn.is_killed());
        assert!(!fast.conn.is_killed() && !newcomer.conn.is_killed());
        // The listener is full: the peer holding the most makes room, whoever arrives.
        let other = admit(pair_from(&listener, "127.0.0.2").await);
        let other_newcomer = admit(pair_from(&listener, "127.0.0.2").await);
        assert!(newcomer.conn.is_killed(), "idle, behind the fast body");
        assert!(!fast.conn.is_killed());
        assert!(!other.conn.is_killed() && !other_newcomer.conn.is_killed());
        assert_eq!(stats.evicted.load(Ordering::Relaxed), 2);
    }

    #[tokio::test]
    async fn the_reaper_closes_idle_and_half_sent_connections_only() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let limits = Limits {
            idle_timeout: Duration::ZERO,
            header_timeout: Duration::ZERO,
            ..Limits::default()
        };
        let registry = Registry::new(Protocol::Http1, limits, Arc::default());
        let (stream, peer) = connected_pair(&listener).await;
        let idle = registry.admit(stream, peer).ok().unwrap();
        let (stream, peer) = connected_pair(&listener).await;
        let half_sent = registry.admit(stream, peer).ok().unwrap();
        half_sent.conn.on_bytes_read(4);
        let (stream, peer) = connected_pair(&listener).await;
        let busy = registry.admit(stream, peer).ok().unwrap();
        let _request = busy.conn.begin_request();
        registry.reap();
        assert!(idle.conn.is_killed());
        assert!(half_sent.conn.is_killed());
        assert!(lock(&half_sent.conn.reason).contains("--header-timeout"));
        assert!(!busy.conn.is_killed(), "a request in progress is not idle");
    }
}
