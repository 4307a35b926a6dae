//! Where a socket of vlog's goes, and who can reach it: the directory it
//! is made in (writable by nobody else; made for a group it admits) and
//! the group's id.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::other("the path contains a NUL byte"))
}

/// Refuses a directory that someone other than this user (or root) could
/// write a file into: one that belongs to another user, or that its group
/// or others may write.
pub fn check_directory(dir: &Path) -> io::Result<()> {
    let c = c_path(dir)?;
    // SAFETY: an all-zero stat is a valid out-buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid out-pointer. The directory
    // itself may be reached through a link; what is checked is what it is.
    if unsafe { libc::stat(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let me = super::effective_uid();
    let why = if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
        "it is not a directory"
    } else if st.st_uid != me && st.st_uid != 0 {
        "it belongs to another user"
    } else if st.st_mode & 0o002 != 0 {
        "others may write to it"
    } else if st.st_mode & 0o020 != 0 {
        "its group may write to it"
    } else {
        return Ok(());
    };
    Err(io::Error::other(format!(
        "refusing the directory '{}': {why} (the control socket goes in a directory only \
         its user, or root, may write to)",
        dir.display()
    )))
}

/// Makes the directory a socket goes in if it is missing: 0700, or 0750
/// and `group`'s (so that the group a socket admits can enter it). One
/// that exists is left as it is.
pub fn make_directory(dir: &Path, group: Option<u32>) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let mode = if group.is_some() { 0o750 } else { 0o700 };
    match std::fs::DirBuilder::new().mode(mode).create(dir) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(()),
        other => other?,
    }
    if let Some(gid) = group {
        let c = c_path(dir)?;
        // SAFETY: a NUL-terminated path; lchown never follows a link (the
        // directory was just made, by this process).
        if unsafe { libc::lchown(c.as_ptr(), u32::MAX, gid) } != 0 {
            let e = io::Error::last_os_error();
            let _ = std::fs::remove_dir(dir);
            return Err(io::Error::other(format!(
                "cannot give it to group {gid}: {e}"
            )));
        }
        // SAFETY: as above; the mode the umask may have narrowed.
        if unsafe { libc::chmod(c.as_ptr(), mode) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Refuses a socket path that members of group `gid` could not reach: a
/// directory on the way that neither others nor that group (as its
/// group) may enter. Mode bits only: an ACL that lets them in is not read.
pub fn group_can_reach(path: &Path, gid: u32) -> io::Result<()> {
    for dir in path.ancestors().skip(1) {
        if dir.as_os_str().is_empty() {
            continue;
        }
        let c = c_path(dir)?;
        // SAFETY: an all-zero stat is a valid out-buffer.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a NUL-terminated path and a valid out-pointer.
        if unsafe { libc::stat(c.as_ptr(), &mut st) } != 0 {
            // A directory still to be made (`auto`'s) is judged then.
            continue;
        }
        let enters = st.st_mode & 0o001 != 0 || (st.st_gid == gid && st.st_mode & 0o010 != 0);
        if !enters {
            return Err(io::Error::other(format!(
                "group {gid} cannot enter '{}' (mode {:04o}, uid {}, group {}), so it could \
                 not reach the socket: give that group search permission there, or choose \
                 another place",
                dir.display(),
                st.st_mode & 0o7777,
                st.st_uid,
                st.st_gid
            )));
        }
    }
    Ok(())
}

/// The id of the group named `name` (or written as a number).
pub fn group_id(name: &str) -> io::Result<u32> {
    if let Ok(gid) = name.parse::<u32>() {
        return Ok(gid);
    }
    if let Some(why) = super::lookup_refused() {
        return Err(io::Error::other(format!(
            "cannot look the group '{name}' up: {why} (a group's number needs no look-up)"
        )));
    }
    let c = CString::new(name).map_err(|_| io::Error::other("the group contains a NUL byte"))?;
    // SAFETY: an all-zero group is a valid out-buffer.
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut found: *mut libc::group = std::ptr::null_mut();
    // SAFETY: valid buffers of the lengths given; `found` is set to `grp`
    // or NULL.
    let rc = unsafe {
        libc::getgrnam_r(
            c.as_ptr(),
            &mut grp,
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        )
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    if found.is_null() {
        return Err(io::Error::other(format!("no group named '{name}'")));
    }
    Ok(grp.gr_gid)
}
