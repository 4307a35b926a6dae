//! The server: the listening socket, its connections, and the epoll
//! descriptor and timer they are waited on with. A round (`round`) does
//! what can be done now and returns the requests that came in whole; the
//! commands run without SERVER, and `deliver` hands their replies over.
//!
//! Every round first makes sure each descriptor is still vlog's (a program
//! may close every descriptor above 2 and open files of its own at those
//! numbers): a connection that is not is forgotten, never written to; a
//! listening socket that is not is made anew at its path and this is said;
//! an epoll descriptor or timer that is not is made anew with everything
//! registered again.

use std::ffi::c_int;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::authority::{self, Role};
use super::client::{Client, Stream, ROUND_PARTS};
use crate::config::ControlSpec;
use crate::error::ConfigError;
use crate::sys;
use crate::sys::fd::send_some;
use crate::sys::listen::{self, Listener, PeerCred, Poller, Timer, READABLE};
use crate::sys::place;
use crate::sys::watch::Waker;

/// At most this many connections are served at once; more are told so.
pub const CLIENTS_MAX: usize = 16;
/// ... of which members of the group take at most this many: the last
/// ones are the daemon's user's and root's, which no member can take up.
const MEMBERS_MAX: usize = 12;
/// Connections kept beyond those to tell them why they are closed.
const REFUSALS_MAX: usize = 4;
/// The timer's period while anything waits for time.
const TICK_MS: u64 = 100;
/// ... and while a stream has more in the ring than its round's parts let
/// it read: soon, yet with a wait between rounds, in which a fork or a
/// configuration call waiting for the server's lock takes it.
const MORE_MS: u64 = 1;
/// How long accepting pauses after it failed (out of descriptors, say).
const ACCEPT_PAUSE_MS: u64 = 1000;

/// A request line that came in whole, and who sent it.
pub struct Request {
    pub id: u64,
    pub line: String,
    pub peer: PeerCred,
    pub role: Role,
    /// The group the socket admits, for what a refusal says.
    pub group: Option<u32>,
    /// The socket, as `VLOG_CONTROL` writes it (for `show`).
    pub socket: String,
}

/// What a command answers.
pub struct Reply {
    pub id: u64,
    pub head: Vec<u8>,
    pub stream: Option<Stream>,
}

pub struct Server {
    spec: ControlSpec,
    path: PathBuf,
    group: Option<u32>,
    /// None once it could not be made anew.
    listener: Option<Listener>,
    poller: Poller,
    timer: Timer,
    /// The timer's period now (0: stopped).
    ticking: u64,
    /// The thread's waker, when a thread serves (registered so that a stop
    /// wakes it).
    waker: Option<Arc<Waker>>,
    clients: Vec<Client>,
    next_id: u64,
    pid: u32,
    /// Accepting resumes at this time (ms), after a failure.
    paused_until: Option<u64>,
    /// The process's root when the socket was made: after a chroot its
    /// path would name a file in the jail, where no socket is made anew.
    root: Option<(u64, u64)>,
}

fn now_ms() -> u64 {
    sys::monotonic_ns() / 1_000_000
}

impl Server {
    /// Where the socket `spec` names goes (`auto`'s directory made if it
    /// is missing: 0700, or 0750 and `group`'s, the group the socket
    /// admits; see [`Server::group`]).
    pub fn resolve(spec: &ControlSpec, group: Option<u32>) -> Result<PathBuf, ConfigError> {
        match &spec.path {
            Some(p) => Ok(p.clone()),
            None => default_path(group),
        }
    }

    /// Whether the group `spec` admits is given by name: looking it up may
    /// ask a directory service (NSS), which is never done under a lock.
    pub fn group_needs_lookup(spec: &ControlSpec) -> bool {
        spec.group
            .as_deref()
            .is_some_and(|g| g.parse::<u32>().is_err())
    }

