//! The `tracing` layer: each event that passes vlog's level for its target
//! is recorded as a C call with fields is, its fields as fields, and after
//! them the fields of the spans entered on its thread, innermost first.
//!
//! The layer decides for the whole subscriber (as a layer without a filter
//! of its own does): an event's callsite is enabled when vlog keeps its
//! target's records of its level, a span's whatever its level unless vlog
//! keeps nothing of its target (a span is context, as a thread's fields
//! are: an `info_span!` gives its fields to the warnings made inside it
//! when vlog keeps only warnings). So a disabled `tracing::debug!` costs
//! tracing's level check and its callsite's interest, one load each; both
//! follow vlog's levels when they change.
//!
//! ```
//! # use vlog as _;
//! use tracing_subscriber::prelude::*;
//!
//! tracing_subscriber::registry()
//!     .with(vlog_bridge::tracing::layer().expect("the tracing layer"))
//!     .init();
//! let span = tracing::info_span!("request", id = 7, path = "/vm/1");
//! let _entered = span.enter();
//! // Recorded with the fields bytes=512, id=7, path=/vm/1.
//! tracing::warn!(bytes = 512, "short read");
//! ```

use std::ffi::c_int;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::subscriber::Interest;
use tracing_core::{Event, Level, LevelFilter, Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use crate::fields::Parts;
use crate::record::{record, Call};
use crate::target::{enabled, named};
use crate::{levels, sys, Error};

/// The layer [`layer`] makes.
pub struct Layer {
    _private: (),
}

/// Whether a layer was made (and so tracing's interest follows vlog).
static MADE: AtomicBool = AtomicBool::new(false);

/// A layer for a subscriber built on `tracing_subscriber::Registry` (which
/// keeps the spans whose fields events carry). Errors: vlog refused to
/// tell its levels.
pub fn layer() -> Result<Layer, Error> {
    levels::watch()?;
    MADE.store(true, Ordering::Release);
    Ok(Layer { _private: () })
}

/// vlog's priority of a `tracing` level (`TRACE` is debug).
pub fn priority(level: &Level) -> c_int {
    match *level {
        Level::ERROR => sys::ERROR,
        Level::WARN => sys::WARN,
        Level::INFO => sys::INFO,
        _ => sys::DEBUG,
    }
}

/// vlog's levels changed: every callsite's interest is asked again, and
/// the max level with it.
pub(crate) fn levels_changed() {
    if MADE.load(Ordering::Acquire) {
        tracing_core::callsite::rebuild_interest_cache();
    }
}

/// Whether vlog wants the callsite: an event's when it keeps its level; a
/// span's when it keeps anything of its target (errors, at least).
fn wanted(metadata: &Metadata<'_>) -> bool {
    let prio = if metadata.is_span() {
        sys::ERROR
    } else {
        priority(metadata.level())
    };
    enabled(named(metadata.target()).source, prio)
}

/// A span's fields, kept with it in the registry.
#[derive(Default)]
struct SpanFields(Vec<(&'static str, SpanValue)>);

enum SpanValue {
    Num(i64),
    Text(String),
}

impl SpanFields {
    fn set(&mut self, name: &'static str, value: SpanValue) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.0.push((name, value)),
        }
    }

    fn put(&self, p: &mut Parts) {
        for (name, value) in &self.0 {
            match value {
                SpanValue::Num(n) => p.num(name, *n),
                SpanValue::Text(t) => p.text(name, |w| {
                    let _ = w.write_str(t);
                }),
            }
        }
    }
}

impl Visit for SpanFields {
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field.name(), SpanValue::Num(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match i64::try_from(value) {
            Ok(n) => self.record_i64(field, n),
            Err(_) => self.set(field.name(), SpanValue::Text(value.to_string())),
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.set(field.name(), SpanValue::Text(value.to_owned()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.set(field.name(), SpanValue::Text(format!("{value:?}")));
    }
}

/// An event's message and fields, into the record.
struct EventFields<'p>(&'p mut Parts);

impl Visit for EventFields<'_> {
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.num(field.name(), value);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match i64::try_from(value) {
            Ok(n) => self.0.num(field.name(), n),
            Err(_) => self.record_debug(field, &value),
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.message(|w| {
                let _ = w.write_str(value);
            });
        } else {
            self.0.text(field.name(), |w| {
                let _ = w.write_str(value);
            });
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.0.message(|w| {
                let _ = write!(w, "{value:?}");
            });
        } else {
            self.0.text(field.name(), |w| {
                let _ = write!(w, "{value:?}");
            });
        }
    }
}

impl<S> tracing_subscriber::Layer<S> for Layer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        // vlog not running (before it starts, or told so by
        // vlog_shutdown): asking it would start it; each call asks instead.
        if levels::lowest() == sys::UNKNOWN {
            return Interest::sometimes();
        }
        if wanted(metadata) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        wanted(metadata)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        // Spans of every level are wanted while anything is kept.
        Some(match levels::lowest() {
            sys::OFF => LevelFilter::OFF,
            _ => LevelFilter::TRACE,
        })
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = SpanFields::default();
        attrs.record(&mut fields);
        span.extensions_mut().insert(fields);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        // Formatted before the span's extensions are locked: a value whose
        // Debug logs inside this span reads them.
        let mut new = SpanFields::default();
        values.record(&mut new);
        let mut extensions = span.extensions_mut();
        if let Some(fields) = extensions.get_mut::<SpanFields>() {
            for (name, value) in new.0 {
                fields.set(name, value);
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let metadata = event.metadata();
        let named = named(metadata.target());
        let prio = priority(metadata.level());
        // Another layer's interest may have let it through.
        if !enabled(named.source, prio) {
            return;
        }
        let call = Call {
            target: metadata.target(),
            prio,
            file: metadata.file(),
            line: metadata.line(),
            module: metadata.module_path(),
        };
        record(named, &call, |p| {
            event.record(&mut EventFields(p));
            for span in ctx.event_scope(event).into_iter().flatten() {
                if let Some(fields) = span.extensions().get::<SpanFields>() {
                    fields.put(p);
                }
            }
        });
    }
}
