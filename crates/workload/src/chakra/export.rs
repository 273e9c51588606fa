//! [`Workload`] → Chakra traces: `<prefix>.<rank>.et` for every rank and `<prefix>.json`, the
//! communicator-group JSON. Every op becomes a node with its id, its label as name and its
//! dependencies as data dependencies, with the attributes other Chakra tools read (`is_cpu_op`,
//! `num_ops`, `tensor_size`, `comm_type`, `comm_size` in ASTRA-sim's convention, `pg_name`,
//! `comm_src` / `comm_dst` / `comm_tag`) and two of fabricsim's own for a lossless round trip
//! (`fabricsim_class`, `fabricsim_gemm_shape`).

use std::path::{Path, PathBuf};

use fabricsim_collectives::Collective;

use super::pb::{self, attribute_proto::Value, CollectiveCommType, NodeType};
use super::{write_atomic, write_file, ChakraError, RankTrace};
use crate::graph::{OpKind, Workload};

fn attr(name: &str, value: Value) -> pb::AttributeProto {
    pb::AttributeProto {
        name: name.to_string(),
        doc_string: String::new(),
        value: Some(value),
    }
}

fn comm_type(op: Collective) -> CollectiveCommType {
    match op {
        Collective::AllReduce => CollectiveCommType::AllReduce,
        Collective::Reduce => CollectiveCommType::Reduce,
        Collective::AllGather => CollectiveCommType::AllGather,
        Collective::Gather => CollectiveCommType::Gather,
        Collective::Scatter => CollectiveCommType::Scatter,
        Collective::Broadcast => CollectiveCommType::Broadcast,
        Collective::AllToAll | Collective::AllToAllV | Collective::SendRecv => {
            CollectiveCommType::AllToAll
        }
        Collective::ReduceScatter => CollectiveCommType::ReduceScatter,
        Collective::Barrier => CollectiveCommType::Barrier,
    }
}

/// Rank `rank`'s trace.
pub fn rank_trace(w: &Workload, rank: u32) -> RankTrace {
    let b = &w.ranks[rank as usize];
    let prog = &w.programs[b.program as usize];
    let mut nodes = Vec::with_capacity(prog.len());
    for (i, op) in prog.ops.iter().enumerate() {
        let mut attrs = Vec::new();
        let ty = match op.kind {
            OpKind::Compute(c) => {
                attrs.push(attr("is_cpu_op", Value::BoolVal(false)));
                attrs.push(attr("num_ops", Value::Int64Val(c.flops.round() as i64)));
                attrs.push(attr("tensor_size", Value::Int64Val(c.bytes.round() as i64)));
                attrs.push(attr(
                    "fabricsim_class",
                    Value::StringVal(c.class.name().into()),
                ));
                if let Some(s) = c.shape {
                    attrs.push(attr(
                        "fabricsim_gemm_shape",
                        Value::Uint32List(pb::Uint32List { values: s.to_vec() }),
                    ));
                }
                NodeType::CompNode
            }
            OpKind::Memory { bytes, store } => {
                attrs.push(attr("tensor_size", Value::Int64Val(bytes as i64)));
                if store {
                    NodeType::MemStoreNode
                } else {
                    NodeType::MemLoadNode
                }
            }
            OpKind::Collective { op, bytes, group } => {
                let g = &w.groups[b.groups[group as usize] as usize];
                let size = match op {
                    Collective::AllGather | Collective::Gather => {
                        bytes / g.ranks.len().max(1) as u64
                    }
                    _ => bytes,
                };
                attrs.push(attr("is_cpu_op", Value::BoolVal(false)));
                attrs.push(attr("comm_type", Value::Int64Val(comm_type(op) as i64)));
                attrs.push(attr("comm_size", Value::Int64Val(size as i64)));
                attrs.push(attr("pg_name", Value::StringVal(g.name.clone())));
                NodeType::CommCollNode
            }
            OpKind::Send { peer, bytes, tag } | OpKind::Recv { peer, bytes, tag } => {
                let send = matches!(op.kind, OpKind::Send { .. });
                let p = b.peers[peer as usize] as i32;
                attrs.push(attr("is_cpu_op", Value::BoolVal(false)));
                let (src, dst) = if send {
                    (rank as i32, p)
                } else {
                    (p, rank as i32)
                };
                attrs.push(attr("comm_src", Value::Int32Val(src)));
                attrs.push(attr("comm_dst", Value::Int32Val(dst)));
                attrs.push(attr("comm_size", Value::Int64Val(bytes as i64)));
                attrs.push(attr("comm_tag", Value::Int64Val(tag as i64)));
                if send {
                    NodeType::CommSendNode
                } else {
                    NodeType::CommRecvNode
                }
            }
            OpKind::Nop => NodeType::MetadataNode,
        };
        nodes.push(pb::Node {
            id: op.id,
            name: w.label(op).to_string(),
            r#type: ty as i32,
            ctrl_deps: Vec::new(),
            data_deps: prog
                .deps(i as u32)
                .iter()
                .map(|&d| prog.ops[d as usize].id)
                .collect(),
            start_time_micros: 0,
            duration_micros: match op.kind {
                OpKind::Compute(c) => c.duration.map_or(0, |d| d.0 / 1000),
                _ => 0,
            },
            inputs: None,
            outputs: None,
            attr: attrs,
        });
    }
    RankTrace {
        metadata: pb::GlobalMetadata {
            version: "0.0.4".into(),
            attr: vec![attr("schema", Value::StringVal("fabricsim".into()))],
        },
        nodes,
    }
}

/// Writes `w` as `<prefix>.<rank>.et` files and `<prefix>.json`; returns the paths written.
pub fn export(w: &Workload, prefix: &str) -> Result<Vec<PathBuf>, ChakraError> {
    let mut written = Vec::new();
    for r in 0..w.rank_count() as u32 {
        let path = PathBuf::from(format!("{prefix}.{r}.et"));
        write_file(&path, &rank_trace(w, r))?;
        written.push(path);
    }
    let groups: serde_json::Map<String, serde_json::Value> = w
        .groups
        .iter()
        .map(|g| (g.name.clone(), serde_json::json!(g.ranks)))
        .collect();
    let path = PathBuf::from(format!("{prefix}.json"));
    let text = serde_json::to_string_pretty(&groups).expect("a map of lists serialises");
    write_atomic(Path::new(&path), text.as_bytes())?;
    written.push(path);
    Ok(written)
}