    /// The id of the group `spec` admits, if any (see
    /// [`Server::group_needs_lookup`]).
    pub fn group(spec: &ControlSpec) -> Result<Option<u32>, ConfigError> {
        spec.group
            .as_deref()
            .map(place::group_id)
            .transpose()
            .map_err(|e| {
                ConfigError::new(format!(
                    "cannot admit group '{}': {e}",
                    spec.group.as_deref().unwrap_or_default()
                ))
            })
    }

    /// Whether this server's socket is at `path`.
    pub fn is_at(&self, path: &Path) -> bool {
        self.path == path
    }

    /// Makes the socket `spec` names at `path`, admitting `group` (see
    /// [`Server::group`]), and what it is waited on with. A group that
    /// could not reach the socket (a directory on the way it may not
    /// enter) is refused, saying which.
    pub fn open(
        spec: &ControlSpec,
        path: PathBuf,
        group: Option<u32>,
    ) -> Result<Server, ConfigError> {
        let failed = |e: std::io::Error| {
            ConfigError::new(format!(
                "cannot open the control socket '{}': {e}",
                path.display()
            ))
        };
        if let Some(gid) = group {
            place::group_can_reach(&path, gid).map_err(failed)?;
        }
        let listener = listen::listen(&path, group).map_err(failed)?;
        let poller = Poller::new().map_err(failed)?;
        let timer = Timer::new().map_err(failed)?;
        let mut server = Server {
            spec: ControlSpec {
                path: Some(path.clone()),
                group: spec.group.clone(),
            },
            path: path.clone(),
            group,
            listener: Some(listener),
            poller,
            timer,
            ticking: 0,
            waker: None,
            clients: Vec::new(),
            next_id: 0,
            pid: sys::process_id(),
            paused_until: None,
            root: sys::dir::root_id(),
        };
        if let Err(e) = server.register_all() {
            return Err(ConfigError::new(format!(
                "cannot open the control socket '{}': {e}",
                server.path.display()
            )));
        }
        Ok(server)
    }

    pub fn is_this_process(&self) -> bool {
        self.pid == sys::process_id()
    }

    pub fn set_waker(&mut self, waker: Arc<Waker>) {
        let _ = self.poller.add(waker.fd(), READABLE);
        self.waker = Some(waker);
    }

    pub fn poll_fd(&self) -> c_int {
        self.poller.fd().raw()
    }

    fn listener_events(&self) -> u32 {
        if self.paused_until.is_some() {
            0
        } else {
            READABLE
        }
    }

    /// Registers every descriptor with the poller (a new one); only those
    /// still vlog's (a waker the program closed is let go of: the thread
    /// then notices a stop within its look).
    fn register_all(&mut self) -> std::io::Result<()> {
        if let Some(l) = self.listener.as_ref().filter(|l| l.fd().is_ours()) {
            self.poller.add(l.fd(), self.listener_events())?;
        }
        self.poller.add(self.timer.fd(), READABLE)?;
        if self.waker.as_ref().is_some_and(|w| !w.fd().is_ours()) {
            self.waker = None;
        }
        if let Some(w) = &self.waker {
            self.poller.add(w.fd(), READABLE)?;
        }
        for c in self.clients.iter().filter(|c| c.fd().is_ours()) {
            self.poller.add(c.fd(), c.waits_for)?;
        }
        self.ticking = 0;
        Ok(())
    }

    /// One round; see the overview. Returns the requests that came in
    /// whole, and what to say of the server itself.
    pub fn round(&mut self) -> (Vec<Request>, Vec<String>) {
        let mut said = Vec::new();
        self.repair(&mut said);
        self.timer.take();
        let now = now_ms();
        if self.paused_until.is_some_and(|t| now >= t) {
            self.paused_until = None;
            if let Some(l) = &self.listener {
                let _ = self.poller.modify(l.fd(), READABLE);
            }
        }
        self.accept(now);
        let mut requests = Vec::new();
        let mut parts = ROUND_PARTS;
        for c in &mut self.clients {
            if let Some(line) = c.step(now, &mut parts) {
                requests.push(Request {
                    id: c.id,
                    line,
                    peer: c.peer.clone(),
                    role: c.role,
                    group: self.group,
                    socket: self.spec.as_env(),
                });
            }
        }
        if parts == 0 {
            // The parts ran out: the next round starts with the next
            // connection, so that every stream gets its turn.
            if !self.clients.is_empty() {
                self.clients.rotate_left(1);
            }
        }
        self.tidy();
        (requests, said)
    }

