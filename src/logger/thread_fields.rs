//! Fields a thread carries on every record it makes (a request's id, a W3C
//! trace context): set once while the thread serves a request, added to
//! each of its records as the call's own `VLOG_FIELD_*` fields are, under
//! the same name rules. Read only once a record is made: a call the filters
//! drop never looks at them.
//!
//! Each thread's are its own, in a fixed buffer of thread-local storage
//! with no destructor: setting one never allocates and takes no lock (a
//! signal handler may set them), a thread's fields go with it when it
//! exits, and a forked child, whose one thread is the forking one, keeps
//! them. A call that changes them runs marked inside vlog, as every entry
//! point does: a signal handler that logs while it runs is dropped, and one
//! that changes them while this thread is inside vlog is refused, so a
//! record never sees them half-changed.
//!
//! The set itself ([`FieldSet`]) is a relay's too: the daemon's own fields
//! on every record of a child's (`vlog_relay_field_set`).

use std::cell::{Cell, RefCell};

use crate::fields::{self, Field, Value, NAME_MAX};

/// At most this many fields per thread.
pub const MAX: usize = 8;
/// Their string values take at most this many bytes in all.
pub const VALUES_MAX: usize = 512;

#[derive(Clone, Copy)]
struct Slot {
    name: [u8; NAME_MAX],
    name_len: u8,
    /// An integer's value, or a string's place in `values`.
    int: Option<i64>,
    at: u16,
    len: u16,
}

const EMPTY: Slot = Slot {
    name: [0; NAME_MAX],
    name_len: 0,
    int: None,
    at: 0,
    len: 0,
};

/// A set of fields kept without allocating: a thread's, or a relay's own
/// (`vlog_relay_field_set`). At most [`MAX`], [`VALUES_MAX`] bytes of
/// string values; names checked by the rules of every field when set.
#[derive(Clone, Copy)]
pub struct FieldSet {
    slots: [Slot; MAX],
    n: usize,
    values: [u8; VALUES_MAX],
    used: usize,
}

/// The most bytes a thread's fields take encoded (`crate::fields`): the
/// count, then each with its name, tag and value.
pub const ENCODED_MAX: usize = 1 + MAX * (2 + NAME_MAX + 8) + VALUES_MAX;

/// A thread's fields as its records carry them, made when they change.
struct Encoded {
    bytes: [u8; ENCODED_MAX],
    len: usize,
}

thread_local! {
    static STORE: RefCell<FieldSet> = const { RefCell::new(FieldSet::new()) };
    /// Whether this thread has any: the one test the flight recorder's
    /// call makes.
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    /// Their encoding, which the flight recorder's call copies into each
    /// record as it is (the general way adds them to a call's own).
    static ENCODED: RefCell<Encoded> = const {
        RefCell::new(Encoded {
            bytes: [0; ENCODED_MAX],
            len: 0,
        })
    };
}

/// After a change of this thread's fields: whether it has any, and their
/// encoding (none when it is not whole, which cannot happen within
/// [`MAX`] and [`VALUES_MAX`]: the general way then makes each record's).
fn changed(store: &FieldSet) {
    ACTIVE.with(|a| a.set(store.n > 0));
    ENCODED.with(|encoded| {
        if let Ok(mut encoded) = encoded.try_borrow_mut() {
            encoded.len = fields::encode_whole_into(store.fields(), &mut encoded.bytes)
                .filter(|_| store.n > 0)
                .unwrap_or(0);
        }
    });
}

/// Runs `f` with this thread's fields encoded as a record carries them;
/// None when it has none, or they are being changed (a signal handler's
/// record, which is dropped before it gets here, as every record made
/// while its thread is inside vlog is).
pub fn with_encoded<R>(f: impl FnOnce(Option<&[u8]>) -> R) -> R {
    ENCODED.with(|encoded| match encoded.try_borrow() {
        Ok(encoded) if encoded.len > 0 => f(Some(&encoded.bytes[..encoded.len])),
        _ => f(None),
    })
}

/// Why a thread field was not set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    Name,
    Reserved,
    Full,
    TooLong,
    /// Changed from a signal handler while this thread was inside vlog.
    Busy,
    Traceparent,
}

