//! A collector's address (`syslog:IDENT@udp://HOST:PORT`, `@tcp://`,
//! `fluent:TAG@tcp://`): known when the output is made if HOST is an IP
//! address; a name is looked up by vlog's resolver thread (`logger::ticker`),
//! never by a thread that logs nor under the logger's lock, so that a
//! resolver that does not answer holds up nobody. The output exists
//! meanwhile and keeps its lines in its queue. A name that does not
//! resolve is tried again after 1 s, then with pauses that double up to a
//! minute; that it does not is said once, and that it does again once.

use std::net::SocketAddr;

use super::spec::{Dest, FluentPeer, Spec, Transport};

/// The first pause before a name is looked up again, and the longest.
const PAUSE_FIRST_MS: u64 = 1000;
const PAUSE_MAX_MS: u64 = 60_000;

#[derive(Debug)]
pub struct Address {
    /// HOST:PORT as the output was given it.
    name: String,
    known: Option<SocketAddr>,
    /// When the name is to be looked up (ms, CLOCK_MONOTONIC), and the
    /// pause after that if it fails again.
    due_ms: u64,
    pause_ms: u64,
    /// A failure was said (and its recovery is to be).
    said: bool,
}

impl Address {
    /// The address `name` (HOST:PORT, HOST an IP address, `[v6]`, or a
    /// name) gives; a name is to be looked up at once.
    pub fn new(name: &str) -> Address {
        Address {
            name: name.to_owned(),
            known: name.parse().ok(),
            due_ms: 0,
            pause_ms: PAUSE_FIRST_MS,
            said: false,
        }
    }

    /// Whether the name is being looked up for the first time: its
    /// address may come at any moment (a failed one waits its pause).
    pub fn first_lookup(&self) -> bool {
        self.known.is_none() && self.pause_ms == PAUSE_FIRST_MS && !self.said
    }

    /// The address, once known.
    #[inline]
    pub fn get(&self) -> Option<SocketAddr> {
        self.known
    }

    /// The name to look up now, if it is due.
    pub fn due(&self, now_ms: u64) -> Option<&str> {
        (self.known.is_none() && now_ms >= self.due_ms).then_some(&*self.name)
    }

    /// When the next look-up is due (ms), if one is.
    pub fn next_due(&self) -> Option<u64> {
        self.known.is_none().then_some(self.due_ms)
    }

    /// Takes the result of looking the name up (`what` names the output in
    /// what is said): what to say, if anything (the first failure, and the
    /// recovery after one).
    pub fn looked_up(
        &mut self,
        result: Result<SocketAddr, String>,
        now_ms: u64,
        what: &str,
    ) -> Option<String> {
        if self.known.is_some() {
            return None;
        }
        match result {
            Ok(addr) => {
                self.known = Some(addr);
                std::mem::take(&mut self.said)
                    .then(|| format!("{what} '{}' resolved to {addr}: sending", self.name))
            }
            Err(e) => {
                self.due_ms = now_ms + self.pause_ms;
                self.pause_ms = (self.pause_ms * 2).min(PAUSE_MAX_MS);
                (!std::mem::replace(&mut self.said, true)).then(|| {
                    format!(
                        "cannot resolve {what} '{}': {e}; its lines wait in its queue, and the \
                         name is looked up again (after 1 s, then up to a minute apart)",
                        self.name
                    )
                })
            }
        }
    }

    /// The address if known, else the name.
    pub fn describe(&self) -> String {
        match self.known {
            Some(addr) => addr.to_string(),
            None => self.name.clone(),
        }
    }
}

/// Whether the collector `spec` sends to is named by a host name, which a
/// thread of vlog's must look up (not an IP address, nor a Unix socket).
pub fn names_a_host(spec: &Spec) -> bool {
    let addr = match &spec.dest {
        Dest::Syslog {
            transport: Transport::Udp(a) | Transport::Tcp(a),
            ..
        } => a,
        Dest::Fluent {
            peer: FluentPeer::Tcp(a),
            ..
        } => a,
        _ => return false,
    };
    addr.parse::<SocketAddr>().is_err()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_host_name_is_told_from_an_address() {
        use crate::output::spec::parse_list;
        let named = |t: &str| names_a_host(&parse_list(t).unwrap()[0]);
        assert!(named("1:fluent:t@tcp://localhost:24224"));
        assert!(named("1:syslog:d@udp://logs.example.net:514"));
        assert!(!named("1:syslog:d@tcp://[::1]:601"));
        assert!(!named("1:fluent:t@tcp://127.0.0.1:24224"));
        assert!(!named("1:fluent:t@unix:/run/f.sock"));
        assert!(!named("1:syslog:d"));
    }

    use super::*;

    #[test]
    fn literals_are_known_names_are_looked_up_with_backoff() {
        let a = Address::new("[::1]:514");
        assert_eq!(a.get(), "[::1]:514".parse().ok());
        assert_eq!(a.due(0), None);
        let mut n = Address::new("collector.example:514");
        assert_eq!(n.due(0), Some("collector.example:514"));
        let said = n.looked_up(Err("no answer".into()), 10, "syslog collector");
        assert!(said.unwrap().starts_with("cannot resolve syslog collector"));
        assert_eq!(n.due(500), None);
        assert_eq!(n.next_due(), Some(1010));
        // Said once; the pauses double.
        assert_eq!(n.looked_up(Err("no".into()), 1010, "x"), None);
        assert_eq!(n.next_due(), Some(3010));
        let addr = "127.0.0.1:514".parse().unwrap();
        let said = n.looked_up(Ok(addr), 3010, "syslog collector").unwrap();
        assert!(said.contains("resolved to 127.0.0.1:514"), "{said}");
        assert_eq!((n.get(), n.due(99_999)), (Some(addr), None));
    }
}
