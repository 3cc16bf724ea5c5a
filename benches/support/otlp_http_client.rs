//! The smallest OTLP/HTTP client the load tools need: one keep-alive connection, as an SDK's
//! exporter holds, each request answered before the next is written. Shared by
//! `benches/serve.rs` and `examples/live_memory.rs`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

pub struct Connection {
    reader: BufReader<TcpStream>,
    addr: String,
}

impl Connection {
    pub fn open(addr: &str) -> std::io::Result<Connection> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        Ok(Connection {
            reader: BufReader::new(stream),
            addr: addr.to_string(),
        })
    }

    /// POSTs a protobuf `body` to /v1/traces with `extra_headers` (each ending in CRLF) and
    /// reads the whole answer; returns its status code.
    pub fn post(&mut self, body: &[u8], extra_headers: &str) -> std::io::Result<u16> {
        let head = format!(
            "POST /v1/traces HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-protobuf\r\n{extra_headers}Content-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        let stream = self.reader.get_mut();
        stream.write_all(head.as_bytes())?;
        stream.write_all(body)?;
        let mut status = 0;
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line)? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            if line == "\r\n" {
                break;
            }
            if let Some(code) = line.strip_prefix("HTTP/1.1 ") {
                status = code.get(..3).and_then(|c| c.parse().ok()).unwrap_or(0);
            } else if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut answer = vec![0; length];
        self.reader.read_exact(&mut answer)?;
        Ok(status)
    }
}
