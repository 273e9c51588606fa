//! Dense typed ids. Each indexes exactly one table of a [`crate::Topology`], so a link id can
//! never be used to index the node table.

use std::fmt;

macro_rules! dense_id {
    ($($(#[$doc:meta])* $name:ident),*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);

        impl $name {
            #[inline]
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    )*};
}

dense_id!(
    /// A node: GPU, NIC, NVSwitch or network switch.
    NodeId,
    /// A directed link. Links come in pairs: `2i` and `2i + 1` are the two directions of one
    /// cable, so [`LinkId::reverse`] is free.
    LinkId,
    /// A host (server): the GPUs, NICs and NVSwitch of one chassis.
    HostId
);

impl LinkId {
    /// The other direction of the same cable.
    #[inline]
    pub const fn reverse(self) -> LinkId {
        LinkId(self.0 ^ 1)
    }
}