    /// Hands each reply to its connection, if it is still there.
    pub fn deliver(&mut self, replies: Vec<Reply>) {
        let now = now_ms();
        let mut parts = ROUND_PARTS;
        for r in replies {
            if let Some(c) = self.clients.iter_mut().find(|c| c.id == r.id) {
                c.reply(&r.head, r.stream, now, &mut parts);
            }
        }
        self.tidy();
    }

    fn accept(&mut self, now: u64) {
        let Some(listener) = &self.listener else {
            return;
        };
        if self.paused_until.is_some() {
            return;
        }
        for _ in 0..CLIENTS_MAX {
            match listener.accept() {
                Ok(Some((fd, peer))) => {
                    // A refusal, or a connection beyond those served, gets
                    // its one line and is closed once it is read (a few
                    // more connections are kept for that; beyond them,
                    // closed at once).
                    let role = authority::role(&peer, self.group);
                    let full = match role {
                        Ok(Role::Member) => self.served(Some(Role::Member)) >= MEMBERS_MAX,
                        _ => false,
                    } || self.served(None) >= CLIENTS_MAX;
                    let why = role.as_ref().err().cloned().or_else(|| {
                        full.then(|| {
                            format!(
                                "error: busy: {} connections are being served; try again\n",
                                self.served(None)
                            )
                        })
                    });
                    if why.is_some() && self.clients.len() >= CLIENTS_MAX + REFUSALS_MAX {
                        let _ = send_some(
                            fd.raw(),
                            why.unwrap_or_default().as_bytes(),
                            libc::MSG_DONTWAIT,
                        );
                        continue;
                    }
                    if self.poller.add(&fd, READABLE).is_err() {
                        continue;
                    }
                    self.next_id += 1;
                    let role = role.unwrap_or(Role::Member);
                    let mut client = Client::new(self.next_id, fd, peer, role, now);
                    if let Some(why) = why {
                        client.refuse(&why, now);
                    }
                    self.clients.push(client);
                }
                Ok(None) => return,
                Err(_) => {
                    // Out of descriptors, say: the connection waits in the
                    // queue, and the listener is not looked at for a while
                    // (level-triggered, it would wake the thread at once).
                    self.paused_until = Some(now + ACCEPT_PAUSE_MS);
                    let _ = self.poller.modify(listener.fd(), 0);
                    return;
                }
            }
        }
    }

    /// The connections served (not being refused), of peers in `role` if
    /// given.
    fn served(&self, role: Option<Role>) -> usize {
        self.clients
            .iter()
            .filter(|c| !c.refused() && role.is_none_or(|r| c.role == r))
            .count()
    }

    /// Closes the connections that are done, and registers the others for
    /// what they wait for now; the timer ticks while any waits for time.
    fn tidy(&mut self) {
        let poller = &self.poller;
        self.clients.retain(|c| {
            if c.done() && c.fd().is_ours() {
                poller.delete(c.fd());
            }
            !c.done()
        });
        for c in &mut self.clients {
            let wants = c.wants();
            if wants != c.waits_for && self.poller.modify(c.fd(), wants).is_ok() {
                c.waits_for = wants;
            }
        }
        let tick = if self.clients.iter().any(Client::has_more) {
            MORE_MS
        } else if self.paused_until.is_some() || self.clients.iter().any(Client::needs_ticks) {
            TICK_MS
        } else {
            0
        };
        if tick != self.ticking {
            self.timer.every(tick);
            self.ticking = tick;
        }
    }

