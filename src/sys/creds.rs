//! Doing file work with another user's rights: the readers of the ring
//! (vlog-dump, vlog-ctl) read the object files a ring or a control server
//! names, and run by root they must read only what that data's owner
//! could. The kernel judges it, path and all (directories, symbolic
//! links, ACLs, supplementary groups): on a thread of its own whose
//! filesystem credentials are the owner's. setfsuid, setfsgid and
//! setgroups made as raw system calls change that thread alone (glibc's
//! setgroups would change every thread), and a filesystem uid changed
//! from 0 drops the thread's filesystem capabilities (CAP_DAC_OVERRIDE,
//! CAP_DAC_READ_SEARCH). The thread ends with the work, its credentials
//! with it.

/// Runs `work` on a thread whose filesystem user is `uid`, group `gid`
/// and supplementary groups `groups`; None if the credentials could not
/// be taken (a process without CAP_SETUID and CAP_SETGID: not root), or
/// the thread could not be made.
pub fn as_user<T: Send>(
    uid: u32,
    gid: u32,
    groups: &[u32],
    work: impl FnOnce() -> T + Send,
) -> Option<T> {
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new().spawn_scoped(scope, || {
            // SAFETY: setgroups reads `groups.len()` ids from a live slice;
            // setfsgid and setfsuid take plain ids. Each changes only this
            // thread's credentials (raw system calls, not glibc's
            // process-wide setgroups).
            let taken = unsafe {
                libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()) == 0 && {
                    libc::syscall(libc::SYS_setfsgid, gid);
                    libc::syscall(libc::SYS_setfsuid, uid);
                    // Neither says whether it worked: each returns the
                    // old id; asked again with an id that is never
                    // valid (-1), each changes nothing and says the
                    // one in force.
                    libc::syscall(libc::SYS_setfsgid, u32::MAX) as u32 == gid
                        && libc::syscall(libc::SYS_setfsuid, u32::MAX) as u32 == uid
                }
            };
            taken.then(work)
        });
        thread.ok()?.join().ok().flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// Run by root: a file only root may read is not read as another
    /// user, nor one in a directory that user may not enter; the same
    /// files are read as root, on this thread, after.
    #[test]
    fn work_done_as_another_user_has_that_users_rights() {
        let dir = std::env::temp_dir().join(format!("vlog-creds-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("closed")).unwrap();
        let private = dir.join("private");
        let hidden = dir.join("closed/open");
        std::fs::write(&private, b"p").unwrap();
        std::fs::write(&hidden, b"h").unwrap();
        let mode = |p: &std::path::Path, m| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        mode(&dir, 0o755);
        mode(&private, 0o600);
        mode(&dir.join("closed"), 0o700);
        mode(&hidden, 0o644);
        let read = |p: &std::path::Path| std::fs::read(p).is_ok();
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let as_nobody = as_user(65534, 65534, &[], || (read(&private), read(&hidden)));
        if root {
            assert_eq!(as_nobody, Some((false, false)));
            assert!(read(&private) && read(&hidden));
        } else {
            assert_eq!(as_nobody, None);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