impl Refused {
    /// For `vlog_last_error`: static text, so that a refusal allocates
    /// nothing.
    pub fn why(self) -> &'static str {
        match self {
            Refused::Name => {
                "not a valid field name: 1 to 64 of letters, digits, _ and . (journald's \
                 HTTP_METHOD or OpenTelemetry's http.method), starting with a letter, a dot \
                 never last nor beside another"
            }
            Refused::Reserved => "a name journald or vlog gives every entry itself",
            Refused::Full => "a thread has at most 8 fields",
            Refused::TooLong => "a thread's string values take at most 512 bytes in all",
            Refused::Busy => "called from a signal handler while this thread was inside vlog",
            Refused::Traceparent => {
                "not a W3C traceparent header (00-, 32 lowercase hex digits, -, 16, -, 2)"
            }
        }
    }
}

/// Runs `f`, a change of this thread's fields, marked inside vlog (a
/// signal handler that logs meanwhile is dropped), unless this thread is
/// inside vlog already (a handler that interrupted it): refused then, so
/// that a record being made never sees its fields change.
pub fn changing(f: impl FnOnce() -> Result<(), Refused>) -> Result<(), Refused> {
    if super::INSIDE.with(Cell::get) {
        return Err(Refused::Busy);
    }
    let _inside = super::mark_inside();
    f()
}

/// Sets TRACE_ID, SPAN_ID and TRACE_FLAGS from a W3C `traceparent` header
/// (see [`parse_traceparent`]): all three, or none.
pub fn set_traceparent(header: &[u8]) -> Result<(), Refused> {
    let (trace, span, flags) = parse_traceparent(header).ok_or(Refused::Traceparent)?;
    STORE.with(|store| {
        let mut store = store.try_borrow_mut().map_err(|_| Refused::Busy)?;
        let before = *store;
        let result = [
            (&b"TRACE_ID"[..], trace),
            (b"SPAN_ID", span),
            (b"TRACE_FLAGS", flags),
        ]
        .into_iter()
        .try_for_each(|(name, value)| store.set(name, Some(Value::Str(value))));
        if result.is_err() {
            *store = before;
        }
        changed(&store);
        result
    })
}

/// Whether this thread has fields.
#[inline(always)]
pub fn active() -> bool {
    ACTIVE.with(Cell::get)
}

/// Sets `name` to `value` on this thread (replacing its value), or removes
/// it (`value` None).
pub fn set(name: &[u8], value: Option<Value>) -> Result<(), Refused> {
    STORE.with(|store| {
        let mut store = store.try_borrow_mut().map_err(|_| Refused::Busy)?;
        let result = store.set(name, value);
        changed(&store);
        result
    })
}

/// Removes every field of this thread's.
pub fn clear() -> Result<(), Refused> {
    STORE.with(|store| {
        let mut store = store.try_borrow_mut().map_err(|_| Refused::Busy)?;
        store.clear();
        changed(&store);
        Ok(())
    })
}

/// Runs `f` with the call's `own` fields (at most `fields::MAX_FIELDS`)
/// followed by this thread's (those whose names the call's do not take
/// already), and how many of the list's last are the thread's: they keep
/// their room whatever the call's own take (`fields::Kept`).
pub fn with_added<R>(own: &[Field], f: impl FnOnce(&[Field], usize) -> R) -> R {
    STORE.with(|store| {
        let mut all = [Field {
            name: b"",
            value: Value::Int(0),
        }; fields::MAX_FIELDS + MAX];
        let mut n = own.len().min(fields::MAX_FIELDS);
        all[..n].copy_from_slice(&own[..n]);
        if own.len() > n {
            // (A record is being made: a call's fields beyond 32 are
            // counted as every field not kept is.)
            crate::stats::add(&crate::stats::BAD_FIELDS, (own.len() - n) as u64);
        }
        let Ok(store) = store.try_borrow() else {
            return f(&all[..n], 0);
        };
        let mut carried = 0;
        for field in store.fields() {
            if own.iter().any(|o| fields::same_name(o.name, field.name)) {
                continue;
            }
            all[n] = field;
            n += 1;
            carried += 1;
        }
        f(&all[..n], carried)
    })
}

impl FieldSet {
    pub const fn new() -> FieldSet {
        FieldSet {
            slots: [EMPTY; MAX],
            n: 0,
            values: [0; VALUES_MAX],
            used: 0,
        }
    }

