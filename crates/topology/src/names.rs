//! Nodes found by name without a second copy of every name: a hash table of node ids whose
//! keys are read from the fabric's own name list.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use crate::ids::NodeId;

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
    pub fn insert(&mut self, names: &[String], id: NodeId) -> bool {
        let name = names[id.index()].as_str();
        let key = |n: &NodeId| hash(&names[n.index()]);
        match self
            .table
            .entry(hash(name), |n| names[n.index()] == name, key)
        {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert(id);
                true
            }
        }
    }

    pub fn get(&self, names: &[String], name: &str) -> Option<NodeId> {
        self.table
            .find(hash(name), |n| names[n.index()] == name)
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_name_and_refuses_a_second_of_one() {
        let names: Vec<String> = ["a", "b/gpu0", "b/gpu1", "a"]
            .iter()
            .map(|s| s.to_string())
            .collect();
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