    /// Makes sure every descriptor is still vlog's (see the overview).
    fn repair(&mut self, said: &mut Vec<String>) {
        // Connections the program closed are forgotten, not closed.
        self.clients.retain(|c| c.fd().is_ours());
        if self.listener.as_ref().is_some_and(|l| !l.fd().is_ours()) {
            // Dropping it removes the file if it is still the one it made.
            self.listener = None;
            let made = match sys::dir::root_id() == self.root {
                true => listen::listen(&self.path, self.group),
                false => Err(std::io::Error::other(
                    "the process's root moved since it was made (chroot), and its path \
                     would name a file in the new root",
                )),
            };
            match made {
                Ok(l) => {
                    self.listener = Some(l);
                    said.push(format!(
                        "the control socket's descriptor was closed by the program \
                         (close_range?): made a new socket at '{}'",
                        self.path.display()
                    ));
                }
                Err(e) => said.push(format!(
                    "the control socket's descriptor was closed by the program \
                     (close_range?), and a new one cannot be made at '{}': {e}; \
                     the control socket is off",
                    self.path.display()
                )),
            }
            self.renew_poller(said);
            return;
        }
        let sound = match &self.listener {
            Some(l) => self.poller.holds(l.fd(), self.listener_events()),
            None => self.poller.fd().is_ours(),
        };
        if !sound || !self.timer.fd().is_ours() {
            self.renew_poller(said);
        }
    }

    fn renew_poller(&mut self, said: &mut Vec<String>) {
        let made = Poller::new().and_then(|p| Timer::new().map(|t| (p, t)));
        match made {
            Ok((poller, timer)) => {
                self.poller = poller;
                self.timer = timer;
                if let Err(e) = self.register_all() {
                    said.push(format!("cannot wait on the control socket: {e}"));
                }
            }
            Err(e) => said.push(format!("cannot wait on the control socket: {e}")),
        }
    }
}

/// Where `auto` puts the socket: `$RUNTIME_DIRECTORY/vlog.sock` (systemd's
/// RuntimeDirectory=; the first one), else `/run/IDENT/vlog.sock` for root
/// and `$XDG_RUNTIME_DIR/IDENT/vlog.sock` for others, IDENT the program's
/// name; the last directory made if it is missing: 0700, or 0750 and
/// `group`'s, so that the group the socket admits can enter it. The
/// environment is not read in a setuid process.
fn default_path(group: Option<u32>) -> Result<PathBuf, ConfigError> {
    const NAME: &str = "vlog.sock";
    let env = |name: &str| {
        (!sys::secure_mode())
            .then(|| std::env::var_os(name))
            .flatten()
            .filter(|v| !v.is_empty())
    };
    if let Some(dirs) = env("RUNTIME_DIRECTORY") {
        let first = dirs
            .to_string_lossy()
            .split(':')
            .next()
            .unwrap_or("")
            .to_owned();
        if first.starts_with('/') {
            return Ok(Path::new(&first).join(NAME));
        }
    }
    let ident = String::from_utf8_lossy(&sys::program_name()).into_owned();
    if ident.is_empty() || ident.contains('/') || ident.starts_with('.') {
        return Err(ConfigError::new(
            "no default place for the control socket: the program has no usable name; \
             give a path",
        ));
    }
    let base = if sys::effective_uid() == 0 {
        PathBuf::from("/run")
    } else if let Some(xdg) = env("XDG_RUNTIME_DIR") {
        PathBuf::from(xdg)
    } else {
        return Err(ConfigError::new(
            "no default place for the control socket: neither RUNTIME_DIRECTORY nor \
             XDG_RUNTIME_DIR is set and the program is not root; give a path",
        ));
    };
    let dir = base.join(&ident);
    place::make_directory(&dir, group).map_err(|e| {
        ConfigError::new(format!(
            "cannot make the control socket's directory '{}': {e}",
            dir.display()
        ))
    })?;
    Ok(dir.join(NAME))
}
