//! The options of every transport in one map keyed by their type ([`TransportOptions`]), so
//! that a transport reads its own (`options.get::<NfsOptions>()`) and a new transport's options
//! need no field anywhere else. Below the transports and their knobs, which both use it.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// The options of every transport, each under its own type: a transport reads its own with
/// [`TransportOptions::get`], and gets its default when none were set.
#[derive(Clone, Default)]
pub struct TransportOptions {
    by_type: HashMap<TypeId, (&'static str, Arc<dyn Any + Send + Sync>)>,
}

impl TransportOptions {
    /// No options set: every transport uses its defaults.
    pub fn new() -> TransportOptions {
        TransportOptions::default()
    }

    /// These options with `value` set (replacing one of the same type).
    pub fn with<T: Any + Send + Sync>(mut self, value: T) -> TransportOptions {
        self.set(value);
        self
    }

    /// Sets `value`, replacing one of the same type.
    pub fn set<T: Any + Send + Sync>(&mut self, value: T) {
        self.by_type.insert(TypeId::of::<T>(), (std::any::type_name::<T>(), Arc::new(value)));
    }

    /// The options of type `T`, if set.
    pub fn get_ref<T: Any>(&self) -> Option<&T> {
        self.by_type.get(&TypeId::of::<T>()).and_then(|(_, value)| value.downcast_ref())
    }

    /// The options of type `T`, or its default.
    pub fn get<T: Any + Clone + Default>(&self) -> T {
        self.get_ref::<T>().cloned().unwrap_or_default()
    }
}

impl fmt::Debug for TransportOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.by_type.values().map(|(name, _)| *name).collect();
        names.sort_unstable();
        f.debug_struct("TransportOptions").field("set", &names).finish()
    }
}