    /// Sets `name` to `value` (replacing its value), or removes it
    /// (`value` None); nothing changes when it is refused.
    pub fn set(&mut self, name: &[u8], value: Option<Value>) -> Result<(), Refused> {
        if !fields::valid_name(name) {
            return Err(Refused::Name);
        }
        if fields::is_reserved(name) {
            return Err(Refused::Reserved);
        }
        let found = self.slots[..self.n]
            .iter()
            .position(|s| fields::same_name(&s.name[..s.name_len as usize], name));
        // The room the new value needs, counting what the old one frees.
        let freed = found.map_or(0, |i| {
            let s = &self.slots[i];
            if s.int.is_none() {
                s.len as usize
            } else {
                0
            }
        });
        if let Some(Value::Str(s)) = value {
            if self.used - freed + s.len() > VALUES_MAX {
                return Err(Refused::TooLong);
            }
        }
        if found.is_none() && value.is_some() && self.n == MAX {
            return Err(Refused::Full);
        }
        if let Some(i) = found {
            self.remove(i);
        }
        let Some(value) = value else {
            return Ok(());
        };
        let mut slot = EMPTY;
        slot.name[..name.len()].copy_from_slice(name);
        slot.name_len = name.len() as u8;
        match value {
            Value::Int(i) => slot.int = Some(i),
            // A thread's fields are text (the API has no bytes nor frames
            // to give).
            Value::Frames(_) => return Ok(()),
            Value::Str(s) | Value::Bytes(s) => {
                slot.at = self.used as u16;
                slot.len = s.len() as u16;
                self.values[self.used..][..s.len()].copy_from_slice(s);
                self.used += s.len();
            }
        }
        self.slots[self.n] = slot;
        self.n += 1;
        Ok(())
    }

    pub fn clear(&mut self) {
        self.n = 0;
        self.used = 0;
    }

    /// The fields, in the order they were (last) set.
    pub fn fields(&self) -> impl Iterator<Item = Field<'_>> {
        self.slots[..self.n].iter().map(|slot| Field {
            name: &slot.name[..slot.name_len as usize],
            value: match slot.int {
                Some(i) => Value::Int(i),
                None => Value::Str(&self.values[slot.at as usize..][..slot.len as usize]),
            },
        })
    }

    /// Removes slot `i`, its value's bytes closed up.
    fn remove(&mut self, i: usize) {
        let gone = self.slots[i];
        if gone.int.is_none() {
            let (at, len) = (gone.at as usize, gone.len as usize);
            self.values.copy_within(at + len..self.used, at);
            self.used -= len;
            for s in self.slots[..self.n].iter_mut() {
                if s.int.is_none() && s.at as usize > at {
                    s.at -= len as u16;
                }
            }
        }
        self.slots.copy_within(i + 1..self.n, i);
        self.n -= 1;
    }
}

