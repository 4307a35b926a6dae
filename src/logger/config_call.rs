//! Configuration calls: under the logger's lock, refused when nested, and
//! for those that have the outputs write, with little left to write under
//! the lock.

use super::{enter, printer, Entered, State};
use crate::error::ConfigError;

/// `enter` for a configuration call: a call nested inside vlog on this
/// thread is refused with an error saying so.
pub fn configure<R>(
    f: impl FnOnce(&mut State) -> Result<R, ConfigError>,
) -> Result<R, ConfigError> {
    configure_with(false, f)
}

/// [`configure`] for a call that has the outputs write what waits for them
/// with the lock held (`State::printer`: it replaces the outputs, the ring
/// or an error's context, or reopens), which every thread that logs waits
/// for: so it has them write it first without the lock, what may wait
/// bounded meanwhile (`Ring::bound_unprinted`), and little is left for the
/// lock however large the ring (8 MiB of lines under it made a logging
/// call wait 20 ms). The other calls write nothing (a call that passed no
/// cancellation point is not where a cancel acts).
pub fn configure_writing<R>(
    f: impl FnOnce(&mut State) -> Result<R, ConfigError>,
) -> Result<R, ConfigError> {
    configure_with(true, f)
}

fn configure_with<R>(
    writes: bool,
    f: impl FnOnce(&mut State) -> Result<R, ConfigError>,
) -> Result<R, ConfigError> {
    let nested = || {
        Err(ConfigError::new(
            "called while this thread was already inside vlog (from a signal handler that \
             interrupted it?): nothing was done; call it again outside the handler",
        ))
    };
    if writes {
        let Some(mut entered) = Entered::new() else {
            return nested();
        };
        entered.state().configuring(true);
        entered.leave_and_write(printer::caller::write_pending);
    }
    // (Not refused if the first was not: this thread is not inside vlog.)
    let result = enter(|s| {
        let result = f(s);
        if writes {
            s.configuring(false);
        }
        s.after_configuration();
        result
    })
    .unwrap_or_else(nested);
    super::watchers::tell();
    result
}
