//! Node names: all of them back to back in one string ([`Names`]; a 24K-GPU fabric has 55,000,
//! one allocation rather than one each), and found by name without a second copy of every name
//! ([`NameIndex`], a hash table of node ids whose keys are read from the names).

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use crate::ids::NodeId;

/// Every node's name, in node order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Names {
    text: String,
    /// Where each name ends in `text`.
    ends: Vec<usize>,
}

impl Names {
    pub fn push(&mut self, name: &str) {
        self.text.push_str(name);
        self.ends.push(self.text.len());
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Node `i`'s name.
    pub fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        (0..self.len()).map(|i| self.get(i))
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct NameIndex {
    table: HashTable<NodeId>,
}

fn hash(name: &str) -> u64 {
    FxBuildHasher.hash_one(name)
}

impl NameIndex {
    pub fn with_capacity(n: usize) -> NameIndex {
        NameIndex {
            table: HashTable::with_capacity(n),
        }
    }

    /// Indexes `names[id]`; `false`, indexing nothing, if another node already has that name.
    pub fn insert(&mut self, names: &Names, id: NodeId) -> bool {
        let name = names.get(id.index());
        let key = |n: &NodeId| hash(names.get(n.index()));
        match self
            .table
            .entry(hash(name), |n| names.get(n.index()) == name, key)
        {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert(id);
                true
            }
        }
    }

    pub fn get(&self, names: &Names, name: &str) -> Option<NodeId> {
        self.table
            .find(hash(name), |n| names.get(n.index()) == name)
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_name_and_refuses_a_second_of_one() {
        let mut names = Names::default();
        for name in ["a", "b/gpu0", "b/gpu1", "a"] {
            names.push(name);
        }
        assert_eq!(
            names.iter().collect::<Vec<_>>(),
            ["a", "b/gpu0", "b/gpu1", "a"]
        );
        let mut index = NameIndex::with_capacity(2);
        assert!(index.insert(&names, NodeId(0)));
        assert!(index.insert(&names, NodeId(1)));
        assert!(index.insert(&names, NodeId(2)));
        assert!(!index.insert(&names, NodeId(3)), "a duplicate is refused");
        assert_eq!(index.get(&names, "a"), Some(NodeId(0)));
        assert_eq!(index.get(&names, "b/gpu1"), Some(NodeId(2)));
        assert_eq!(index.get(&names, "b/gpu2"), None);
    }
}
