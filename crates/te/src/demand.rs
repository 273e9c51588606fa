//! Traffic matrices: what TE places. A demand is a rate from one GPU to another.
//!
//! The demand CSV (`fabricsim te solve --demand FILE`):
//!
//! ```text
//! # src,dst,rate   (or src,dst,bytes)
//! src,dst,rate
//! host0/gpu0,host9/gpu0,400Gbps
//! host1/gpu0,host9/gpu0,25GB/s
//! ```
//!
//! `src` and `dst` are GPU names. With a `rate` column each row is a rate (`400Gbps`,
//! `50GB/s`; a bare number is bytes per second). With a `bytes` column each row is a volume
//! (`1GiB`) and the matrix is scaled to rates: by one factor, the largest at which no GPU
//! sends or receives faster than its NIC links to the fabric carry — the load a job offers
//! when its busiest GPU runs at line rate. Rows for the same pair add up. The header line is
//! required; `#` starts a comment line.

use fabricsim_topology::text::data_lines;
use fabricsim_topology::{Bytes, NodeId, NodeKind, Topology};

/// A rate from one GPU to another, in bytes per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Demand {
    pub src: NodeId,
    pub dst: NodeId,
    pub rate: f64,
}

/// Demands, one per (source, destination) pair, in pair order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrafficMatrix {
    pub demands: Vec<Demand>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DemandError {
    #[error("line {line}: {message}")]
    Parse { line: usize, message: String },
    #[error("the demand is empty; expected at least one row")]
    Empty,
}

impl TrafficMatrix {
    /// Demands from rates (bytes/s); rows for the same pair add up, zero rates are dropped.
    pub fn from_rates(rows: impl IntoIterator<Item = (NodeId, NodeId, f64)>) -> Self {
        let mut demands: Vec<Demand> = rows
            .into_iter()
            .filter(|&(s, d, r)| s != d && r > 0.0)
            .map(|(src, dst, rate)| Demand { src, dst, rate })
            .collect();
        demands.sort_by_key(|d| (d.src, d.dst));
        let mut merged: Vec<Demand> = Vec::with_capacity(demands.len());
        for d in demands {
            match merged.last_mut() {
                Some(m) if (m.src, m.dst) == (d.src, d.dst) => m.rate += d.rate,
                _ => merged.push(d),
            }
        }
        TrafficMatrix { demands: merged }
    }

    /// Demands from volumes, scaled so that the busiest GPU sends or receives at the rate of
    /// its NIC links to the fabric (see the module docs).
    pub fn from_bytes(
        topo: &Topology,
        rows: impl IntoIterator<Item = (NodeId, NodeId, u64)>,
    ) -> Self {
        let rows: Vec<(NodeId, NodeId, u64)> = rows.into_iter().collect();
        // Sums in 128 bits: rows of up to 2^64 − 1 bytes each cannot wrap.
        let mut out = vec![0u128; topo.node_count()];
        let mut inn = vec![0u128; topo.node_count()];
        for &(s, d, b) in &rows {
            out[s.index()] += u128::from(b);
            inn[d.index()] += u128::from(b);
        }
        let mut scale = f64::INFINITY;
        for (n, (&o, &i)) in out.iter().zip(&inn).enumerate() {
            let busiest = o.max(i);
            if busiest > 0 {
                let nic = injection(topo, NodeId(n as u32));
                scale = scale.min(nic / busiest as f64);
            }
        }
        if !scale.is_finite() {
            return TrafficMatrix::default();
        }
        TrafficMatrix::from_rates(rows.into_iter().map(|(s, d, b)| (s, d, b as f64 * scale)))
    }

    /// Reads the demand CSV (module docs), resolving GPU names in `topo`.
    pub fn read_csv(text: &str, topo: &Topology) -> Result<Self, DemandError> {
        let mut rows = data_lines(text);
        let Some((hline, header)) = rows.next() else {
            return Err(DemandError::Empty);
        };
        let columns: Vec<&str> = header.split(',').map(str::trim).collect();
        let by_rate = match columns.as_slice() {
            ["src", "dst", "rate"] => true,
            ["src", "dst", "bytes"] => false,
            _ => {
                return Err(DemandError::Parse {
                    line: hline,
                    message: format!(
                        "expected the header src,dst,rate or src,dst,bytes, found `{header}`"
                    ),
                })
            }
        };
        let mut rates = Vec::new();
        let mut volumes = Vec::new();
        for (line, row) in rows {
            let err = |message: String| DemandError::Parse { line, message };
            let cells: Vec<&str> = row.split(',').map(str::trim).collect();
            if cells.len() != 3 {
                return Err(err(format!("expected 3 columns, found {}", cells.len())));
            }
            let gpu = |col: &str, name: &str| match topo.node_by_name(name) {
                Some(n) if topo.kind(n) == NodeKind::Gpu => Ok(n),
                Some(_) => Err(err(format!("{col}: `{name}` is not a GPU"))),
                None => Err(err(format!("{col}: the fabric has no node `{name}`"))),
            };
            let (src, dst) = (gpu("src", cells[0])?, gpu("dst", cells[1])?);
            if src == dst {
                return Err(err(format!("src and dst are both `{}`", cells[0])));
            }
            if by_rate {
                let rate = match cells[2].parse::<f64>() {
                    Ok(r) if r.is_finite() && r >= 0.0 => r,
                    Ok(_) => return Err(err(format!("rate: `{}` is not a rate", cells[2]))),
                    Err(_) => {
                        cells[2]
                            .parse::<fabricsim_topology::Bandwidth>()
                            .map_err(|e| err(format!("rate: {e}")))?
                            .0 as f64
                    }
                };
                rates.push((src, dst, rate));
            } else {
                let bytes: Bytes = cells[2]
                    .parse()
                    .map_err(|e: fabricsim_topology::UnitError| err(format!("bytes: {e}")))?;
                volumes.push((src, dst, bytes.0));
            }
        }
        let tm = if by_rate {
            TrafficMatrix::from_rates(rates)
        } else {
            TrafficMatrix::from_bytes(topo, volumes)
        };
        if tm.demands.is_empty() {
            return Err(DemandError::Empty);
        }
        Ok(tm)
    }

    /// The sum of the demands' rates.
    pub fn total_rate(&self) -> f64 {
        self.demands.iter().map(|d| d.rate).sum()
    }
}

/// The capacity (bytes/s) of a GPU's NICs' links to switches: what it can put on the fabric.
pub fn injection(topo: &Topology, gpu: NodeId) -> f64 {
    topo.out_links(gpu)
        .iter()
        .map(|&l| topo.link(l).dst)
        .filter(|&n| topo.kind(n) == NodeKind::Nic)
        .flat_map(|nic| topo.out_links(nic).iter())
        .filter(|&&l| matches!(topo.kind(topo.link(l).dst), NodeKind::Switch(_)))
        .map(|&l| topo.link(l).capacity.0 as f64)
        .sum()
}
