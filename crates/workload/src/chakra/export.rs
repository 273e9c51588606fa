//! [`Workload`] → Chakra traces: `<prefix>.<rank>.et` for every rank and `<prefix>.json`, the
//! communicator-group JSON. Every op becomes a node with its id, its label as name and its
//! dependencies as data dependencies, with the attributes other Chakra tools read (`is_cpu_op`,
//! `num_ops`, `tensor_size`, `comm_type`, `comm_size` in ASTRA-sim's convention, `pg_name`,
//! `comm_src` / `comm_dst` / `comm_tag`) and fabricsim's own for a lossless round trip
//! (`fabricsim_class`, `fabricsim_gemm_shape`, `fabricsim_group`, `fabricsim_duration_ns`).
//!
//! For ASTRA-sim as it reads traces: a communicator is named by a number (`pg_name` `"1"`,
//! `"2"`, …: group `i` of the workload is `i + 1`; ASTRA-sim parses the name as an integer), the
//! group JSON maps those numbers to ranks, and with a compute model given every compute node's
//! `duration_micros` is its kernel time under that model (rounded up to a whole µs), which
//! ASTRA-sim replays when its roofline is off. With its roofline on, ASTRA-sim times a kernel as
//! `num_ops / min(peak, bandwidth × num_ops / tensor_size)` (`Workload::issue_comp`), which is
//! 0/0 for a kernel with bytes and no FLOPs (a norm, an activation): such a kernel is written
//! with `num_ops` 1, whose roofline time is its bytes over the memory bandwidth, as a
//! memory-bound kernel's is. The FLOPs themselves are kept in `fabricsim_flops`, which
//! fabricsim reads back before `num_ops`. Each attribute has the type ASTRA-sim's feeder reads
//! it as (`et_feeder_node.cpp`): `num_ops`, `comm_type` and `comm_size` 64-bit signed,
//! `tensor_size` 64-bit unsigned, `comm_src`, `comm_dst` and `comm_tag` 32-bit signed; a value
//! of another type reads as 0 there.

use std::path::{Path, PathBuf};

use fabricsim_collectives::Collective;

use super::pb::{self, attribute_proto::Value, CollectiveCommType, NodeType};
use super::{write_atomic, write_file, ChakraError, RankTrace};
use crate::compute::ComputeModel;
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

/// The `pg_name` of group `g` (an index into [`Workload::groups`]): its number from 1 (`"0"` and
/// an empty name mean every rank to Chakra's readers).
fn pg_name(g: u32) -> String {
    (g + 1).to_string()
}

/// `num_ops` as ASTRA-sim's roofline needs it: the FLOPs, or 1 for a kernel with bytes and
/// fewer than one FLOP, whose roofline time is then its bytes over the memory bandwidth (0/0
/// otherwise). A kernel with neither is skipped by ASTRA-sim unless it has a duration.
pub fn roofline_ops(flops: f64, bytes: f64) -> i64 {
    let ops = flops.round() as i64;
    if ops == 0 && bytes >= 1.0 {
        1
    } else {
        ops
    }
}

/// Rank `rank`'s trace; with `model`, compute nodes carry their kernel time as
/// `duration_micros`.
pub fn rank_trace(w: &Workload, rank: u32, model: Option<&ComputeModel>) -> RankTrace {
    let b = &w.ranks[rank as usize];
    let prog = &w.programs[b.program as usize];
    let mut nodes = Vec::with_capacity(prog.len());
    for (i, op) in prog.ops.iter().enumerate() {
        let mut attrs = Vec::new();
        let ty = match op.kind {
            OpKind::Compute(c) => {
                attrs.push(attr("is_cpu_op", Value::BoolVal(false)));
                attrs.push(attr(
                    "num_ops",
                    Value::Int64Val(roofline_ops(c.flops, c.bytes)),
                ));
                attrs.push(attr("fabricsim_flops", Value::DoubleVal(c.flops)));
                attrs.push(attr(
                    "tensor_size",
                    Value::Uint64Val(c.bytes.round() as u64),
                ));
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
                if let Some(d) = c.duration {
                    attrs.push(attr("fabricsim_duration_ns", Value::Uint64Val(d.0)));
                }
                NodeType::CompNode
            }
            OpKind::Memory { bytes, store } => {
                attrs.push(attr("tensor_size", Value::Uint64Val(bytes)));
                if store {
                    NodeType::MemStoreNode
                } else {
                    NodeType::MemLoadNode
                }
            }
            OpKind::Collective { op, bytes, group } => {
                let gi = b.groups[group as usize];
                let g = &w.groups[gi as usize];
                let size = match op {
                    Collective::AllGather | Collective::Gather => {
                        bytes / g.ranks.len().max(1) as u64
                    }
                    _ => bytes,
                };
                attrs.push(attr("is_cpu_op", Value::BoolVal(false)));
                attrs.push(attr("comm_type", Value::Int64Val(comm_type(op) as i64)));
                attrs.push(attr("comm_size", Value::Int64Val(size as i64)));
                attrs.push(attr("pg_name", Value::StringVal(pg_name(gi))));
                attrs.push(attr("fabricsim_group", Value::StringVal(g.name.clone())));
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
                // ASTRA-sim reads a 32-bit tag; a larger one is kept whole for fabricsim.
                let tag = match i32::try_from(tag) {
                    Ok(t) => Value::Int32Val(t),
                    Err(_) => Value::Int64Val(tag as i64),
                };
                attrs.push(attr("comm_tag", tag));
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
            duration_micros: match (op.kind, model) {
                (OpKind::Compute(c), Some(m)) => m.time(&c).0.div_ceil(1000),
                (OpKind::Compute(c), None) => c.duration.map_or(0, |d| d.0.div_ceil(1000)),
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
    export_with(w, prefix, None)
}

/// [`export`], with every compute node's time under `model` as its `duration_micros`.
pub fn export_with(
    w: &Workload,
    prefix: &str,
    model: Option<&ComputeModel>,
) -> Result<Vec<PathBuf>, ChakraError> {
    let mut written = Vec::new();
    for r in 0..w.rank_count() as u32 {
        let path = PathBuf::from(format!("{prefix}.{r}.et"));
        write_file(&path, &rank_trace(w, r, model))?;
        written.push(path);
    }
    let groups: serde_json::Map<String, serde_json::Value> = (0..w.groups.len() as u32)
        .map(|g| (pg_name(g), serde_json::json!(w.groups[g as usize].ranks)))
        .collect();
    let path = PathBuf::from(format!("{prefix}.json"));
    let text = serde_json::to_string_pretty(&groups).expect("a map of lists serialises");
    write_atomic(Path::new(&path), text.as_bytes())?;
    written.push(path);
    Ok(written)
}
