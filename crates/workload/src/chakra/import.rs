//! Chakra traces → [`Workload`].
//!
//! - Node types: `COMP_NODE` is a kernel: a FLOP count (`num_ops`) and bytes (`tensor_size`)
//!   go through the roofline; otherwise its `duration_micros` is its time. CPU ops
//!   (`is_cpu_op`, compute or communication: a CPU-side `c10d::` call whose GPU kernel is its own
//!   node) and `METADATA` / `INVALID` nodes are dependency points with no duration: fabricsim
//!   models the GPU timeline. `MEM_LOAD` / `MEM_STORE` move `tensor_size` bytes.
//!   `COMM_COLL_NODE` is a collective (`comm_type`, `comm_size`, `pg_name`), `COMM_SEND_NODE`
//!   / `COMM_RECV_NODE` point-to-point (`comm_dst` / `comm_src`, `comm_size`, `comm_tag`).
//! - Attributes are read tolerantly: any integer kind, a bool, or an integral double.
//! - Sizes follow ASTRA-sim: `comm_size` is the per-rank buffer, except all-gather and gather
//!   where it is the per-rank shard (fabricsim's size is the gathered buffer: `comm_size × n`).
//! - `pg_name` names a group of the communicator-group JSON (`{"name": [ranks]}`); empty, `"0"`
//!   or absent means all ranks. Without a JSON, a group name that is an integer list is not
//!   guessed: it is an error naming the node.
//! - Control and data dependencies both order ops. Dependencies on ids absent from the file are
//!   dropped and reported as [`Warning`]s, and so are dependencies that close a cycle (see
//!   [`crate::graph::Program::break_cycles`]; converted PyTorch traces have them).
//! - Ranks that disagree (a send without its receive, sizes that differ, members of a group
//!   issuing different collectives) are reported as warnings too ([`super::consistency`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fabricsim_collectives::Collective;
use fabricsim_topology::units::MAX_QUANTITY;
use fabricsim_topology::Nanos;
use rustc_hash::FxHashMap as HashMap;

use super::pb::{CollectiveCommType, NodeType};
use super::view::{self, attribute::Value};
use super::{io, rank_files, read_view, ChakraError, MAX_NODES};
use crate::graph::{Binding, Compute, Group, Op, OpClass, OpKind, Program, Workload};

/// Something the import dropped or assumed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub path: PathBuf,
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

/// An attribute's value as an integer, whatever integer kind the producer chose.
fn attr_int(a: &view::Attribute) -> Option<i64> {
    Some(match a.value.as_ref()? {
        Value::Int32Val(v) | Value::Sint32Val(v) | Value::Sfixed32Val(v) => i64::from(*v),
        Value::Int64Val(v) | Value::Sint64Val(v) | Value::Sfixed64Val(v) => *v,
        Value::Uint32Val(v) | Value::Fixed32Val(v) => i64::from(*v),
        Value::Uint64Val(v) | Value::Fixed64Val(v) => i64::try_from(*v).ok()?,
        Value::BoolVal(v) => i64::from(*v),
        Value::DoubleVal(v) if v.fract() == 0.0 => *v as i64,
        Value::FloatVal(v) if v.fract() == 0.0 => *v as i64,
        _ => return None,
    })
}

fn attr_f64(a: &view::Attribute) -> Option<f64> {
    match a.value.as_ref()? {
        Value::DoubleVal(v) => Some(*v),
        Value::FloatVal(v) => Some(f64::from(*v)),
        _ => attr_int(a).map(|v| v as f64),
    }
}

/// A string value (checked to be UTF-8 when the file was read).
fn attr_str(a: &view::Attribute) -> Option<&str> {
    match a.value.as_ref()? {
        Value::StringVal(s) => std::str::from_utf8(s).ok(),
        _ => None,
    }
}

struct Attrs<'a>(&'a [view::Attribute]);

impl Attrs<'_> {
    fn get(&self, name: &str) -> Option<&view::Attribute> {
        self.0.iter().find(|a| a.name.as_ref() == name.as_bytes())
    }
    fn int(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(attr_int)
    }
    fn f64(&self, name: &str) -> Option<f64> {
        self.get(name).and_then(attr_f64)
    }
    fn str(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(attr_str)
    }
}

