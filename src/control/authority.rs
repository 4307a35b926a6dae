//! Who may do what through the control socket: the rules, in one place.
//!
//! | peer (SO_PEERCRED, SO_PEERGROUPS) | may |
//! | --- | --- |
//! | the daemon's effective uid, or root | everything |
//! | a member of the group `?group=` names | observe (`show`, `stats`, `dump`, `follow`, `help`) and tune (`filters`, `level`) |
//! | anyone else | nothing: one refusal line, and the connection is closed |
//!
//! Whatever opens a file or a connection (`outputs`, `reopen`) is the
//! owner's alone: a group admitted to read the logs (Debian's `adm`) must
//! never borrow a root daemon's power to create or write files. What any
//! peer sends is data: the change it made is recorded with the values as
//! fields (`OLD`, `NEW`), which every output escapes as a value, never
//! spliced into the record's message.

use crate::sys::{self, listen::PeerCred};

/// What a peer the socket lets in is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The daemon's effective user, or root.
    Owner,
    /// A member of the group the socket admits.
    Member,
}

/// What a command does, as far as who may ask for it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Power {
    /// Reads what vlog has: its configuration, counters, ring.
    Observe,
    /// Changes what is recorded, within the outputs the owner chose.
    Tune,
    /// Opens files or connections.
    Manage,
}

fn power(command: &str) -> Power {
    match command {
        "filters" | "level" | "context" | "ratelimit" => Power::Tune,
        "outputs" | "reopen" | "reload" => Power::Manage,
        _ => Power::Observe,
    }
}

/// The role of `peer` on a socket that admits `group`, or the line that
/// refuses it.
pub fn role(peer: &PeerCred, group: Option<u32>) -> Result<Role, String> {
    let me = sys::effective_uid();
    if peer.uid == 0 || peer.uid == me {
        return Ok(Role::Owner);
    }
    if group.is_some_and(|g| peer.in_group(g)) {
        return Ok(Role::Member);
    }
    let also = group.map_or_else(String::new, |g| format!(" and group {g}"));
    Err(format!(
        "error: refused: uid {} may not control this process (uid {me}, root{also} may)\n",
        peer.uid
    ))
}

/// Whether `role` may ask for `command`; why not, if not.
pub fn allows(
    role: Role,
    peer: &PeerCred,
    group: Option<u32>,
    command: &str,
) -> Result<(), String> {
    if role == Role::Owner || power(command) != Power::Manage {
        return Ok(());
    }
    let what = match command {
        "outputs" => "outputs opens files and connections",
        "reload" => "reload may change the outputs, which opens files and connections",
        _ => "reopen opens files",
    };
    Err(format!(
        "refused: {what}, which only the daemon's user (uid {}) and root may ask for; uid {} \
         is let in as a member of group {}, to observe and tune (show, stats, dump, follow, \
         filters, level)",
        sys::effective_uid(),
        peer.uid,
        group.map_or_else(|| "?".to_owned(), |g| g.to_string())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(uid: u32, groups: Vec<u32>) -> PeerCred {
        PeerCred {
            pid: 1,
            uid,
            gid: uid,
            groups,
        }
    }

    #[test]
    fn members_observe_and_tune_owners_manage() {
        let me = sys::effective_uid();
        let other = if me == 4242 { 4343 } else { 4242 };
        assert_eq!(role(&peer(me, vec![]), None), Ok(Role::Owner));
        assert_eq!(role(&peer(0, vec![]), None), Ok(Role::Owner));
        let member = peer(other, vec![7]);
        assert_eq!(role(&member, Some(7)), Ok(Role::Member));
        assert!(role(&member, Some(8)).unwrap_err().contains("refused"));
        for command in [
            "show",
            "stats",
            "dump",
            "follow",
            "help",
            "filters",
            "level",
            "context",
            "ratelimit",
            "sites",
            "sources",
        ] {
            assert!(
                allows(Role::Member, &member, Some(7), command).is_ok(),
                "{command}"
            );
        }
        for command in ["outputs", "reopen"] {
            let why = allows(Role::Member, &member, Some(7), command).unwrap_err();
            assert!(why.contains("only the daemon's user"), "{why}");
            assert!(allows(Role::Owner, &peer(me, vec![]), None, command).is_ok());
        }
    }
}