/// Parses a W3C `traceparent` header (Trace Context, level 1):
/// `VERSION-TRACEID-PARENTID-FLAGS`, lowercase hex; version `ff` is not
/// valid, version `00` is exactly 55 bytes, a later version at least that
/// and a `-` after the flags; a trace id or parent id of zeros is not
/// valid. The trace id, the parent (span) id and the flags.
pub fn parse_traceparent(header: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let hex = |s: &[u8]| {
        s.iter()
            .all(|&b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let zeros = |s: &[u8]| s.iter().all(|&b| b == b'0');
    if header.len() < 55 {
        return None;
    }
    let (version, trace, parent, flags) = (
        &header[0..2],
        &header[3..35],
        &header[36..52],
        &header[53..55],
    );
    let dashes = header[2] == b'-' && header[35] == b'-' && header[52] == b'-';
    let rest_ok = match version {
        b"00" => header.len() == 55,
        _ => header.len() == 55 || header[55] == b'-',
    };
    (dashes
        && rest_ok
        && hex(version)
        && version != b"ff"
        && hex(trace)
        && hex(parent)
        && hex(flags)
        && !zeros(trace)
        && !zeros(parent))
    .then_some((trace, parent, flags))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_and_values() -> Vec<(String, String)> {
        with_added(&[], |all, _| {
            all.iter()
                .map(|f| {
                    let v = match f.value {
                        Value::Str(s) => String::from_utf8_lossy(s).into_owned(),
                        Value::Int(i) => i.to_string(),
                        Value::Bytes(b) => format!("{b:x?}"),
                        Value::Frames(_) => "(backtrace)".to_string(),
                    };
                    (String::from_utf8_lossy(f.name).into_owned(), v)
                })
                .collect()
        })
    }

    #[test]
    fn set_replace_remove_and_clear() {
        assert!(!active());
        set(b"REQUEST_ID", Some(Value::Str(b"r-1"))).unwrap();
        set(b"USER", Some(Value::Str(b"alice"))).unwrap();
        set(b"TRY", Some(Value::Int(3))).unwrap();
        set(b"REQUEST_ID", Some(Value::Str(b"r-22"))).unwrap();
        assert!(active());
        let got = names_and_values();
        let want = [("USER", "alice"), ("TRY", "3"), ("REQUEST_ID", "r-22")];
        assert_eq!(got.len(), 3, "{got:?}");
        for (n, v) in want {
            assert!(got.contains(&(n.into(), v.into())), "{got:?}");
        }
        set(b"USER", None).unwrap();
        set(b"NOT_SET", None).unwrap();
        assert_eq!(
            names_and_values(),
            [
                ("TRY".into(), "3".into()),
                ("REQUEST_ID".into(), "r-22".into())
            ]
        );
        // The call's own field of one name wins.
        let own = [Field {
            name: b"TRY",
            value: Value::Int(9),
        }];
        let merged = with_added(&own, |all, _| {
            all.iter()
                .map(|f| (f.name.to_vec(), f.value == Value::Int(9)))
                .collect::<Vec<_>>()
        });
        assert_eq!(
            merged,
            [(b"TRY".to_vec(), true), (b"REQUEST_ID".to_vec(), false)]
        );
        clear().unwrap();
        assert!(!active() && names_and_values().is_empty());
    }

    #[test]
    fn refusals() {
        assert_eq!(set(b"lower-case", Some(Value::Int(1))), Err(Refused::Name));
        assert_eq!(set(b"", Some(Value::Int(1))), Err(Refused::Name));
        assert_eq!(set(b"MESSAGE", Some(Value::Int(1))), Err(Refused::Reserved));
        assert_eq!(set(b"VLOG_X", None), Err(Refused::Reserved));
        assert_eq!(set(b"code.file", None), Err(Refused::Reserved));
        // OpenTelemetry's form and journald's are one name: the second
        // replaces the first's value.
        set(b"user.id", Some(Value::Int(1))).unwrap();
        set(b"USER_ID", Some(Value::Int(2))).unwrap();
        assert_eq!(
            names_and_values(),
            [("USER_ID".to_string(), "2".to_string())]
        );
        clear().unwrap();
        for i in 0..MAX {
            set(format!("F{i}").as_bytes(), Some(Value::Int(i as i64))).unwrap();
        }
        assert_eq!(set(b"ONE_MORE", Some(Value::Int(0))), Err(Refused::Full));
        // Replacing one of the eight is no more.
        set(b"F0", Some(Value::Str(b"x"))).unwrap();
        clear().unwrap();
        set(b"BIG", Some(Value::Str(&[b'a'; 500]))).unwrap();
        assert_eq!(
            set(b"MORE", Some(Value::Str(&[b'b'; 13]))),
            Err(Refused::TooLong)
        );
        // A value replaced frees its room first.
        set(b"BIG", Some(Value::Str(&[b'c'; 512]))).unwrap();
        set(b"MORE", Some(Value::Int(1))).unwrap();
        assert_eq!(names_and_values()[0].1, "c".repeat(512));
        clear().unwrap();
    }

    #[test]
    fn traceparent_sets_three_fields_or_none() {
        for i in 0..6 {
            set(format!("F{i}").as_bytes(), Some(Value::Int(i))).unwrap();
        }
        let header = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(set_traceparent(header), Err(Refused::Full));
        assert_eq!(names_and_values().len(), 6);
        set(b"F5", None).unwrap();
        set(b"F4", None).unwrap();
        set_traceparent(header).unwrap();
        let got = names_and_values();
        assert!(
            got.contains(&("SPAN_ID".into(), "00f067aa0ba902b7".into())),
            "{got:?}"
        );
        assert_eq!(set_traceparent(b"nonsense"), Err(Refused::Traceparent));
        clear().unwrap();
    }

    #[test]
    fn traceparent() {
        let ok = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let (trace, parent, flags) = parse_traceparent(ok).unwrap();
        assert_eq!(trace, b"4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(parent, b"00f067aa0ba902b7");
        assert_eq!(flags, b"01");
        // A later version may carry more after a dash.
        assert!(
            parse_traceparent(b"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more")
                .is_some()
        );
        for bad in [
            &b""[..],
            b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
            b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            b"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            b"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            b"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            b"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            b"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            b"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            b"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
            b"0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert!(
                parse_traceparent(bad).is_none(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