fn collective(t: i64) -> Option<Collective> {
    Some(
        match CollectiveCommType::try_from(i32::try_from(t).ok()?).ok()? {
            CollectiveCommType::AllReduce => Collective::AllReduce,
            CollectiveCommType::Reduce => Collective::Reduce,
            CollectiveCommType::AllGather => Collective::AllGather,
            CollectiveCommType::Gather => Collective::Gather,
            CollectiveCommType::Scatter => Collective::Scatter,
            CollectiveCommType::Broadcast => Collective::Broadcast,
            CollectiveCommType::AllToAll => Collective::AllToAll,
            CollectiveCommType::ReduceScatter | CollectiveCommType::ReduceScatterBlock => {
                Collective::ReduceScatter
            }
            CollectiveCommType::Barrier => Collective::Barrier,
        },
    )
}

/// Reads a communicator-group JSON: `{"name": [rank, ...], ...}`.
pub fn read_groups(path: &Path) -> Result<BTreeMap<String, Vec<u32>>, ChakraError> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| ChakraError::Groups {
            path: path.to_path_buf(),
            what: format!("not JSON: {e}"),
        })?;
    let obj = value.as_object().ok_or_else(|| ChakraError::Groups {
        path: path.to_path_buf(),
        what: "expected an object mapping group names to rank lists".into(),
    })?;
    let mut out = BTreeMap::new();
    for (name, ranks) in obj {
        let list = ranks
            .as_array()
            .and_then(|a| {
                a.iter()
                    .map(|r| r.as_u64().and_then(|r| u32::try_from(r).ok()))
                    .collect::<Option<Vec<u32>>>()
            })
            .ok_or_else(|| ChakraError::Groups {
                path: path.to_path_buf(),
                what: format!("group `{name}`: expected a list of rank numbers"),
            })?;
        out.insert(name.clone(), list);
    }
    Ok(out)
}

/// Imports the trace `<prefix>.<rank>.et` with an optional communicator-group JSON. The files
/// are read one at a time, each rank's nodes dropped once its program is built, and ranks whose
/// programs are identical (up to their peers and groups, which their bindings hold) share one.
pub fn import(
    prefix: &str,
    groups: Option<&Path>,
) -> Result<(Workload, Vec<Warning>), ChakraError> {
    let files = rank_files(prefix)?;
    let named = match groups {
        Some(p) => read_groups(p)?,
        None => BTreeMap::new(),
    };
    let name = Path::new(prefix)
        .file_name()
        .map_or(prefix.to_string(), |n| n.to_string_lossy().into_owned());
    let mut importer = Importer::new(&name, files.len() as u32, &named, groups);
    let mut nodes = Vec::new();
    for path in &files {
        read_view(path, MAX_NODES, &mut nodes)?;
        importer.add_rank(path, &nodes)?;
    }
    importer.finish(&files)
}

/// A workload being built from rank traces, one rank at a time.
struct Importer<'a> {
    /// Ranks in the trace.
    n: u32,
    named: &'a BTreeMap<String, Vec<u32>>,
    groups_file: Option<&'a Path>,
    w: Workload,
    warnings: Vec<Warning>,
    labels: HashMap<String, u32>,
    group_index: HashMap<String, u32>,
    /// Programs by content fingerprint, so identical ones are kept once.
    programs: HashMap<u64, Vec<u32>>,
}

