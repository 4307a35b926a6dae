//! What the outputs have to say of themselves.

use crate::priority::Priority;

/// What an output has to say, as a record of vlog's own (source `vlog`):
/// a failure, or its end (warnings, on stderr too), or a file rotated
/// (`rotate`: information, in the ring and the outputs alone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub priority: Priority,
    pub text: String,
}

impl Said {
    pub fn info(text: String) -> Said {
        Said {
            priority: Priority::Info,
            text,
        }
    }
}

impl From<String> for Said {
    /// A warning.
    fn from(text: String) -> Said {
        Said {
            priority: Priority::Warning,
            text,
        }
    }
}

/// Both reports, when there are two.
pub fn either(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    }
}