impl<'a> Importer<'a> {
    fn new(
        name: &str,
        n: u32,
        named: &'a BTreeMap<String, Vec<u32>>,
        groups_file: Option<&'a Path>,
    ) -> Importer<'a> {
        Importer {
            n,
            named,
            groups_file,
            w: Workload {
                name: name.to_string(),
                ..Workload::default()
            },
            warnings: Vec::new(),
            labels: HashMap::default(),
            group_index: HashMap::default(),
            programs: HashMap::default(),
        }
    }

    /// Converts the next rank's nodes (read from `path`) into its program and binding.
    fn add_rank(&mut self, path: &Path, nodes: &[view::Node]) -> Result<(), ChakraError> {
        let n = self.n;
        let node_err = |id: u64, what: String| ChakraError::Node {
            path: path.to_path_buf(),
            id,
            what,
        };
        let mut index: HashMap<u64, u32> =
            HashMap::with_capacity_and_hasher(nodes.len(), Default::default());
        for (i, node) in nodes.iter().enumerate() {
            if index.insert(node.id, i as u32).is_some() {
                return Err(node_err(node.id, "a second node with this id".into()));
            }
        }
        let mut prog = Program::new();
        let mut binding = Binding::default();
        let mut peer_slot: HashMap<u32, u16> = HashMap::default();
        let mut group_slot: HashMap<u32, u16> = HashMap::default();
        let (mut missing, mut first_missing, mut self_deps) = (0usize, Vec::new(), 0usize);
        let mut deps = Vec::new();
        for node in nodes {
            let attrs = Attrs(&node.attr);
            let size = |what: &str| -> Result<u64, ChakraError> {
                let v = attrs.int("comm_size").unwrap_or(0);
                let v = u64::try_from(v)
                    .map_err(|_| node_err(node.id, format!("{what}: comm_size {v} is negative")))?;
                if v > MAX_QUANTITY {
                    return Err(node_err(
                        node.id,
                        format!("{what}: comm_size {v} is above 2^62 bytes"),
                    ));
                }
                Ok(v)
            };
            let mut peer = |attr: &str, binding: &mut Binding| -> Result<u16, ChakraError> {
                let p = attrs
                    .int(attr)
                    .ok_or_else(|| node_err(node.id, format!("missing `{attr}`")))?;
                let p = u32::try_from(p).ok().filter(|&p| p < n).ok_or_else(|| {
                    node_err(
                        node.id,
                        format!("`{attr}` = {p}, but the trace has {n} ranks"),
                    )
                })?;
                Ok(*peer_slot.entry(p).or_insert_with(|| {
                    binding.peers.push(p);
                    binding.peers.len() as u16 - 1
                }))
            };
            let ty = NodeType::try_from(node.r#type).unwrap_or(NodeType::InvalidNode);
            let cpu = attrs.int("is_cpu_op").unwrap_or(0) != 0;
            let kind = match ty {
                NodeType::CompNode
                | NodeType::CommCollNode
                | NodeType::CommSendNode
                | NodeType::CommRecvNode
                    if cpu =>
                {
                    OpKind::Nop
                }
                NodeType::CompNode => {
                    // fabricsim's own export keeps the FLOPs apart from ASTRA-sim's `num_ops`.
                    let flops = attrs
                        .f64("fabricsim_flops")
                        .or_else(|| attrs.f64("num_ops"))
                        .unwrap_or(0.0)
                        .max(0.0);
                    let bytes = attrs.f64("tensor_size").unwrap_or(0.0).max(0.0);
                    let class = match attrs.str("fabricsim_class") {
                        Some("gemm") => OpClass::Gemm,
                        Some("attention") => OpClass::Attention,
                        Some("attention-bwd") => OpClass::AttentionBackward,
                        Some("elementwise") => OpClass::Elementwise,
                        _ => OpClass::Other,
                    };
                    let shape = attrs
                        .get("fabricsim_gemm_shape")
                        .and_then(|a| match &a.value {
                            Some(Value::Uint32List(l)) if l.values.len() == 3 => {
                                Some([l.values[0], l.values[1], l.values[2]])
                            }
                            _ => None,
                        });
                    OpKind::Compute(Compute {
                        class,
                        flops,
                        bytes,
                        shape,
                        // fabricsim's own exports keep the exact time, if the op had one, apart:
                        // their `duration_micros` is the compute model's, for other readers.
                        duration: if attrs.str("fabricsim_class").is_some() {
                            attrs
                                .int("fabricsim_duration_ns")
                                .and_then(|d| u64::try_from(d).ok())
                                .map(Nanos)
                        } else {
                            (node.duration_micros > 0)
                                .then(|| Nanos(node.duration_micros.saturating_mul(1000)))
                        },
                    })
                }
                NodeType::MemLoadNode | NodeType::MemStoreNode => OpKind::Memory {
                    bytes: attrs
                        .int("tensor_size")
                        .and_then(|v| u64::try_from(v).ok())
                        .unwrap_or(0),
                    store: ty == NodeType::MemStoreNode,
                },
                NodeType::CommSendNode => OpKind::Send {
                    peer: peer("comm_dst", &mut binding)?,
                    bytes: size("send")?,
                    tag: attrs.int("comm_tag").unwrap_or(0) as u64,
                },
                NodeType::CommRecvNode => OpKind::Recv {
                    peer: peer("comm_src", &mut binding)?,
                    bytes: size("recv")?,
                    tag: attrs.int("comm_tag").unwrap_or(0) as u64,
                },
                NodeType::CommCollNode => {
                    let t = attrs.int("comm_type").ok_or_else(|| {
                        node_err(node.id, "collective without `comm_type`".into())
                    })?;
                    let op = collective(t)
                        .ok_or_else(|| node_err(node.id, format!("unknown comm_type {t}")))?;
                    let pg = attrs.str("pg_name").unwrap_or("");
                    let members: Vec<u32> = if pg.is_empty()
                        || (pg == "0" && !self.named.contains_key("0"))
                    {
                        (0..n).collect()
                    } else {
                        self.named.get(pg).cloned().ok_or_else(|| {
                            node_err(
                                node.id,
                                match self.groups_file {
                                    Some(g) => {
                                        format!("pg_name `{pg}` is not a group of {}", g.display())
                                    }
                                    None => format!(
                                        "pg_name `{pg}` needs a communicator-group JSON (--groups)"
                                    ),
                                },
                            )
                        })?
                    };
                    if let Some(&bad) = members.iter().find(|&&r| r >= n) {
                        return Err(node_err(
                            node.id,
                            format!("group `{pg}` names rank {bad}, but the trace has {n} ranks"),
                        ));
                    }
                    let key = if pg.is_empty() {
                        "0".to_string()
                    } else {
                        pg.to_string()
                    };
                    let shown = attrs.str("fabricsim_group");
                    let g = *self.group_index.entry(key.clone()).or_insert_with(|| {
                        self.w.groups.push(Group {
                            name: if let Some(name) = shown {
                                name.to_string()
                            } else if key == "0" && !self.named.contains_key("0") {
                                "world".into()
                            } else {
                                key.clone()
                            },
                            ranks: members.clone(),
                        });
                        self.w.groups.len() as u32 - 1
                    });
                    let slot = *group_slot.entry(g).or_insert_with(|| {
                        binding.groups.push(g);
                        binding.groups.len() as u16 - 1
                    });
                    let raw = size("collective")?;
                    let bytes = match op {
                        Collective::AllGather | Collective::Gather => raw
                            .checked_mul(members.len() as u64)
                            .filter(|&b| b <= MAX_QUANTITY)
                            .ok_or_else(|| {
                                node_err(
                                    node.id,
                                    format!(
                                        "comm_size {raw} over {} ranks is above 2^62 bytes",
                                        members.len()
                                    ),
                                )
                            })?,
                        _ => raw,
                    };
                    OpKind::Collective {
                        op,
                        bytes,
                        group: slot,
                    }
                }
                NodeType::MetadataNode | NodeType::InvalidNode => OpKind::Nop,
            };
            deps.clear();
            for d in node.ctrl_deps.iter().chain(&node.data_deps) {
                if *d == node.id {
                    self_deps += 1;
                    continue;
                }
                match index.get(d) {
                    Some(&i) if !deps.contains(&i) => deps.push(i),
                    Some(_) => {}
                    None => {
                        missing += 1;
                        if first_missing.len() < 3 {
                            first_missing.push(*d);
                        }
                    }
                }
            }
            let name = std::str::from_utf8(&node.name).unwrap_or_default();
            let label = self.w.intern(name, &mut self.labels);
            prog.push(
                Op {
                    id: node.id,
                    label,
                    kind,
                },
                &deps,
            );
        }
        if missing > 0 {
            self.warnings.push(Warning {
                path: path.to_path_buf(),
                message: format!(
                    "dropped {missing} dependencies on node ids absent from the file (first: {})",
                    first_missing
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        if self_deps > 0 {
            self.warnings.push(Warning {
                path: path.to_path_buf(),
                message: format!("dropped {self_deps} dependencies of nodes on themselves"),
            });
        }
        let broken = prog.break_cycles();
        if broken > 0 {
            self.warnings.push(Warning {
                path: path.to_path_buf(),
                message: format!(
                    "dropped {broken} dependencies on later nodes that closed dependency cycles"
                ),
            });
        }
        binding.program = self.keep(prog);
        self.w.ranks.push(binding);
        Ok(())
    }

    /// Adds `prog`, or finds an identical program already added; returns its index.
    fn keep(&mut self, prog: Program) -> u32 {
        let same = self.programs.entry(prog.fingerprint()).or_default();
        if let Some(&p) = same.iter().find(|&&p| self.w.programs[p as usize] == prog) {
            return p;
        }
        self.w.programs.push(prog);
        let p = self.w.programs.len() as u32 - 1;
        same.push(p);
        p
    }

    fn finish(self, files: &[PathBuf]) -> Result<(Workload, Vec<Warning>), ChakraError> {
        let (w, mut warnings) = (self.w, self.warnings);
        w.validate()?;
        warnings.extend(super::consistency::check(&w, files));
        Ok((w, warnings))
    }
}
